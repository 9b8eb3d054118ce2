#include "convert/gguf_keys.hpp"

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "convert/model_fields.hpp"
#include "convert/source_shapes.hpp"
#include "families/family.hpp"
#include "model/gguf_config.hpp"
#include "model/gguf_quantities.hpp"
#include "weightloader/engine/tokenizer.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

namespace fs = std::filesystem;

// Without a configuration: a Llama of the tensors' shapes, with the overrides' heads.
LlamaConfig shaped_llama(const WeightSource& s, const LlamaHeads& h) {
  LlamaConfig c;
  const Shape embed = shape_of(s, "model.embed_tokens.weight");
  c.vocab_size = embed[0];
  c.hidden_size = embed[1];
  while (s.find(fmt::format("model.layers.{}.input_layernorm.weight", c.num_layers))) ++c.num_layers;
  c.intermediate_size = shape_of(s, "model.layers.0.mlp.gate_proj.weight")[0];
  c.head_dim = c.rotary_dim = c.hidden_size / h.heads;
  c.rms_norm_eps = h.rms_norm_eps;
  c.rope_theta = h.rope_theta;
  return c;
}

// llama.cpp's architecture for the model's family (src/families/), as its converter registers them.
std::string architecture_of(const LlamaConfig& c, const std::string& origin) {
  const Family* family = family_by_type(c.architecture);
  if (family && !family->gguf.name.empty()) return std::string(family->gguf.name);
  std::vector<std::string_view> written;
  for (const Family* f : families())
    if (!f->gguf.name.empty()) written.push_back(f->model_type);
  throw Error(ErrorCode::InvalidArgument,
              fmt::format("GGUF output is written for {} models; this one is not yet ({})", fmt::join(written, ", "), c.features()),
              origin);
}

// {arch}.* as convert_hf_to_gguf.py writes them for the family's architecture (src/families/).
void put_model_keys(const LlamaConfig& c, const std::string& arch, GgufMetadata& meta) {
  const Family& family = *family_by_type(c.architecture);
  for (const GgufKey& k : gguf_keys(family.gguf)) {
    const std::optional<double> absent = gguf_absent_value(k, c);
    double v = gguf_quantity(c, k.quantity);
    if (k.write == GgufKey::Write::Never || (k.write == GgufKey::Write::WhenSet && v == 0) ||
        (k.write == GgufKey::Write::WhenNotAbsent && absent && v == *absent))
      continue;
    if (v == 0 && absent) v = *absent;
    const std::string key = arch + "." + std::string(k.suffix);
    switch (gguf_quantity_stored(k.quantity)) {
      case GgufStored::UInt32: meta.emplace(key, uint32_t(v)); break;
      case GgufStored::Float32: meta.emplace(key, float(v)); break;
      case GgufStored::Bool: meta.emplace(key, v != 0); break;
    }
  }
  // Yarn where llama.cpp runs it (the read-back refuses what it would run otherwise: other bands, a
  // cos/sin scale); any other scaling is left out, and so refused by the read-back.
  const RopeScaling& r = c.rope_scaling;
  if (family.gguf.yarn != GgufArchitecture::Yarn::None && r.type == "yarn") {
    meta.emplace(arch + ".rope.scaling.type", std::string("yarn"));
    meta.emplace(arch + ".rope.scaling.factor", float(r.factor));
    meta.emplace(arch + ".rope.scaling.original_context_length", uint32_t(r.original_max_position_embeddings));
  }
}

// Reads the keys back as llama.cpp would and refuses the first field it would run otherwise.
void refuse_what_keys_change(const GgufModel& m, const GgufMetadata& meta, const std::string& origin) {
  std::map<std::string, std::string> text;
  for (const auto& [key, value] : meta) text.emplace(key, gguf_value_to_string(value));
  refuse_model_change(m.config, llama_config_from_gguf(text, origin), fmt::format("GGUF (llama.cpp's '{}')", m.arch), origin);
  const GgufArchitecture& g = family_by_type(m.config.architecture)->gguf;
  if (g.tied_head && !m.config.tie_word_embeddings)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("this {} cannot be written as GGUF: llama.cpp's '{}' ties the head to the embedding, "
                            "and tie_word_embeddings is false", m.config.architecture, m.arch),
                origin);
  // llama.cpp refuses a file without the biases its graph requires, or with biases it does not load.
  const bool all = m.config.qkv_bias && m.config.o_bias, none = !m.config.qkv_bias && !m.config.o_bias;
  const char* rule = g.attention_biases == GgufArchitecture::Biases::Always && !all ? "requires q/k/v/o biases"
                     : g.attention_biases == GgufArchitecture::Biases::Never && !none ? "loads no attention biases"
                                                                                       : nullptr;
  if (rule)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("this {} cannot be written as GGUF: llama.cpp's '{}' {}, and attention_bias is {}", m.config.architecture,
                            m.arch, rule, none ? "false" : "true"),
                origin);
}

}  // namespace

GgufModel gguf_model(const WeightSource& s, const LlamaHeads& h) {
  GgufModel m;
  try {
    m.config = llama_config_from_source(s);
    m.configured = true;
  } catch (const Error& e) {
    // No configuration: a Llama whose heads the overrides give. A configuration that is there but
    // wrong is the user's to fix, never guessed around.
    if (e.code() != ErrorCode::ConfigMissing) throw;
    m.config = shaped_llama(s, h);
  }
  m.config.num_heads = h.heads;
  m.config.num_kv_heads = h.kv_heads;
  if (h.seq_len) m.config.max_position_embeddings = h.seq_len;
  m.arch = m.configured ? architecture_of(m.config, s.origin()) : "llama";
  return m;
}

GgufMetadata gguf_model_metadata(const GgufModel& m, const WeightSource& s, uint32_t file_type,
                                 const std::string& tokenizer) {
  std::string name = fs::path(s.origin()).filename().replace_extension().string();
  if (name.empty()) name = fs::path(s.origin()).parent_path().filename().string();  // "dir/"
  GgufMetadata meta = {
      {"general.architecture", m.arch},
      {"general.name", name},
      {"general.alignment", uint32_t(32)},
      {"general.file_type", file_type},
      {"general.quantization_version", uint32_t(2)},
  };
  put_model_keys(m.config, m.arch, meta);
  if (m.configured) refuse_what_keys_change(m, meta, s.origin());
  if (tokenizer.empty()) {
    meta.emplace("tokenizer.ggml.model", std::string("none"));
    return meta;
  }
  GgufMetadata tok = tokenizer_gguf_metadata(tokenizer);
  const uint64_t n = std::get<GgufArray>(tok.at("tokenizer.ggml.tokens")).size();
  if (n != m.config.vocab_size)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("the tokenizer has {} tokens but the model's embedding {} rows", n, m.config.vocab_size),
                tokenizer);
  meta.merge(tok);
  return meta;
}

}  // namespace wl
