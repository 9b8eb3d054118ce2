#include "model/tokenizer/hf_tokenizer_json.hpp"

#include <optional>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "weightloader/error.hpp"

namespace wl::tok {

namespace {

using json = nlohmann::json;

// Field access that names the file and the field in every error.
class Fields {
 public:
  explicit Fields(const std::string& origin) : origin_(origin) {}

  [[noreturn]] void invalid(std::string_view field, std::string_view why) const {
    throw Error(ErrorCode::TokenizerInvalid, fmt::format("{} {}", field, why), origin_);
  }
  [[noreturn]] void unsupported(std::string_view field, std::string_view why) const {
    throw Error(ErrorCode::TokenizerUnsupported, fmt::format("{} {}", field, why), origin_);
  }

  // obj[key], which must be there (null counts as there).
  const json& at(const json& obj, const std::string& key, std::string_view field) const {
    if (!obj.is_object() || !obj.contains(key)) invalid(field, "is missing");
    return obj[key];
  }
  const json* find(const json& obj, const std::string& key) const {
    return obj.is_object() && obj.contains(key) && !obj[key].is_null() ? &obj[key] : nullptr;
  }
  std::string string(const json& v, std::string_view field) const {
    if (!v.is_string()) invalid(field, fmt::format("is {}, not a string", v.type_name()));
    return v.get<std::string>();
  }
  // obj[key] as a bool; `absent` when missing or null.
  bool flag(const json& obj, const std::string& key, std::string_view field, bool absent) const {
    const json* v = find(obj, key);
    if (!v) return absent;
    if (!v->is_boolean()) invalid(fmt::format("{}.{}", field, key), fmt::format("is {}, not a boolean", v->type_name()));
    return v->get<bool>();
  }
  int32_t id(const json& v, std::string_view field) const {
    if (!v.is_number_unsigned() || v.get<uint64_t>() > INT32_MAX) invalid(field, fmt::format("is {}, not a token id", v.dump()));
    return static_cast<int32_t>(v.get<uint64_t>());
  }
  std::string type(const json& obj, std::string_view field) const {
    return string(at(obj, "type", fmt::format("{}.type", field)), fmt::format("{}.type", field));
  }
  const json& array(const json& obj, const std::string& key, std::string_view field) const {
    const json& a = at(obj, key, fmt::format("{}.{}", field, key));
    if (!a.is_array()) invalid(fmt::format("{}.{}", field, key), fmt::format("is {}, not an array", a.type_name()));
    return a;
  }

