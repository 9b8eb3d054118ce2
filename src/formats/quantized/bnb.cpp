// bitsandbytes as transformers saves it.
// 4-bit (NF4 / FP4): `<prefix>.weight` U8 [n / 2, 1], two codes per byte, high nibble first;
// `.absmax` F32 [blocks] (double quant: U8 codes, with `.nested_absmax` F32 per nested block,
// `.nested_quant_map` F32 [256] and the quant_state's nested_offset); `.quant_map` F32 [16];
// `.quant_state.bitsandbytes__nf4|fp4` U8, the JSON that gives the dense shape and block sizes.
// W[e] = quant_map[code_e] · absmax[e / blocksize]; double quant:
// absmax[b] = nested_quant_map[code_b] · nested_absmax[b / nested_blocksize] + nested_offset (F32).
// Reads the quant_state blob now (the dense shape is only there).
// LLM.int8: `<prefix>.weight` I8 [out, in], `.SCB` F32 [out]: W = (q · SCB[o]) · (1/127 as bitsandbytes
// writes it, 7.874015718698502e-3), as int8_vectorwise_dequant computes it.
#include "formats/quantized/layer_kind.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "weightloader/error.hpp"

namespace wl::quant {

namespace {

struct QuantState {
  std::string quant_type;
  uint64_t blocksize = 64, nested_blocksize = 256;
  float nested_offset = 0.0f;
  Shape shape;
};

QuantState read_state(const WeightSource& raw, const TensorInfo& blob) {
  const TensorView bytes = raw.load(blob, DType::U8);
  const std::string text(reinterpret_cast<const char*>(bytes.raw()), bytes.nbytes());
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto bad = [&](const std::string& what) -> QuantState {
    throw Error(ErrorCode::QuantTensorsInconsistent, "bitsandbytes quant_state " + what, {}, blob.name);
  };
  if (j.is_discarded() || !j.is_object()) return bad("is not a JSON object");
  QuantState s;
  if (!j.contains("quant_type") || !j["quant_type"].is_string()) return bad("has no quant_type");
  s.quant_type = j["quant_type"].get<std::string>();
  if (!j.contains("shape") || !j["shape"].is_array()) return bad("has no shape");
  for (const auto& d : j["shape"]) {
    if (!d.is_number_unsigned()) return bad("shape holds " + d.dump());
    s.shape.push_back(d.get<uint64_t>());
  }
  if (j.contains("blocksize")) {
    if (!j["blocksize"].is_number_unsigned() || j["blocksize"].get<uint64_t>() == 0) return bad("blocksize is not positive");
    s.blocksize = j["blocksize"].get<uint64_t>();
  }
  if (j.contains("nested_blocksize")) {
    if (!j["nested_blocksize"].is_number_unsigned() || j["nested_blocksize"].get<uint64_t>() == 0)
      return bad("nested_blocksize is not positive");
    s.nested_blocksize = j["nested_blocksize"].get<uint64_t>();
  }
  if (j.contains("nested_offset")) {
    if (!j["nested_offset"].is_number()) return bad("nested_offset is not a number");
    s.nested_offset = static_cast<float>(j["nested_offset"].get<double>());  // written from an F32 value
  }
  return s;
}

class Bnb4Decoder final : public LayerDecoder {
 public:
  Bnb4Decoder(std::string name, const TensorInfo& packed, QuantState state, bool nested, std::vector<SideRead> side)
      : LayerDecoder(std::move(name), packed, state.shape.empty() ? 1 : state.shape[0],
                     state.shape.empty() || state.shape[0] == 0 ? 1 : shape_numel(state.shape) / state.shape[0],
                     std::move(side)),
        state_(std::move(state)), nested_(nested),
        row_elems_(state_.shape.empty() || state_.shape[0] == 0 ? 1 : shape_numel(state_.shape) / state_.shape[0]) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    std::memcpy(map_, side[0].raw(), sizeof map_);
    const uint64_t blocks = side[1].numel();
    absmax_.resize(blocks);
    if (!nested_) {
      std::memcpy(absmax_.data(), side[1].raw(), blocks * sizeof(float));
      return;
    }
    const auto* codes = reinterpret_cast<const uint8_t*>(side[1].raw());
    const auto* nested_absmax = reinterpret_cast<const float*>(side[2].raw());
    const auto* nested_map = reinterpret_cast<const float*>(side[3].raw());
    for (uint64_t b = 0; b < blocks; ++b) {
      const float scaled = nested_map[codes[b]] * nested_absmax[b / state_.nested_blocksize];
      absmax_[b] = scaled + state_.nested_offset;  // two roundings, as bitsandbytes does (no fused multiply-add)
    }
  }
  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    const auto* bytes = reinterpret_cast<const uint8_t*>(packed);
    const uint64_t bs = state_.blocksize, end = row1 * row_elems_;
    for (uint64_t e = row0 * row_elems_; e < end;) {  // a block (one absmax) at a time
      const float absmax = absmax_[e / bs];
      for (const uint64_t block_end = std::min(end, (e / bs + 1) * bs); e < block_end; ++e) {
        const uint8_t byte = bytes[e / 2];
        *out++ = map_[e % 2 ? byte & 15 : byte >> 4] * absmax;  // high nibble first
      }
    }
  }
  QuantState state_;
  bool nested_;
  uint64_t row_elems_;
  mutable float map_[16] = {};
  mutable std::vector<float> absmax_;
};

