#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/atomic_output.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/custom_binary.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/synth.hpp"

namespace wl {

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t name_hash(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

constexpr uint64_t kBlockElems = 1 << 16;  // generate in blocks to bound memory

}  // namespace

LlamaShape LlamaShape::preset(const std::string& name) {
  if (name == "tiny") return {};
  if (name == "small") return {32000, 512, 1376, 8, 8, 4, false};
  if (name == "100m") return {32000, 768, 2048, 12, 12, 12, true};
  if (name == "1gb") return {32000, 1024, 2816, 16, 16, 16, false};
  if (name == "2gb") return {32000, 1536, 4096, 18, 16, 16, false};
  throw Error(ErrorCode::InvalidArgument, fmt::format("unknown preset '{}' (presets: tiny, small, 100m, 1gb, 2gb)", name));
}

uint64_t LlamaShape::parameter_count() const {
  uint64_t n = 0;
  for (const SynthTensor& t : llama_tensors(*this)) n += shape_numel(t.shape);
  return n;
}

std::vector<SynthTensor> llama_tensors(const LlamaShape& s) {
  if (s.heads == 0 || s.kv_heads == 0 || s.hidden % s.heads != 0 || s.heads % s.kv_heads != 0)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("hidden {} must split into {} heads, and heads into {} kv heads", s.hidden, s.heads, s.kv_heads));
  const uint64_t head_dim = s.hidden / s.heads, kv = s.kv_heads * head_dim;
  std::vector<SynthTensor> out;
  out.push_back({"model.embed_tokens.weight", {s.vocab, s.hidden}});
  for (uint64_t l = 0; l < s.layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    out.push_back({p + "input_layernorm.weight", {s.hidden}});
    out.push_back({p + "self_attn.q_proj.weight", {s.hidden, s.hidden}});
    out.push_back({p + "self_attn.k_proj.weight", {kv, s.hidden}});
    out.push_back({p + "self_attn.v_proj.weight", {kv, s.hidden}});
    out.push_back({p + "self_attn.o_proj.weight", {s.hidden, s.hidden}});
    out.push_back({p + "post_attention_layernorm.weight", {s.hidden}});
    out.push_back({p + "mlp.gate_proj.weight", {s.intermediate, s.hidden}});
    out.push_back({p + "mlp.up_proj.weight", {s.intermediate, s.hidden}});
    out.push_back({p + "mlp.down_proj.weight", {s.hidden, s.intermediate}});
  }
  out.push_back({"model.norm.weight", {s.hidden}});
  if (!s.tie_embeddings) out.push_back({"lm_head.weight", {s.vocab, s.hidden}});
  return out;
}

void synth_values(const std::string& name, uint64_t seed, uint64_t first, uint64_t count, DType dtype, void* dst) {
  const uint64_t h = splitmix(seed ^ name_hash(name));
  const bool norm = name.find("norm") != std::string::npos;
  std::vector<float> block(std::min(count, kBlockElems));
  auto* out = static_cast<std::byte*>(dst);
  for (uint64_t done = 0; done < count;) {
    const uint64_t n = std::min<uint64_t>(block.size(), count - done);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t r = splitmix(h + first + done + i);
      const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f) - 0.5f;  // [-0.5, 0.5)
      block[i] = norm ? 1.0f + 0.2f * u : 0.1f * u;
    }
    convert(DType::F32, block.data(), dtype, out + done * dtype_size(dtype), n);
    done += n;
  }
}

uint64_t write_synthetic_llama(const std::string& dir, const SynthOptions& o) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const std::vector<SynthTensor> tensors = llama_tensors(o.shape);
  uint64_t total = 0;
  for (const SynthTensor& t : tensors) total += shape_numel(t.shape) * dtype_size(o.dtype);

  if (o.format == SynthFormat::CustomBinary) {
    std::vector<std::pair<std::string, TensorView>> views;
    for (const SynthTensor& t : tensors) {
      TensorView v = TensorView::empty(DType::F32, t.shape);
      synth_values(t.name, o.seed, 0, v.numel(), DType::F32, v.raw());
      views.emplace_back(t.name, v);
    }
    write_custom_binary(dir, views);
    return total;
  }

  if (o.shards == 0) throw Error(ErrorCode::InvalidArgument, "shards must be at least 1");
  // Split tensors over shards by cumulative size, keeping the order.
  std::vector<std::vector<const SynthTensor*>> shards(o.shards);
  uint64_t acc = 0;
  for (const SynthTensor& t : tensors) {
    const uint64_t bytes = shape_numel(t.shape) * dtype_size(o.dtype);
    const size_t k = std::min<size_t>(o.shards - 1, static_cast<size_t>(acc * o.shards / std::max<uint64_t>(1, total)));
    shards[k].push_back(&t);
    acc += bytes;
  }
  nlohmann::json weight_map = nlohmann::json::object();
  std::vector<std::byte> buffer(kBlockElems * dtype_size(o.dtype));
  for (unsigned k = 0; k < o.shards; ++k) {
    const std::string file =
        o.shards == 1 ? "model.safetensors" : fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, o.shards);
    std::vector<SafetensorsEntry> entries;
    for (const SynthTensor* t : shards[k]) {
      entries.push_back({t->name, o.dtype, t->shape});
      weight_map[t->name] = file;
    }
    SafetensorsStreamWriter writer((fs::path(dir) / file).string(), entries, {{"format", "pt"}});
    for (const SynthTensor* t : shards[k]) {
      const uint64_t n = shape_numel(t->shape);
      for (uint64_t e = 0; e < n; e += kBlockElems) {
        const uint64_t m = std::min(kBlockElems, n - e);
        synth_values(t->name, o.seed, e, m, o.dtype, buffer.data());
        writer.write(buffer.data(), m * dtype_size(o.dtype));
      }
    }
    writer.finish();
  }
  const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                 {"model_type", "llama"},
                                 {"hidden_size", o.shape.hidden},
                                 {"intermediate_size", o.shape.intermediate},
                                 {"num_hidden_layers", o.shape.layers},
                                 {"num_attention_heads", o.shape.heads},
                                 {"num_key_value_heads", o.shape.kv_heads},
                                 {"vocab_size", o.shape.vocab},
                                 {"max_position_embeddings", 2048},
                                 {"rms_norm_eps", 1e-5},
                                 {"rope_theta", 10000.0},
                                 {"tie_word_embeddings", o.shape.tie_embeddings},
                                 {"torch_dtype", o.dtype == DType::BF16 ? "bfloat16" : o.dtype == DType::F16 ? "float16" : "float32"}};
  const std::string config_text = config.dump(2);
  AtomicFileWriter config_out((fs::path(dir) / "config.json").string());
  config_out.write(config_text.data(), config_text.size());
  config_out.commit();
  if (o.shards > 1) {
    const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    const std::string text = index.dump(2);
    AtomicFileWriter out((fs::path(dir) / "model.safetensors.index.json").string());
    out.write(text.data(), text.size());
    out.commit();
  }
  return total;
}

}  // namespace wl
