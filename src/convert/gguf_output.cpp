#include "convert/gguf_output.hpp"

#include <cctype>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "convert/gguf_keys.hpp"
#include "convert/mxfp4_experts.hpp"
#include "convert/split_part.hpp"
#include "families/family.hpp"
#include "model/language_model_names.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {

namespace {

// A GGUF output type: its --gguf-type name, the matrices' ggml type, the general.file_type
// (llama_ftype) that llama.cpp records for it, and what it is. The float types, then every type the
// GGUF writer quantises (gguf_quantized_types()), named in lower case.
struct GgufTarget {
  std::string name;
  GgmlType type;
  uint32_t file_type;
  std::string about;
};

const std::vector<GgufTarget>& gguf_targets() {
  static const std::vector<GgufTarget> targets = [] {
    std::vector<GgufTarget> v = {{"f32", GgmlType::F32, 0, "float32, exact"},
                                 {"f16", GgmlType::F16, 1, "float16 (IEEE half), rounded to nearest"},
                                 {"bf16", GgmlType::BF16, 32, "bfloat16, rounded to nearest"}};
    for (const GgufQuantizedType& q : gguf_quantized_types()) {
      std::string name = ggml_type_name(q.type);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      v.push_back({name, q.type, q.file_type, std::string(q.about)});
    }
    return v;
  }();
  return targets;
}

const GgufTarget& gguf_target(const std::string& name) {
  for (const GgufTarget& t : gguf_targets())
    if (name == t.name) return t;
  std::string names;
  for (const GgufTarget& t : gguf_targets()) names += (names.empty() ? "" : ", ") + t.name;
  throw Error(ErrorCode::InvalidArgument, fmt::format("gguf type '{}' is not one of {}", name, names));
}

// A part of a split source tensor: which, and how the naming scheme splits it; the checkpoint's
// MXFP4 blocks where it is written as GGUF MXFP4 from them.
struct SplitPart {
  StoredParts how;
  size_t index = 0;
  std::optional<quant::Mxfp4Stored> mxfp4{};
};

// One stored tensor and the source tensors it is written from: one, or a stack's slots in order.
struct Output {
  GgufWriteEntry entry;
  std::vector<const TensorInfo*> parts;
  float offset = 0;     // added to every value (Gemma's norms: 1 + w)
  bool copy = false;    // its source counted already (a second copy, a later part): not again in the progress
  std::optional<SplitPart> split{};  // the part of its source it holds; none: all
};

// Weight matrices and stacks take the requested type. As llama.cpp's converter stores them (and its
// graphs require: gpt-oss's expert biases go through ggml_add_id, F32 only), vectors, every tensor
// that is not a .weight (biases, sinks) and the routers (ffn_gate_inp) stay F32. A tensor of a
// block type whose rows are not whole blocks (32 elements, 256 for TQ1_0 / TQ2_0) falls back to F16,
// as the converter does when gguf-py's quantize refuses it.
GgmlType stored_type(std::string_view gguf_name, const Shape& shape, GgmlType target) {
  if (shape.size() < 2 || !gguf_name.ends_with(".weight") || gguf_name.find(".ffn_gate_inp.") != std::string_view::npos)
    return GgmlType::F32;
  return shape.back() % ggml_block_elems(target) == 0 ? target : GgmlType::F16;
}

// A tensor stored alone: named through the "gguf" scheme for the architecture, with its q/k rows
// interleaved where llama.cpp's converter permutes them (llama; the others run NEOX-style on
// Hugging Face's halves) and Gemma's norms as 1 + w.
Output single(const TensorInfo& t, GgmlType target, const GgufModel& m, const std::string& out) {
  const std::string name = from_canonical("gguf", t.name, m.arch).value_or(t.name);
  Output o{{name, t.shape, stored_type(name, t.shape, target), {}}, {&t}};
  o.offset = norm_offset("gguf", t.name, m.arch);
  const auto canonical = to_canonical("hf", t.name);
  if (interleaved_rotary("gguf", m.arch) && canonical && canonical->rotary && t.numel() > 0) {
    const std::string key = m.arch + (canonical->kv ? ".attention.head_count_kv" : ".attention.head_count");
    o.entry.row_order = rotary_row_order(t.shape[0], canonical->kv ? m.config.num_kv_heads : m.config.num_heads,
                                         RotaryOrder::HfAsInterleaved, {ErrorCode::GgufHeadCount, key, out}, t.name);
  }
  return o;
}

// A tensor stored as parts, each under its part's name, as llama.cpp's converter splits it
// (granitemoe's shared input_linear as ffn_gate_shexp, then ffn_up_shexp; gpt-oss's gate_up_proj
// as ffn_gate_exps and ffn_up_exps, transposed). MXFP4 experts stay MXFP4 where `keep_mxfp4`.
void add_split(const TensorInfo& t, const StoredParts& how, GgmlType target, bool keep_mxfp4, const GgufModel& m,
               const std::string& origin, std::vector<Output>& outputs) {
  const Shape shape = stored_part_shape(t.shape, how, origin, t.name);
  const std::optional<quant::Mxfp4Stored> mxfp4 = keep_mxfp4 ? mxfp4_part_blocks(t, how) : std::nullopt;
  for (size_t i = 0; i < how.names.size(); ++i) {
    const std::string name = from_canonical("gguf", how.names[i], m.arch).value_or(how.names[i]);
    const GgmlType type = mxfp4 ? GgmlType::MXFP4 : stored_type(name, shape, target);
    Output o{{name, shape, type, {}}, {&t}};
    o.copy = i > 0;
    o.split = SplitPart{how, i, mxfp4};
    outputs.push_back(std::move(o));
  }
}

// Writes a split part: slot by slot along dim 0 where the split allows (one expert of a stack in
// memory at a time), else from the whole source tensor.
uint64_t write_split_part(const WeightSource& s, const TensorInfo& t, const SplitPart& p, GgufStreamWriter& writer) {
  if (!splits_by_slot(t.shape, p.how)) {
    const TensorView part = stored_part(s.load(t, DType::F32), p.how, p.index);
    writer.write_part(part);
    return part.nbytes();
  }
  uint64_t written = 0;
  TensorView slot = TensorView::empty(DType::F32, Shape(t.shape.begin() + 1, t.shape.end()));
  for (uint64_t e = 0; e < t.shape[0]; ++e) {
    s.read(t, DType::F32, slot.data<float>(), Slice{0, e, e + 1});
    const TensorView part = stored_part(slot, p.how, p.index);
    writer.write_part(part);
    written += part.nbytes();
  }
  return written;
}

// Every stored tensor in the source's order; a stack where its first slot comes. lm_head is left
// out where llama.cpp ties it (Gemma; its converter skips it); a tied head gets output.weight, a
// copy of the embedding, where llama.cpp requires one (Phi-3).
std::vector<Output> plan_outputs(const WeightSource& s, const GgufModel& m, GgmlType target, bool keep_mxfp4, const std::string& out) {
  const GgufArchitecture* arch = m.configured ? &family_by_type(m.config.architecture)->gguf : nullptr;
  std::vector<Output> outputs;
  std::map<std::string, size_t> stacks;  // stored name -> index in outputs
  for (const TensorInfo& t : s.tensors()) {
    if (arch && arch->tied_head && t.name == "lm_head.weight") continue;
    if (const StoredParts parts = stored_parts("gguf", t.name, m.arch); !parts.names.empty()) {
      add_split(t, parts, target, keep_mxfp4, m, s.origin(), outputs);
      continue;
    }
    const auto slot = stack_slot("gguf", t.name, m.arch);
    if (!slot) {
      outputs.push_back(single(t, target, m, out));
      continue;
    }
    const uint64_t n = m.config.moe.num_experts;
    if (slot->slot >= n)
      throw Error(ErrorCode::InvalidArgument, fmt::format("expert {} of a model of {} experts", slot->slot, n), s.origin(), t.name);
    auto [it, added] = stacks.emplace(slot->stack, outputs.size());
    if (added) {
      Shape shape{n};
      shape.insert(shape.end(), t.shape.begin(), t.shape.end());
      outputs.push_back({{slot->stack, shape, stored_type(slot->stack, shape, target), {}}, std::vector<const TensorInfo*>(n)});
    }
    Output& stack = outputs[it->second];
    if (Shape(stack.entry.shape.begin() + 1, stack.entry.shape.end()) != t.shape)
      throw Error(ErrorCode::ShapeMismatch,
                  fmt::format("expert of shape {} in a stack of {}", shape_to_string(t.shape), shape_to_string(stack.entry.shape)),
                  s.origin(), t.name);
    stack.parts[slot->slot] = &t;
  }
  for (const auto& [name, index] : stacks)
    for (size_t e = 0; e < outputs[index].parts.size(); ++e)
      if (!outputs[index].parts[e])
        throw Error(ErrorCode::TensorNotFound, fmt::format("expert {} of the stack {} is missing", e, name), s.origin(),
                    stacked_canonical("gguf", name, e, m.arch).value_or(name));
  if (arch && arch->head_required && !s.find("lm_head.weight")) {
    const TensorInfo& embed = s.at("model.embed_tokens.weight");
    Output head = single(embed, target, m, out);
    head.entry.name = "output.weight";
    head.copy = true;
    outputs.push_back(std::move(head));
  }
  return outputs;
}

}  // namespace

