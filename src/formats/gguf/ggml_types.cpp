#include "formats/gguf/ggml_types.hpp"

#include <array>
#include <string>

#include <fmt/format.h>

namespace wl {
namespace gguf {
namespace {

constexpr uint64_t kQK = 256;  // elements of a K-quant super-block

// Block sizes as ggml defines them (ggml-common.h); gaps in the numbering are removed types.
constexpr std::array<GgmlTypeTraits, 35> kTypes{{
    {GgmlType::F32, "F32", 1, 4},
    {GgmlType::F16, "F16", 1, 2},
    {GgmlType::Q4_0, "Q4_0", 32, 2 + 16},
    {GgmlType::Q4_1, "Q4_1", 32, 2 + 2 + 16},
    {GgmlType::Q5_0, "Q5_0", 32, 2 + 4 + 16},
    {GgmlType::Q5_1, "Q5_1", 32, 2 + 2 + 4 + 16},
    {GgmlType::Q8_0, "Q8_0", 32, 2 + 32},
    {GgmlType::Q8_1, "Q8_1", 32, 2 + 2 + 32},
    {GgmlType::Q2_K, "Q2_K", kQK, 2 + 2 + kQK / 16 + kQK / 4},
    {GgmlType::Q3_K, "Q3_K", kQK, 2 + kQK / 4 + kQK / 8 + 12},
    {GgmlType::Q4_K, "Q4_K", kQK, 2 + 2 + 12 + kQK / 2},
    {GgmlType::Q5_K, "Q5_K", kQK, 2 + 2 + 12 + kQK / 8 + kQK / 2},
    {GgmlType::Q6_K, "Q6_K", kQK, kQK / 2 + kQK / 4 + kQK / 16 + 2},
    {GgmlType::Q8_K, "Q8_K", kQK, 4 + kQK + kQK / 8},
    {GgmlType::IQ2_XXS, "IQ2_XXS", kQK, 2 + kQK / 4},
    {GgmlType::IQ2_XS, "IQ2_XS", kQK, 2 + kQK / 4 + kQK / 32},
    {GgmlType::IQ3_XXS, "IQ3_XXS", kQK, 2 + kQK / 4 + kQK / 8},
    {GgmlType::IQ1_S, "IQ1_S", kQK, 2 + kQK / 8 + kQK / 16},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 2 + 16},
    {GgmlType::IQ3_S, "IQ3_S", kQK, 2 + kQK / 4 + kQK / 8 + kQK / 32 + 4},
    {GgmlType::IQ2_S, "IQ2_S", kQK, 2 + kQK / 4 + kQK / 16},
    {GgmlType::IQ4_XS, "IQ4_XS", kQK, 2 + 2 + kQK / 2 + kQK / 64},
    {GgmlType::I8, "I8", 1, 1},
    {GgmlType::I16, "I16", 1, 2},
    {GgmlType::I32, "I32", 1, 4},
    {GgmlType::I64, "I64", 1, 8},
    {GgmlType::F64, "F64", 1, 8},
    {GgmlType::IQ1_M, "IQ1_M", kQK, kQK / 8 + kQK / 16 + kQK / 32},
    {GgmlType::BF16, "BF16", 1, 2},
    {GgmlType::TQ1_0, "TQ1_0", kQK, 2 + 4 * 13},
    {GgmlType::TQ2_0, "TQ2_0", kQK, 2 + 64},
    {GgmlType::MXFP4, "MXFP4", 32, 1 + 16},
    {GgmlType::NVFP4, "NVFP4", 64, 4 + 32},
    {GgmlType::Q1_0, "Q1_0", 128, 2 + 16},
    {GgmlType::Q2_0, "Q2_0", 64, 2 + 16},
}};

}  // namespace

const GgmlTypeTraits* ggml_type_traits(uint32_t id) {
  for (const GgmlTypeTraits& t : kTypes)
    if (static_cast<uint32_t>(t.type) == id) return &t;
  return nullptr;
}

std::optional<DType> ggml_raw_dtype(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return DType::F32;
    case GgmlType::F16: return DType::F16;
    case GgmlType::BF16: return DType::BF16;
    case GgmlType::F64: return DType::F64;
    case GgmlType::I8: return DType::I8;
    case GgmlType::I16: return DType::I16;
    case GgmlType::I32: return DType::I32;
    case GgmlType::I64: return DType::I64;
    default: return std::nullopt;
  }
}

}  // namespace gguf

std::string ggml_type_name(GgmlType type) {
  const gguf::GgmlTypeTraits* t = gguf::ggml_type_traits(static_cast<uint32_t>(type));
  return t ? std::string(t->name) : fmt::format("type {}", static_cast<uint32_t>(type));
}

uint64_t ggml_block_elems(GgmlType type) {
  const gguf::GgmlTypeTraits* t = gguf::ggml_type_traits(static_cast<uint32_t>(type));
  return t ? t->block_elems : 1;
}

bool ggml_type_supported(GgmlType type) {
  return gguf::ggml_raw_dtype(type).has_value() || gguf::ggml_decoder(type) != nullptr;
}

}  // namespace wl
