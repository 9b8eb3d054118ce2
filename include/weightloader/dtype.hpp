// Element types, spelled as safetensors spells them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include "weightloader/export.hpp"

namespace wl {

enum class DType : uint8_t {
  BOOL, U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64, F8_E4M3, F8_E5M2,
  F8_E8M0,  // OCP's E8M0 scale (torch's float8_e8m0fnu): 2^(e - 127), 0xFF NaN; no sign, no zero
};

inline constexpr DType kAllDTypes[] = {
    DType::BOOL, DType::U8,  DType::I8,  DType::U16,  DType::I16, DType::U32,     DType::I32,    DType::U64,
    DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64, DType::F8_E4M3, DType::F8_E5M2, DType::F8_E8M0,
};

WL_API std::string_view dtype_name(DType dtype);   // "BF16"
WL_API size_t dtype_size(DType dtype);             // bytes per element
WL_API bool dtype_is_float(DType dtype);
WL_API bool dtype_is_signed_int(DType dtype);

// Exact safetensors spelling ("F32"), as the file formats require.
WL_API std::optional<DType> parse_dtype(std::string_view name);
// Friendly spellings for users too: "bf16", "bfloat16", "float32", "fp16", "half", "f32", ...
WL_API std::optional<DType> parse_dtype_alias(std::string_view name);

}  // namespace wl
