// Dense → GPTQ-4bit / FP8 per channel. Every value is computed in F32 as the decoders read it back.
#include "weightloader/quantize.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

// A tensor built here, owned by the catalogue that reads it.
struct Built {
  std::string name;
  DType dtype;
  Shape shape;
  std::shared_ptr<std::vector<std::byte>> bytes;
};

Built built(std::string name, DType dtype, Shape shape) {
  const uint64_t n = shape_numel(shape) * dtype_size(dtype);
  return {std::move(name), dtype, std::move(shape), std::make_shared<std::vector<std::byte>>(n)};
}

template <typename T>
T* data_of(Built& b) {
  return reinterpret_cast<T*>(b.bytes->data());
}

bool is_linear_weight(const TensorInfo& t) {
  if (t.shape.size() != 2 || !t.name.ends_with(".weight") || !dtype_is_float(t.dtype)) return false;
  for (const char* dense : {"embed", "lm_head", "norm", "wte", "wpe", "output.weight"})
    if (t.name.find(dense) != std::string::npos) return false;
  return true;
}

// GPTQ round-to-nearest, symmetric: per (group, output) s = f16(2 · amax / 15) (1 when the group
// is all zeros, as AutoGPTQ's quantizer widens an empty range to [−1, 1]: s = 2/15),
// q = clamp(round(w / s) + 8, 0, 15); qzeros store 8 − 1.
std::vector<Built> gptq_int4(const std::string& prefix, const float* w, uint64_t out, uint64_t in, uint64_t group) {
  const uint64_t groups = in / group;
  Built qweight = built(prefix + ".qweight", DType::I32, {in / 8, out});
  Built qzeros = built(prefix + ".qzeros", DType::I32, {groups, out / 8});
  Built scales = built(prefix + ".scales", DType::F16, {groups, out});
  Built g_idx = built(prefix + ".g_idx", DType::I32, {in});
  auto* qw = data_of<uint32_t>(qweight);
  auto* sc = data_of<uint16_t>(scales);
  std::fill(qw, qw + (in / 8) * out, 0u);
  for (uint64_t g = 0; g < groups; ++g)
    for (uint64_t o = 0; o < out; ++o) {
      float amax = 0.0f;
      for (uint64_t i = g * group; i < (g + 1) * group; ++i) amax = std::max(amax, std::fabs(w[o * in + i]));
      const uint16_t s_bits = f32_to_f16_bits(amax == 0.0f ? 2.0f / 15.0f : 2.0f * amax / 15.0f);
      sc[g * out + o] = s_bits;
      const float s = f16_bits_to_f32(s_bits);
      for (uint64_t i = g * group; i < (g + 1) * group; ++i) {
        const float q = std::clamp(std::nearbyint(w[o * in + i] / s) + 8.0f, 0.0f, 15.0f);
        qw[(i / 8) * out + o] |= static_cast<uint32_t>(q) << (4 * (i % 8));
      }
    }
  std::fill(data_of<uint32_t>(qzeros), data_of<uint32_t>(qzeros) + groups * (out / 8), 0x77777777u);  // zero 8, stored − 1
  for (uint64_t i = 0; i < in; ++i) data_of<int32_t>(g_idx)[i] = static_cast<int32_t>(i / group);
  return {std::move(qweight), std::move(qzeros), std::move(scales), std::move(g_idx)};
}

// FP8 per channel: s[o] = bf16(amax_o / 448) (1 for an all-zero row); q = e4m3(w / s), nearest even.
std::vector<Built> fp8_channel(const std::string& prefix, const float* w, uint64_t out, uint64_t in) {
  Built weight = built(prefix + ".weight", DType::F8_E4M3, {out, in});
  Built scale = built(prefix + ".weight_scale", DType::BF16, {out, 1});
  std::vector<float> row(in);
  for (uint64_t o = 0; o < out; ++o) {
    float amax = 0.0f;
    for (uint64_t i = 0; i < in; ++i) amax = std::max(amax, std::fabs(w[o * in + i]));
    const uint16_t s_bits = f32_to_bf16_bits(amax == 0.0f ? 1.0f : amax / 448.0f);
    data_of<uint16_t>(scale)[o] = s_bits;
    const float s = bf16_bits_to_f32(s_bits);
    for (uint64_t i = 0; i < in; ++i) row[i] = w[o * in + i] / s;
    convert(DType::F32, row.data(), DType::F8_E4M3, weight.bytes->data() + o * in, in);
  }
  return {std::move(weight), std::move(scale)};
}