 private:
  const std::string& origin_;
};

using PieceIds = std::unordered_map<std::string, int32_t>;

// model.vocab into the vocabulary's pieces; the text -> id map the merges are read with.
PieceIds read_vocab(const Fields& in, const json& model, ByteLevelBpeVocab& v) {
  const json& vocab = in.at(model, "vocab", "model.vocab");
  if (!vocab.is_object()) in.invalid("model.vocab", fmt::format("is {}, not an object of token ids", vocab.type_name()));
  PieceIds ids;
  for (const auto& [piece, value] : vocab.items()) {
    const int32_t id = in.id(value, fmt::format("model.vocab['{}']", piece));
    if (static_cast<size_t>(id) >= v.pieces.size()) v.pieces.resize(id + 1), v.present.resize(id + 1), v.in_model.resize(id + 1);
    if (v.present[id]) in.invalid(fmt::format("model.vocab['{}']", piece), fmt::format("is {}, the id of '{}' too", id, v.pieces[id]));
    v.pieces[id] = piece, v.present[id] = true, v.in_model[id] = true;
    ids.emplace(piece, id);
  }
  return ids;
}

// model.merges, "left right" or ["left", "right"] (tokenizers writes both), in rank order.
std::vector<RankedMerge> read_merges(const Fields& in, const json& model, const PieceIds& ids) {
  std::vector<RankedMerge> merges;
  const json& list = in.array(model, "merges", "model");
  merges.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = fmt::format("model.merges[{}]", i);
    std::string left, right;
    if (list[i].is_string()) {
      const std::string line = list[i].get<std::string>();
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
        in.invalid(field, fmt::format("'{}' is not two pieces separated by one space", line));
      left = line.substr(0, space), right = line.substr(space + 1);
    } else if (list[i].is_array() && list[i].size() == 2) {
      left = in.string(list[i][0], field + "[0]"), right = in.string(list[i][1], field + "[1]");
    } else {
      in.invalid(field, "is neither \"left right\" nor [left, right]");
    }
    auto id_of = [&](const std::string& piece) {
      auto it = ids.find(piece);
      if (it == ids.end()) in.invalid(field, fmt::format("names '{}', which is not in model.vocab", piece));
      return it->second;
    };
    merges.push_back({id_of(left), id_of(right), id_of(left + right)});
  }
  return merges;
}

void read_model(const Fields& in, const json& root, ByteLevelBpeVocab& v) {
  const json& model = in.at(root, "model", "model");
  if (const std::string type = in.type(model, "model"); type != "BPE")
    in.unsupported("model.type", fmt::format("is '{}'; only BPE models are supported", type));
  const PieceIds ids = read_vocab(in, model, v);
  v.merges = read_merges(in, model, ids);
  if (const json* d = in.find(model, "dropout"); d && !(d->is_number() && d->get<double>() == 0))
    in.unsupported("model.dropout", fmt::format("is {}: merges dropped at random give no fixed ids", d->dump()));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const json* s = in.find(model, key); s && !(s->is_string() && s->get<std::string>().empty()))
      in.unsupported(fmt::format("model.{}", key), fmt::format("is {}; byte-level BPE has none", s->dump()));
  if (const json* unk = in.find(model, "unk_token")) {
    auto it = ids.find(in.string(*unk, "model.unk_token"));
    if (it == ids.end()) in.invalid("model.unk_token", fmt::format("'{}' is not in model.vocab", unk->get<std::string>()));
    v.unk = it->second;
  }
  v.fuse_unk = in.flag(model, "fuse_unk", "model", false);
  v.byte_fallback = in.flag(model, "byte_fallback", "model", false);
  v.ignore_merges = in.flag(model, "ignore_merges", "model", false);
}

void read_added_tokens(const Fields& in, const json& root, ByteLevelBpeVocab& v) {
  const json* list = in.find(root, "added_tokens");
  if (!list) return;
  if (!list->is_array()) in.invalid("added_tokens", "is not an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string field = fmt::format("added_tokens[{}]", i);
    const json& t = (*list)[i];
    AddedToken a;
    a.id = in.id(in.at(t, "id", field + ".id"), field + ".id");
    a.content = in.string(in.at(t, "content", field + ".content"), field + ".content");
    a.special = in.flag(t, "special", field, false);
    a.normalized = in.flag(t, "normalized", field, !a.special);  // tokenizers' default
    for (const char* key : {"single_word", "lstrip", "rstrip"})
      if (in.flag(t, key, field, false))
        in.unsupported(fmt::format("{}.{}", field, key), fmt::format("is true (for '{}'); only exact matches are supported", a.content));
    const size_t id = static_cast<size_t>(a.id);
    if (id >= v.pieces.size()) v.pieces.resize(id + 1), v.present.resize(id + 1), v.in_model.resize(id + 1);
    if (v.present[id] && v.pieces[id] != a.content)
      in.unsupported(field, fmt::format("gives id {} to '{}', which model.vocab gives to '{}'", id, a.content, v.pieces[id]));
    v.pieces[id] = a.content, v.present[id] = true;
    v.added.push_back(std::move(a));
  }
}

void read_byte_level(const Fields& in, const json& p, std::string_view field, PreTokenization& pre) {
  pre.add_prefix_space = in.flag(p, "add_prefix_space", field, true);  // tokenizers' defaults
  pre.byte_level_regex = in.flag(p, "use_regex", field, true);
}

