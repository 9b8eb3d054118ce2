// The table of ggml block decoders (each in its own file under decoders/, listed in
// decoders/list.inc), the Decoder that runs them (SIMD where quants_hwy.cpp has a kernel), and the
// table of block quantisers (each in its own file under quantizers/, listed in quantizers/list.inc).
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/gguf/decoders/decoders.hpp"
#include "formats/gguf/ggml_types.hpp"
#include "formats/gguf/quantizers/quantizers.hpp"
#include "formats/gguf/quants.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/error.hpp"

namespace wl::gguf {
namespace {

using BlockFn = void (*)(const uint8_t* block, float* out);

class BlockDecoder final : public Decoder {
 public:
  BlockDecoder(GgmlType type, BlockFn fn) : traits_(*ggml_type_traits(static_cast<uint32_t>(type))), fn_(fn) {}
  std::string name() const override { return std::string(traits_.name); }
  std::string spec() const override { return fmt::format(R"({{"kind":"ggml","type":{}}})", static_cast<uint32_t>(traits_.type)); }
  uint64_t block_elems() const override { return traits_.block_elems; }
  uint64_t block_bytes() const override { return traits_.block_bytes; }
  DType output_dtype() const override { return DType::F32; }
  void decode(const std::byte* src, uint64_t nblocks, void* dst) const override {
    const auto* in = reinterpret_cast<const uint8_t*>(src);
    auto* out = static_cast<float*>(dst);
    if (dequantize_simd(traits_.type, in, nblocks, out)) return;
    for (uint64_t i = 0; i < nblocks; ++i) fn_(in + i * traits_.block_bytes, out + i * traits_.block_elems);
  }

 private:
  const GgmlTypeTraits& traits_;
  BlockFn fn_;
};

struct Entry {
  GgmlType type;
  BlockFn fn;
};

// The registered decoders (decoders/list.inc: one line each).
constexpr Entry kDecoders[] = {
#define WL_GGML_DECODER(TYPE, fn) {GgmlType::TYPE, decoders::fn},
#include "formats/gguf/decoders/list.inc"
#undef WL_GGML_DECODER
};

const Entry* entry_of(GgmlType type) {
  for (const Entry& e : kDecoders)
    if (e.type == type) return &e;
  return nullptr;
}

}  // namespace

std::shared_ptr<const Decoder> ggml_decoder(GgmlType type) {
  // One decoder object per type, made once.
  static const std::vector<std::shared_ptr<const Decoder>> all = [] {
    std::vector<std::shared_ptr<const Decoder>> v;
    for (const Entry& e : kDecoders) v.push_back(std::make_shared<const BlockDecoder>(e.type, e.fn));
    return v;
  }();
  const Entry* e = entry_of(type);
  return e ? all[static_cast<size_t>(e - std::begin(kDecoders))] : nullptr;
}

std::string ggml_decoded_type_names() {
  std::string names;
  for (const Entry& e : kDecoders) names += (names.empty() ? "" : ", ") + ggml_type_name(e.type);
  return names;
}

namespace {

// Stands in the catalogue for a tensor of a type no decoder reads, so that listing a file shows it;
// reading it is refused (before any read, from prepare()), naming the type, the file and the tensor.
class RefusingDecoder final : public Decoder {
 public:
  RefusingDecoder(const GgmlTypeTraits& traits, std::string file, std::string tensor)
      : traits_(traits), file_(std::move(file)), tensor_(std::move(tensor)) {}
  std::string name() const override { return std::string(traits_.name); }
  std::string spec() const override {
    return nlohmann::json{{"kind", "ggml"}, {"type", static_cast<uint32_t>(traits_.type)}, {"refused", {{"file", file_}, {"tensor", tensor_}}}}.dump();
  }
  uint64_t block_elems() const override { return traits_.block_elems; }
  uint64_t block_bytes() const override { return traits_.block_bytes; }
  DType output_dtype() const override { return DType::F32; }
  void prepare(std::span<const TensorView>) const override { refuse(); }
  void decode(const std::byte*, uint64_t, void*) const override { refuse(); }

 private:
  [[noreturn]] void refuse() const {
    throw Error(ErrorCode::GgufUnsupportedTensorType,
                fmt::format("{} tensors cannot be decoded by weightloader (it reads F32, F16, BF16, F64, I8, I16, I32, "
                            "I64, {})",
                            traits_.name, ggml_decoded_type_names()),
                file_, tensor_);
  }

  const GgmlTypeTraits& traits_;
  std::string file_, tensor_;
};

}  // namespace

std::shared_ptr<const Decoder> ggml_refusing_decoder(GgmlType type, std::string file, std::string tensor) {
  const GgmlTypeTraits* traits = ggml_type_traits(static_cast<uint32_t>(type));
  if (!traits) return nullptr;
  return std::make_shared<const RefusingDecoder>(*traits, std::move(file), std::move(tensor));
}

bool dequantize_reference(GgmlType type, const uint8_t* blocks, uint64_t nblocks, float* out) {
  const Entry* e = entry_of(type);
  if (!e) return false;
  const GgmlTypeTraits& traits = *ggml_type_traits(static_cast<uint32_t>(type));
  for (uint64_t i = 0; i < nblocks; ++i) e->fn(blocks + i * traits.block_bytes, out + i * traits.block_elems);
  return true;
}

namespace {

using QuantizeFn = void (*)(const float* x, uint8_t* block);

struct QuantizerEntry {
  GgufQuantizedType type;
  QuantizeFn fn;
};

// The registered quantisers (quantizers/list.inc: one line each).
constexpr QuantizerEntry kQuantizers[] = {
#define WL_GGML_QUANTIZER(TYPE, fn, file_type, about) {{GgmlType::TYPE, file_type, about}, quantizers::fn},
#include "formats/gguf/quantizers/list.inc"
#undef WL_GGML_QUANTIZER
};

const QuantizerEntry* quantizer_of(GgmlType type) {
  for (const QuantizerEntry& e : kQuantizers)
    if (e.type.type == type) return &e;
  return nullptr;
}

}  // namespace

bool ggml_quantize(GgmlType type, const float* x, uint64_t n, std::byte* out) {
  const QuantizerEntry* e = quantizer_of(type);
  if (!e) return false;
  const GgmlTypeTraits& traits = *ggml_type_traits(static_cast<uint32_t>(type));
  auto* y = reinterpret_cast<uint8_t*>(out);
  for (uint64_t i = 0; i < n / traits.block_elems; ++i) e->fn(x + i * traits.block_elems, y + i * traits.block_bytes);
  return true;
}

}  // namespace wl::gguf

namespace wl {

std::span<const GgufQuantizedType> gguf_quantized_types() {
  static const std::vector<GgufQuantizedType> types = [] {
    std::vector<GgufQuantizedType> v;
    for (const gguf::QuantizerEntry& e : gguf::kQuantizers) v.push_back(e.type);
    return v;
  }();
  return types;
}

}  // namespace wl
