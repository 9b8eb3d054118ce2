// The naming schemes as data: per scheme, its names for the canonical (Hugging Face) stems. One
// table per scheme: GGUF's names are the "gguf" scheme's and nowhere else, with what each of
// llama.cpp's architectures names differently, stacks as experts, and stores otherwise.
#include "weightloader/name_schemes.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/layer_name.hpp"
#include "families/family.hpp"

namespace wl {

namespace {

// A canonical stem (a name without its last component, .weight / .bias) and the scheme's.
// `whole`: both are whole layer names, last component included (GgufArchitecture::Stem).
struct Stem {
  std::string_view canonical;
  std::string_view scheme;
  bool whole = false;
};

// A canonical tensor that the scheme keeps as one slot of a stack along dim 0: GGUF's
// blk.N.ffn_gate_exps holds every expert's w1 of layer N, expert e in slot e. The whole stack's
// canonical stem is <prefix><leaf>.
struct StackStem {
  std::string_view canonical_prefix;  // the layer stem before the slot number
  std::string_view canonical_leaf;    // the layer stem after it
  std::string_view scheme;            // the stack's layer stem
  bool bias = false;                  // the slots' biases stacked too (<scheme>.bias)
};

// What one architecture of a scheme names or stores differently from the scheme's table (GGUF's
// general.architecture: llama.cpp's names per architecture, as the families give them).
struct Architecture {
  std::string_view name;
  std::vector<Stem> layer_stems;  // replace the scheme's layer stems sharing either side with one
  bool interleaved_rotary;        // q/k rows stored interleaved (llama.cpp's converter permutes them)
  float norm_offset;              // norms' scales stored as offset + w
  std::vector<StackStem> stacks;
  std::vector<GgufArchitecture::Split> splits;  // canonical tensors stored as parts
};

struct Scheme {
  std::string_view name;
  std::vector<Stem> model_stems;  // whole-model tensors
  std::string_view layer_prefix;  // then the layer number, a dot, and a layer stem
  std::vector<Stem> layer_stems;
  std::string_view norm_suffix;   // the last component of a norm's scale ("weight"; torchtune: "scale")
  bool interleaved_rotary;        // q/k rows in Meta's interleaved layout, not Hugging Face's halves
  std::vector<std::string_view> drops;  // tensors no model takes (full names, or layer stems after the number)
  std::vector<Architecture> architectures;  // empty: one for all; else only these are named
};

// Canonical stems of norms: their last component is the scheme's norm_suffix.
constexpr std::array<std::string_view, 7> kNorms{"model.norm", "input_layernorm", "post_attention_layernorm",
                                                 "pre_feedforward_layernorm", "post_feedforward_layernorm",
                                                 "self_attn.q_norm", "self_attn.k_norm"};

// llama.cpp's architectures as the families describe them (src/families/): families sharing one
// (Llama, Mistral, Mixtral) add up their names and stacks.
std::vector<Architecture> gguf_architectures() {
  std::vector<Architecture> out;
  for (const Family* f : families()) {
    const GgufArchitecture& g = f->gguf;
    if (g.name.empty()) continue;
    auto a = std::find_if(out.begin(), out.end(), [&](const Architecture& x) { return x.name == g.name; });
    if (a == out.end()) a = out.insert(out.end(), Architecture{g.name, {}, g.interleaved_rotary, g.norm_offset, {}, {}});
    for (const GgufArchitecture::Stem& st : g.layer_stems)
      if (std::none_of(a->layer_stems.begin(), a->layer_stems.end(), [&](const Stem& s) { return s.canonical == st.canonical; }))
        a->layer_stems.push_back({st.canonical, st.gguf, st.whole});
    for (const GgufArchitecture::Stack& st : g.stacks)
      if (std::none_of(a->stacks.begin(), a->stacks.end(), [&](const StackStem& s) { return s.scheme == st.gguf; }))
        a->stacks.push_back({st.canonical_prefix, st.canonical_leaf, st.gguf, st.bias});
    for (const GgufArchitecture::Split& sp : g.splits)
      if (std::none_of(a->splits.begin(), a->splits.end(), [&](const GgufArchitecture::Split& s) { return s.canonical == sp.canonical; }))
        a->splits.push_back(sp);
  }
  return out;
}

const std::vector<Scheme>& schemes() {
  static const std::vector<Scheme> all{
      {"hf",
       {{"model.embed_tokens", "model.embed_tokens"}, {"model.norm", "model.norm"}, {"lm_head", "lm_head"}},
       "model.layers.",
       {{"input_layernorm", "input_layernorm"},
        {"self_attn.q_proj", "self_attn.q_proj"},
        {"self_attn.k_proj", "self_attn.k_proj"},
        {"self_attn.v_proj", "self_attn.v_proj"},
        {"self_attn.o_proj", "self_attn.o_proj"},
        {"post_attention_layernorm", "post_attention_layernorm"},
        {"mlp.gate_proj", "mlp.gate_proj"},
        {"mlp.up_proj", "mlp.up_proj"},
        {"mlp.down_proj", "mlp.down_proj"},
        {"self_attn.qkv_proj", "self_attn.qkv_proj"},
        {"mlp.gate_up_proj", "mlp.gate_up_proj"},
        // Gemma 2's norms around the MLP (its post_attention_layernorm normalises the attention's output).
        {"pre_feedforward_layernorm", "pre_feedforward_layernorm"},
        {"post_feedforward_layernorm", "post_feedforward_layernorm"}},
       "weight",
       false,
       {"self_attn.rotary_emb.inv_freq"},
       {}},
      // Meta's consolidated.*.pth, and llama2.c's model.py (its train.py checkpoints, often under _orig_mod.).
      {"meta",
       {{"model.embed_tokens", "tok_embeddings"}, {"model.norm", "norm"}, {"lm_head", "output"}},
       "layers.",
       {{"input_layernorm", "attention_norm"},
        {"self_attn.q_proj", "attention.wq"},
        {"self_attn.k_proj", "attention.wk"},
        {"self_attn.v_proj", "attention.wv"},
        {"self_attn.o_proj", "attention.wo"},
        {"post_attention_layernorm", "ffn_norm"},
        {"mlp.gate_proj", "feed_forward.w1"},
        {"mlp.up_proj", "feed_forward.w3"},
        {"mlp.down_proj", "feed_forward.w2"}},
       "weight",
       true,
       {"rope.freqs", "freqs_cis"},
       {}},
      {"torchtune",
       {{"model.embed_tokens", "tok_embeddings"}, {"model.norm", "norm"}, {"lm_head", "output"}},
       "layers.",
       {{"input_layernorm", "sa_norm"},
        {"self_attn.q_proj", "attn.q_proj"},
        {"self_attn.k_proj", "attn.k_proj"},
        {"self_attn.v_proj", "attn.v_proj"},
        {"self_attn.o_proj", "attn.output_proj"},
        {"post_attention_layernorm", "mlp_norm"},
        {"mlp.gate_proj", "mlp.w1"},
        {"mlp.up_proj", "mlp.w3"},
        {"mlp.down_proj", "mlp.w2"}},
       "scale",
       true,
       {},
       {}},
      // GGUF's stored names (llama.cpp's gguf-py tensor_mapping.py); what each architecture names
      // differently comes from its families. The "gguf" format entry presents a GGUF's tensors through
      // this scheme (src/loaders/gguf_hf_names.cpp), so loaders see Hugging Face names already.
      {"gguf",
       {{"model.embed_tokens", "token_embd"}, {"model.norm", "output_norm"}, {"lm_head", "output"}},
       "blk.",
       {{"input_layernorm", "attn_norm"},
        {"self_attn.q_proj", "attn_q"},
        {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"},
        {"self_attn.o_proj", "attn_output"},
        {"post_attention_layernorm", "ffn_norm"},
        {"mlp.gate_proj", "ffn_gate"},
        {"mlp.up_proj", "ffn_up"},
        {"mlp.down_proj", "ffn_down"},
        {"block_sparse_moe.gate", "ffn_gate_inp"}},
       "weight",
       true,
       {"rope_freqs.weight"},
       gguf_architectures()},
  };
  return all;
}

const Scheme* find_scheme(std::string_view name) {
  for (const Scheme& s : schemes())
    if (s.name == name) return &s;
  return nullptr;
}

bool is_norm(std::string_view canonical_stem) {
  return std::find(kNorms.begin(), kNorms.end(), canonical_stem) != kNorms.end();
}

// The architecture's entry; null when the scheme has none by that name (or none at all).
const Architecture* find_architecture(const Scheme& s, std::string_view architecture) {
  for (const Architecture& a : s.architectures)
    if (a.name == architecture) return &a;
  return nullptr;
}

// A scheme as one architecture names it: its layer stems with the architecture's replacements.
// nullopt for an architecture the scheme does not know, when it knows some.
struct Named {
  const Scheme& scheme;
  const Architecture* architecture;  // null: the scheme has none
  std::vector<Stem> layer_stems;
};

std::optional<Named> named(std::string_view scheme, std::string_view architecture) {
  const Scheme* s = find_scheme(scheme);
  if (!s) return std::nullopt;
  if (s->architectures.empty()) return Named{*s, nullptr, s->layer_stems};
  const Architecture* a = find_architecture(*s, architecture);
  if (!a) return std::nullopt;
  Named n{*s, a, a->layer_stems};
  for (const Stem& base : s->layer_stems)
    if (std::none_of(a->layer_stems.begin(), a->layer_stems.end(), [&](const Stem& r) {
          return r.canonical == base.canonical || r.scheme == base.scheme;
        }))
      n.layer_stems.push_back(base);
  return n;
}

// Translates "stem.suffix" through `stems` (from → to), the norm suffix changing with it; a whole
// name first, before its stem could match.
std::optional<std::string> translate(std::string_view leaf, const std::vector<Stem>& stems, bool to_canonical,
                                     std::string_view norm_suffix) {
  for (const Stem& s : stems)
    if (s.whole && leaf == (to_canonical ? s.scheme : s.canonical)) return std::string(to_canonical ? s.canonical : s.scheme);
  const size_t dot = leaf.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view stem = leaf.substr(0, dot), suffix = leaf.substr(dot + 1);
  for (const Stem& s : stems) {
    if (s.whole || stem != (to_canonical ? s.scheme : s.canonical)) continue;
    std::string_view out_suffix = suffix;
    if (is_norm(s.canonical)) {
      if (suffix != (to_canonical ? norm_suffix : std::string_view("weight"))) return std::nullopt;
      out_suffix = to_canonical ? "weight" : norm_suffix;
    }
    return fmt::format("{}.{}", to_canonical ? s.canonical : s.scheme, out_suffix);
  }
  return std::nullopt;
}

// The slot's suffix a stack keeps: "weight", and "bias" where its biases are stacked too.
bool stacked_suffix(const StackStem& st, std::string_view suffix) { return suffix == "weight" || (st.bias && suffix == "bias"); }

// A whole stack's canonical "stem.suffix" (mlp.experts.gate_proj.weight: every expert's gate_proj,
// as a split stores its parts) as the scheme names the stack (ffn_gate_exps.weight). Only this way:
// read back, a stack is presented one tensor per expert (stacked_canonical), never whole.
std::optional<std::string> stack_name(std::string_view leaf, const std::vector<StackStem>& stacks) {
  const size_t dot = leaf.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view stem = leaf.substr(0, dot), suffix = leaf.substr(dot + 1);
  for (const StackStem& st : stacks)
    if (stem.starts_with(st.canonical_prefix) && stem.substr(st.canonical_prefix.size()) == st.canonical_leaf && stacked_suffix(st, suffix))
      return fmt::format("{}.{}", st.scheme, suffix);
  return std::nullopt;
}

std::optional<std::string> convert(const Named& n, std::string_view name, bool to_canonical) {
  const Scheme& s = n.scheme;
  if (auto whole = translate(name, s.model_stems, to_canonical, s.norm_suffix)) return whole;
  const std::string_view from_prefix = to_canonical ? s.layer_prefix : "model.layers.";
  const std::string_view to_prefix = to_canonical ? "model.layers." : s.layer_prefix;
  const auto layer = split_layer_name(name, from_prefix);
  if (!layer) return std::nullopt;
  auto leaf = translate(layer->second, n.layer_stems, to_canonical, s.norm_suffix);
  if (!leaf && !to_canonical && n.architecture) leaf = stack_name(layer->second, n.architecture->stacks);
  if (!leaf) return std::nullopt;
  return fmt::format("{}{}.{}", to_prefix, layer->first, *leaf);
}

// The wrapper prefixes that `name` starts with: "", then one more wrapper at a time.
std::vector<std::string> prefixes_of(std::string_view name) {
  std::vector<std::string> out{""};
  for (bool peeled = true; peeled;) {
    peeled = false;
    for (const std::string& w : wrapper_prefixes())
      if (name.substr(out.back().size()).starts_with(w)) {
        out.push_back(out.back() + w);
        peeled = true;
        break;
      }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& name_scheme_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Scheme& s : schemes()) out.emplace_back(s.name);
    return out;
  }();
  return names;
}

const std::vector<std::string>& wrapper_prefixes() {
  // language_model.: a multimodal model's language model, as transformers saves Gemma 3, Llama 4 and
  // Mistral 3 (language_model.model.layers..., language_model.lm_head).
  static const std::vector<std::string> prefixes{"module.", "_orig_mod.", "model.", "transformer.", "language_model."};
  return prefixes;
}

std::optional<CanonicalName> to_canonical(std::string_view scheme, std::string_view name, std::string_view architecture) {
  const auto n = named(scheme, architecture);
  if (!n) return std::nullopt;
  auto canonical = convert(*n, name, true);
  if (!canonical) return std::nullopt;
  const bool q = canonical->find(".self_attn.q_proj.") != std::string::npos;
  const bool k = canonical->find(".self_attn.k_proj.") != std::string::npos;
  return CanonicalName{std::move(*canonical), q || k, k};
}

std::optional<std::string> from_canonical(std::string_view scheme, std::string_view canonical,
                                          std::string_view architecture) {
  const auto n = named(scheme, architecture);
  return n ? convert(*n, canonical, false) : std::nullopt;
}

bool interleaved_rotary(std::string_view scheme, std::string_view architecture) {
  const auto n = named(scheme, architecture);
  if (!n) return false;
  return n->architecture ? n->architecture->interleaved_rotary : n->scheme.interleaved_rotary;
}

float norm_offset(std::string_view scheme, std::string_view canonical, std::string_view architecture) {
  const auto n = named(scheme, architecture);
  if (!n || !n->architecture) return 0;
  const size_t dot = canonical.rfind('.');
  if (dot == std::string_view::npos || canonical.substr(dot + 1) != "weight") return 0;
  std::string_view stem = canonical.substr(0, dot);
  if (const auto layer = split_layer_name(canonical, "model.layers.")) stem = layer->second.substr(0, layer->second.rfind('.'));
  return is_norm(stem) ? n->architecture->norm_offset : 0;
}

std::optional<StackSlot> stack_slot(std::string_view scheme, std::string_view canonical, std::string_view architecture) {
  const auto n = named(scheme, architecture);
  const auto layer = split_layer_name(canonical, "model.layers.");
  if (!n || !n->architecture || !layer) return std::nullopt;
  for (const StackStem& st : n->architecture->stacks) {
    const auto slot = split_layer_name(layer->second, st.canonical_prefix);  // "<prefix><e>.<leaf>.<suffix>"
    if (!slot || !slot->second.starts_with(st.canonical_leaf) || slot->second.substr(st.canonical_leaf.size(), 1) != ".") continue;
    const std::string_view suffix = slot->second.substr(st.canonical_leaf.size() + 1);
    if (!stacked_suffix(st, suffix)) continue;
    uint64_t e = 0;
    std::from_chars(slot->first.data(), slot->first.data() + slot->first.size(), e);
    return StackSlot{fmt::format("{}{}.{}.{}", n->scheme.layer_prefix, layer->first, st.scheme, suffix), e};
  }
  return std::nullopt;
}

std::optional<std::string> stacked_canonical(std::string_view scheme, std::string_view stack, uint64_t slot,
                                             std::string_view architecture) {
  const auto n = named(scheme, architecture);
  if (!n || !n->architecture) return std::nullopt;
  const auto layer = split_layer_name(stack, n->scheme.layer_prefix);
  if (!layer) return std::nullopt;
  const size_t dot = layer->second.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view suffix = layer->second.substr(dot + 1);
  for (const StackStem& st : n->architecture->stacks)
    if (layer->second.substr(0, dot) == st.scheme && stacked_suffix(st, suffix))
      return fmt::format("model.layers.{}.{}{}.{}.{}", layer->first, st.canonical_prefix, slot, st.canonical_leaf, suffix);
  return std::nullopt;
}

StoredParts stored_parts(std::string_view scheme, std::string_view canonical, std::string_view architecture) {
  const auto n = named(scheme, architecture);
  const auto layer = split_layer_name(canonical, "model.layers.");
  if (!n || !n->architecture || !layer) return {};
  const size_t dot = layer->second.rfind('.');
  for (const GgufArchitecture::Split& sp : n->architecture->splits) {
    // A whole name matches itself; a stem any suffix (.weight, .bias), which its parts keep.
    const std::string_view suffix = sp.whole || dot == std::string_view::npos ? "" : layer->second.substr(dot);
    if (sp.whole ? layer->second != sp.canonical : dot == std::string_view::npos || layer->second.substr(0, dot) != sp.canonical) continue;
    StoredParts out{{}, sp.columns, sp.interleaved, sp.transposed};
    for (std::string_view part : sp.parts)
      if (!part.empty()) out.names.push_back(fmt::format("model.layers.{}.{}{}", layer->first, part, suffix));
    return out;
  }
  return {};
}

bool scheme_drops(std::string_view scheme, std::string_view name) {
  const Scheme* s = find_scheme(scheme);
  if (!s) return false;
  const auto layer = split_layer_name(name, s->layer_prefix);
  for (std::string_view d : s->drops)
    if (name == d || (layer && layer->second == d)) return true;
  return false;
}

const std::map<std::string, std::vector<std::string>, std::less<>>& vllm_fused_stems() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> fused{
      {"self_attn.qkv_proj", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}},
      {"mlp.gate_up_proj", {"mlp.gate_proj", "mlp.up_proj"}},
  };
  return fused;
}