// A Split or Punctuation step's "behavior" (tokenizers' default: Isolated).
SplitBehavior read_behavior(const Fields& in, const json& p, const std::string& field) {
  const json* b = in.find(p, "behavior");
  const std::string name = b ? in.string(*b, field + ".behavior") : "Isolated";
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  in.unsupported(field + ".behavior", fmt::format("is '{}'; only 'Isolated' and 'Contiguous' are supported", name));
}

SplitStep read_split(const Fields& in, const json& p, const std::string& field) {
  const SplitBehavior behavior = read_behavior(in, p, field);
  if (in.flag(p, "invert", field, false)) in.unsupported(field + ".invert", "is true; only false is supported");
  const json& pattern = in.at(p, "pattern", field + ".pattern");
  if (const json* r = in.find(pattern, "Regex")) return {in.string(*r, field + ".pattern.Regex"), behavior};
  if (const json* s = in.find(pattern, "String")) {
    const std::string literal = in.string(*s, field + ".pattern.String");
    if (literal.find("\\E") != std::string::npos) in.unsupported(field + ".pattern.String", "holds \\E");
    return {"\\Q" + literal + "\\E", behavior};  // the string itself, quoted for the regex engine
  }
  in.invalid(field + ".pattern", "is neither {\"Regex\": ...} nor {\"String\": ...}");
}

// A step that cuts words: Split, or Digits and Punctuation as the Split steps they are.
std::optional<SplitStep> read_cutting_step(const Fields& in, const json& p, const std::string& type, const std::string& field) {
  if (type == "Split") return read_split(in, p, field);
  if (type == "Digits")
    return SplitStep{std::string(kDigitRegex), in.flag(p, "individual_digits", field, false) ? SplitBehavior::Isolated : SplitBehavior::Contiguous};
  if (type == "Punctuation") return SplitStep{std::string(kPunctuationRegex), read_behavior(in, p, field)};
  return std::nullopt;
}

PreTokenization read_pre_tokenizer(const Fields& in, const json& root) {
  const json* p = in.find(root, "pre_tokenizer");
  if (!p) in.unsupported("pre_tokenizer", "is null; a byte-level BPE needs ByteLevel");
  PreTokenization pre;
  const std::string type = in.type(*p, "pre_tokenizer");
  if (type == "ByteLevel") {
    read_byte_level(in, *p, "pre_tokenizer", pre);
    return pre;
  }
  if (type != "Sequence")
    in.unsupported("pre_tokenizer.type", fmt::format("is '{}'; only ByteLevel or a Sequence with one ByteLevel", type));
  const json& steps = in.array(*p, "pretokenizers", "pre_tokenizer");
  bool byte_level = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string field = fmt::format("pre_tokenizer.pretokenizers[{}]", i);
    const std::string step = in.type(steps[i], field);
    if (step == "ByteLevel" && !byte_level) {
      read_byte_level(in, steps[i], field, pre);
      byte_level = true;
    } else if (std::optional<SplitStep> s = read_cutting_step(in, steps[i], step, field)) {
      (byte_level ? pre.after_byte_level : pre.splits).push_back(std::move(*s));
    } else {
      in.unsupported(field + ".type", fmt::format("is '{}'; only Split, Digits, Punctuation and one ByteLevel are supported", step));
    }
  }
  if (!byte_level) in.unsupported("pre_tokenizer.pretokenizers", "has no ByteLevel step; a byte-level BPE needs one");
  return pre;
}