std::vector<GgufOutputType> gguf_output_types() {
  std::vector<GgufOutputType> types;
  for (const GgufTarget& t : gguf_targets()) types.push_back({t.name, t.about});
  return types;
}

std::unique_ptr<WeightSource> gguf_language_model(const WeightSource& checkpoint) {
  try {
    if (llama_config_from_source(checkpoint).multimodal.empty()) return nullptr;
  } catch (const Error&) {
    return nullptr;  // no configuration the engine reads: a Llama of the tensors' shapes (gguf_model says what is wrong)
  }
  return language_model_of(checkpoint);
}

uint64_t write_gguf_output(const WeightSource& checkpoint, const std::string& out, const ConvertOptions& o, Tally& tally) {
  const LlamaHeads h = llama_heads_from_metadata(checkpoint, o.heads);
  if (!h.heads) throw Error(ErrorCode::InvalidArgument, "the number of attention heads is unknown: pass --heads", checkpoint.origin());
  const GgufTarget& target = gguf_target(o.gguf_type.empty() ? "f16" : o.gguf_type);
  const bool keep_mxfp4 = o.gguf_keep_mxfp4.value_or(o.gguf_type.empty() || o.gguf_type == "mxfp4");
  const GgufModel m = gguf_model(checkpoint, h);
  const std::unique_ptr<WeightSource> language_model = gguf_language_model(checkpoint);
  const WeightSource& s = language_model ? *language_model : checkpoint;
  const std::vector<Output> outputs = plan_outputs(s, m, target.type, keep_mxfp4, out);
  std::vector<GgufWriteEntry> entries;
  bool kept_mxfp4 = false;
  for (const Output& x : outputs) {
    entries.push_back(x.entry);
    kept_mxfp4 |= x.split && x.split->mxfp4;
  }
  // llama.cpp's converter records MOSTLY_MXFP4_MOE for a float output whose experts stayed MXFP4.
  const bool float_target = target.type == GgmlType::F32 || target.type == GgmlType::F16 || target.type == GgmlType::BF16;
  const uint32_t file_type = kept_mxfp4 && float_target ? gguf_target("mxfp4").file_type : target.file_type;
  const GgufMetadata meta = gguf_model_metadata(m, s, file_type, o.tokenizer);
  GgufStreamWriter writer(out, std::move(entries), meta);
  uint64_t written = 0;
  for (const Output& x : outputs)
    for (const TensorInfo* part : x.parts) {  // a stack: one expert in memory at a time
      if (x.split) {
        written += x.split->mxfp4 ? write_mxfp4_part(s, *x.split->mxfp4, x.split->how, x.split->index, writer)
                                  : write_split_part(s, *part, *x.split, writer);
        if (!x.copy) tally.add(*part);
        continue;
      }
      TensorView v = s.load(*part, DType::F32);
      if (x.offset != 0)
        for (float* p = v.data<float>(), *end = p + v.numel(); p != end; ++p) *p += x.offset;
      writer.write_part(v);
      written += v.nbytes();
      if (!x.copy) tally.add(*part);
    }
  writer.finish();
  return written;
}

}  // namespace wl