nlohmann::ordered_json quantization_config(const QuantizeOptions& o) {
  if (o.method == QuantizeMethod::GptqInt4)
    return {{"quant_method", "gptq"}, {"bits", 4},           {"group_size", o.group_size}, {"desc_act", false},
            {"sym", true},            {"checkpoint_format", "gptq"}, {"true_sequential", true}};
  return {{"quant_method", "compressed-tensors"},
          {"format", "float-quantized"},
          {"config_groups",
           {{"group_0",
             {{"targets", {"Linear"}},
              {"weights", {{"type", "float"}, {"num_bits", 8}, {"strategy", "channel"}, {"symmetric", true}, {"dynamic", false}}}}}}},
          {"ignore", {"lm_head"}}};
}

}  // namespace

QuantizeMethod parse_quantize_method(const std::string& name) {
  if (name == "gptq-int4" || name == "gptq") return QuantizeMethod::GptqInt4;
  if (name == "fp8-channel" || name == "fp8") return QuantizeMethod::Fp8Channel;
  throw Error(ErrorCode::InvalidArgument, fmt::format("unknown quantization '{}' (gptq-int4, fp8-channel)", name));
}

std::unique_ptr<WeightSource> quantize_checkpoint(const WeightSource& dense, const QuantizeOptions& o) {
  if (o.method == QuantizeMethod::GptqInt4 && (o.group_size == 0 || o.group_size < -1))
    throw Error(ErrorCode::InvalidArgument, fmt::format("GPTQ group size {} is neither -1 nor positive", o.group_size));
  std::vector<Built> tensors;
  uint64_t quantized = 0;
  for (const TensorInfo& t : dense.tensors()) {
    const uint64_t out = t.shape.size() == 2 ? t.shape[0] : 0, in = t.shape.size() == 2 ? t.shape[1] : 0;
    const uint64_t group = o.group_size < 0 ? in : static_cast<uint64_t>(o.group_size);
    const bool gptq_fits = in % 8 == 0 && out % 8 == 0 && group && in % group == 0;
    if (is_linear_weight(t) && (o.method == QuantizeMethod::Fp8Channel || gptq_fits)) {
      const TensorView w = dense.load(t, DType::F32);
      const std::string prefix = t.name.substr(0, t.name.size() - std::string(".weight").size());
      const auto* values = reinterpret_cast<const float*>(w.raw());
      for (Built& b : o.method == QuantizeMethod::GptqInt4 ? gptq_int4(prefix, values, out, in, group) : fp8_channel(prefix, values, out, in))
        tensors.push_back(std::move(b));
      ++quantized;
      continue;
    }
    const TensorView v = dense.load(t);
    Built b = built(t.name, t.dtype, t.shape);
    std::copy(v.raw(), v.raw() + v.nbytes(), b.bytes->data());
    tensors.push_back(std::move(b));
  }
  if (quantized == 0)
    throw Error(ErrorCode::QuantUnsupported,
                "no linear layer to quantize: no 2-D *.weight outside embeddings and norms whose widths the group and packing divide",
                dense.origin());
  std::map<std::string, std::string> metadata;
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  if (auto it = dense.metadata().find("config.json"); it != dense.metadata().end()) {
    config = nlohmann::ordered_json::parse(it->second, nullptr, false);
    if (config.is_discarded() || !config.is_object()) config = nlohmann::ordered_json::object();
  }
  config["quantization_config"] = quantization_config(o);
  metadata["config.json"] = config.dump(2);
  std::vector<MemoryTensor> memory;
  for (Built& b : tensors)
    memory.push_back({b.name, b.dtype, b.shape, {}, b.bytes->data(), std::shared_ptr<const void>(b.bytes)});
  return WeightSource::from_memory(dense.origin() + " (quantized)", std::move(memory), std::move(metadata));
}

}  // namespace wl