class Bnb8Decoder final : public LayerDecoder {
 public:
  Bnb8Decoder(const TensorInfo& weight, std::vector<SideRead> side)
      : LayerDecoder("BNB-INT8", weight, weight.shape[0], weight.shape[1], std::move(side)), out_(weight.shape[0]),
        in_(weight.shape[1]) {}

 private:
  void unpack_side(const std::vector<TensorView>& side) const override {
    scb_.assign(reinterpret_cast<const float*>(side[0].raw()), reinterpret_cast<const float*>(side[0].raw()) + out_);
  }
  void decode_rows(const std::byte* packed, uint64_t row0, uint64_t row1, float* out) const override {
    const auto* q = reinterpret_cast<const int8_t*>(packed);
    constexpr float kInv127 = static_cast<float>(7.874015718698502e-3);
    for (uint64_t o = row0; o < row1; ++o)
      for (uint64_t i = 0; i < in_; ++i) {
        const float scaled = static_cast<float>(q[o * in_ + i]) * scb_[o];
        *out++ = scaled * kInv127;
      }
  }
  uint64_t out_, in_;
  mutable std::vector<float> scb_;
};

QuantLayer bnb4_layer(const RawSource& raw, const std::string& prefix, const std::string& state_name, const QuantConfig& c) {
  const std::string w = prefix + ".weight";
  const TensorInfo& weight = layer_tensor(*raw, w, prefix);
  const TensorInfo& blob = layer_tensor(*raw, state_name, prefix);
  const TensorInfo& absmax = layer_tensor(*raw, w + ".absmax", prefix);
  const TensorInfo& quant_map = layer_tensor(*raw, w + ".quant_map", prefix);
  const QuantState state = read_state(*raw, blob);
  const std::string type = state_name.substr(state_name.rfind("__") + 2);
  if (state.quant_type != type || (type != "nf4" && type != "fp4"))
    throw Error(ErrorCode::QuantTensorsInconsistent,
                fmt::format("quant_state says quant_type '{}' but is named for '{}'", state.quant_type, type), {}, blob.name);
  if (state.quant_type != c.bnb_quant_type)
    throw Error(ErrorCode::QuantConfigInvalid,
                fmt::format("quantization_config says bnb_4bit_quant_type '{}' but this layer is {}", c.bnb_quant_type, type),
                {}, blob.name);
  const uint64_t n = shape_numel(state.shape);
  if (weight.dtype != DType::U8 || weight.nbytes != (n + 1) / 2)
    throw Error(ErrorCode::QuantTensorsInconsistent,
                fmt::format("is {} {} ({} bytes), but a 4-bit weight of shape {} packs into {} U8 bytes", weight.stored_type(),
                            shape_to_string(weight.shape), weight.nbytes, shape_to_string(state.shape), (n + 1) / 2),
                {}, weight.name);
  const uint64_t blocks = (n + state.blocksize - 1) / state.blocksize;
  expect_tensor(quant_map, {16}, {DType::F32}, "a 4-bit quant_map");
  const bool nested = raw->find(w + ".nested_absmax") != nullptr;
  expect_tensor(absmax, {blocks}, {nested ? DType::U8 : DType::F32},
                fmt::format("for {} elements in blocks of {}, absmax{}", n, state.blocksize, nested ? " (double quant)" : ""));
  std::vector<SideRead> side = {{quant_map, DType::F32}, {absmax, absmax.dtype}};
  QuantLayer layer;
  layer.stored = {weight.name, blob.name, absmax.name, quant_map.name};
  if (nested) {
    const TensorInfo& nested_absmax = layer_tensor(*raw, w + ".nested_absmax", prefix);
    const TensorInfo& nested_map = layer_tensor(*raw, w + ".nested_quant_map", prefix);
    expect_tensor(nested_absmax, {(blocks + state.nested_blocksize - 1) / state.nested_blocksize}, {DType::F32},
                  fmt::format("for {} absmax codes in nested blocks of {}, nested_absmax", blocks, state.nested_blocksize));
    expect_tensor(nested_map, {256}, {DType::F32}, "a nested_quant_map");
    side.push_back({nested_absmax, DType::F32});
    side.push_back({nested_map, DType::F32});
    layer.stored.push_back(nested_absmax.name);
    layer.stored.push_back(nested_map.name);
  }
  const std::string name = fmt::format("BNB-{}{}", type == "nf4" ? "NF4" : "FP4", nested ? "-DQ" : "");
  auto decoder = std::make_shared<Bnb4Decoder>(name, weight, state, nested, std::move(side));
  layer.dense = dense_entry(w, weight, state.shape, decoder);
  return layer;
}