// TemplateProcessing's "single" template: the special tokens before and after $A.
void read_template(const Fields& in, const json& p, const std::string& field, ByteLevelBpeVocab& v) {
  const json& single = in.array(p, "single", field);
  const json& specials = in.at(p, "special_tokens", field + ".special_tokens");
  bool seen_a = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string item = fmt::format("{}.single[{}]", field, i);
    if (const json* seq = in.find(single[i], "Sequence")) {
      if (const std::string id = in.string(in.at(*seq, "id", item + ".Sequence.id"), item + ".Sequence.id"); id != "A" || seen_a)
        in.unsupported(item, "is a second sequence; only one text ($A) is encoded");
      seen_a = true;
      continue;
    }
    const json& tok = in.at(single[i], "SpecialToken", item + ".SpecialToken");
    const std::string name = in.string(in.at(tok, "id", item + ".SpecialToken.id"), item + ".SpecialToken.id");
    const json& ids = in.array(in.at(specials, name, fmt::format("{}.special_tokens['{}']", field, name)), "ids",
                               fmt::format("{}.special_tokens['{}']", field, name));
    for (const json& id : ids) {
      const int32_t t = in.id(id, fmt::format("{}.special_tokens['{}'].ids", field, name));
      if (static_cast<size_t>(t) >= v.pieces.size() || !v.present[t]) in.invalid(item, fmt::format("adds id {}, which is no token", t));
      (seen_a ? v.suffix : v.prefix).push_back(t);
    }
  }
  if (!seen_a) in.invalid(field + ".single", "has no $A");
}

void read_post_processor(const Fields& in, const json& p, const std::string& field, ByteLevelBpeVocab& v) {
  const std::string type = in.type(p, field);
  if (type == "ByteLevel") return;  // offsets only
  if (type == "TemplateProcessing") return read_template(in, p, field, v);
  if (type == "Sequence") {
    const json& list = in.array(p, "processors", field);
    for (size_t i = 0; i < list.size(); ++i) read_post_processor(in, list[i], fmt::format("{}.processors[{}]", field, i), v);
    return;
  }
  in.unsupported(field + ".type", fmt::format("is '{}'; only ByteLevel, TemplateProcessing or a Sequence of them", type));
}

void read_decoder(const Fields& in, const json& root) {
  const json* d = in.find(root, "decoder");
  if (!d) in.unsupported("decoder", "is null; a byte-level BPE decodes with ByteLevel");
  const std::string type = in.type(*d, "decoder");
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const json& list = in.array(*d, "decoders", "decoder");
    for (size_t i = 0; i < list.size(); ++i)
      if (const std::string t = in.type(list[i], fmt::format("decoder.decoders[{}]", i)); t != "ByteLevel")
        in.unsupported(fmt::format("decoder.decoders[{}].type", i), fmt::format("is '{}'; only ByteLevel is supported", t));
    return;
  }
  in.unsupported("decoder.type", fmt::format("is '{}'; only ByteLevel is supported", type));
}

// NFC, nothing, or a Sequence of those (DeepSeek's files write an empty one).
void read_normalizer(const Fields& in, const json& n, const std::string& field, ByteLevelBpeVocab& v) {
  const std::string type = in.type(n, field);
  if (type == "NFC") {
    v.nfc = true;
  } else if (type == "Sequence") {
    const json& list = in.array(n, "normalizers", field);
    for (size_t i = 0; i < list.size(); ++i) read_normalizer(in, list[i], fmt::format("{}.normalizers[{}]", field, i), v);
  } else {
    in.unsupported(field + ".type", fmt::format("is '{}'; only NFC, none or a Sequence of them is supported", type));
  }
}

}  // namespace

ByteLevelBpeVocab parse_tokenizer_json(std::string_view text, const std::string& origin) {
  const Fields in(origin);
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // a syntax error, or a number out of range (406)
    in.invalid("the file", fmt::format("is not JSON: {}", e.what()));
  }
  if (!root.is_object()) in.invalid("the file", "is not a JSON object");
  for (const char* key : {"truncation", "padding"})
    if (const json* t = in.find(root, key)) in.unsupported(key, fmt::format("is {}; only null is supported", t->dump()));
  ByteLevelBpeVocab v;
  read_model(in, root, v);
  read_added_tokens(in, root, v);
  if (const json* n = in.find(root, "normalizer")) read_normalizer(in, *n, "normalizer", v);
  v.pre = read_pre_tokenizer(in, root);
  if (const json* p = in.find(root, "post_processor")) read_post_processor(in, *p, "post_processor", v);
  read_decoder(in, root);
  if (!v.prefix.empty()) v.bos = v.prefix.front();
  if (!v.suffix.empty()) v.eos = v.suffix.back();
  return v;
}

}  // namespace wl::tok