std::vector<std::string> fused_parts(std::string_view canonical) {
  const auto layer = split_layer_name(canonical, "model.layers.");
  if (!layer) return {};
  const size_t dot = layer->second.rfind('.');
  if (dot == std::string_view::npos) return {};
  const auto it = vllm_fused_stems().find(layer->second.substr(0, dot));
  if (it == vllm_fused_stems().end()) return {};
  std::vector<std::string> out;
  for (const std::string& part : it->second)
    out.push_back(fmt::format("model.layers.{}.{}{}", layer->first, part, layer->second.substr(dot)));
  return out;
}

std::string DetectedScheme::to_string() const {
  if (scheme.empty()) return fmt::format("unknown (none of {} matches any of {} names)", fmt::join(name_scheme_names(), ", "), total);
  std::string out = scheme;
  if (!prefix.empty()) out += fmt::format(" (prefix {})", prefix);
  if (matched < total) out += fmt::format(", {} of {} names", matched, total);
  return out;
}

std::vector<DetectedScheme> rank_name_schemes(const std::vector<std::string>& names) {
  std::set<std::string> prefixes;
  for (const std::string& n : names)
    for (std::string& p : prefixes_of(n)) prefixes.insert(std::move(p));
  std::vector<DetectedScheme> out;
  for (const Scheme& s : schemes()) {
    const Named llama = *named(s.name, "llama");  // module and checkpoint names: the Llama names of each scheme
    DetectedScheme best{std::string(s.name), "", 0, names.size()};
    for (const std::string& p : prefixes) {  // sorted: a shorter prefix before its extensions wins ties
      size_t matched = 0;
      for (const std::string& n : names) {
        if (!n.starts_with(p)) continue;
        const std::string_view rest = std::string_view(n).substr(p.size());
        if (convert(llama, rest, true) || scheme_drops(s.name, rest)) ++matched;
      }
      if (matched > best.matched) {
        best.prefix = p;
        best.matched = matched;
      }
    }
    out.push_back(std::move(best));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.matched > b.matched; });
  return out;
}

DetectedScheme detect_name_scheme(const std::vector<std::string>& names) {
  DetectedScheme best = rank_name_schemes(names).front();
  if (best.matched == 0) return DetectedScheme{"", "", 0, names.size()};
  return best;
}

}  // namespace wl