QuantLayer bnb8_layer(const RawSource& raw, const std::string& prefix, const QuantConfig&) {
  const TensorInfo& weight = layer_tensor(*raw, prefix + ".weight", prefix);
  const TensorInfo& scb = layer_tensor(*raw, prefix + ".SCB", prefix);
  expect_tensor(weight, {0, 0}, {DType::I8}, "an LLM.int8 weight");
  expect_tensor(scb, {weight.shape[0]}, {DType::F32}, fmt::format("for {} output rows SCB", weight.shape[0]));
  auto decoder = std::make_shared<Bnb8Decoder>(weight, std::vector<SideRead>{{scb, DType::F32}});
  QuantLayer layer{dense_entry(weight.name, weight, weight.shape, decoder), {weight.name, scb.name}};
  if (const TensorInfo* format = raw->find(prefix + ".weight_format")) layer.stored.push_back(format->name);
  return layer;
}

}  // namespace

extern const LayerKind kBnb4Kind{
    "bitsandbytes 4-bit (quant_state)",
    [](const WeightSource&, const TensorInfo& t, std::string& prefix, std::string& extra) {
      const size_t at = t.name.find(".weight.quant_state.bitsandbytes__");
      if (at == std::string::npos) return false;
      prefix = t.name.substr(0, at), extra = t.name;
      return true;
    },
    [](const QuantConfig& c) { return c.method == Method::Bnb4; }, bnb4_layer};

extern const LayerKind kBnb8Kind{
    "bitsandbytes int8 (SCB)",
    [](const WeightSource&, const TensorInfo& t, std::string& prefix, std::string&) { return strip_suffix(t.name, ".SCB", prefix); },
    [](const QuantConfig& c) { return c.method == Method::Bnb8; },
    [](const RawSource& raw, const std::string& prefix, const std::string&, const QuantConfig& c) { return bnb8_layer(raw, prefix, c); }};

}  // namespace wl::quant
