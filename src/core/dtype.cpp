// DType names, sizes and the two parsers (exact safetensors spelling, friendly aliases).
#include "weightloader/dtype.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace wl {

namespace {

struct DTypeInfo {
  std::string_view name;
  size_t size;
};

constexpr DTypeInfo info(DType dtype) {
  switch (dtype) {
    case DType::BOOL: return {"BOOL", 1};
    case DType::U8: return {"U8", 1};
    case DType::I8: return {"I8", 1};
    case DType::U16: return {"U16", 2};
    case DType::I16: return {"I16", 2};
    case DType::U32: return {"U32", 4};
    case DType::I32: return {"I32", 4};
    case DType::U64: return {"U64", 8};
    case DType::I64: return {"I64", 8};
    case DType::F16: return {"F16", 2};
    case DType::BF16: return {"BF16", 2};
    case DType::F32: return {"F32", 4};
    case DType::F64: return {"F64", 8};
    case DType::F8_E4M3: return {"F8_E4M3", 1};
    case DType::F8_E5M2: return {"F8_E5M2", 1};
    case DType::F8_E8M0: return {"F8_E8M0", 1};
  }
  return {"?", 0};
}

struct Alias {
  std::string_view spelling;  // lower case
  DType dtype;
};

// Lower-case spellings users write (numpy, PyTorch, C); exact names are matched case-insensitively too.
constexpr Alias kAliases[] = {
    {"boolean", DType::BOOL},    {"uint8", DType::U8},         {"int8", DType::I8},
    {"uint16", DType::U16},      {"int16", DType::I16},        {"short", DType::I16},
    {"uint32", DType::U32},      {"int32", DType::I32},        {"int", DType::I32},
    {"uint64", DType::U64},      {"int64", DType::I64},        {"long", DType::I64},
    {"fp16", DType::F16},        {"half", DType::F16},         {"float16", DType::F16},
    {"bfloat16", DType::BF16},   {"fp32", DType::F32},         {"float", DType::F32},
    {"float32", DType::F32},     {"fp64", DType::F64},         {"double", DType::F64},
    {"float64", DType::F64},     {"e4m3", DType::F8_E4M3},     {"e4m3fn", DType::F8_E4M3},
    {"fp8_e4m3", DType::F8_E4M3}, {"fp8_e4m3fn", DType::F8_E4M3}, {"f8_e4m3fn", DType::F8_E4M3},
    {"float8_e4m3fn", DType::F8_E4M3}, {"e5m2", DType::F8_E5M2}, {"fp8_e5m2", DType::F8_E5M2},
    {"float8_e5m2", DType::F8_E5M2}, {"e8m0", DType::F8_E8M0},   {"fp8_e8m0", DType::F8_E8M0},
    {"f8_e8m0fnu", DType::F8_E8M0}, {"float8_e8m0fnu", DType::F8_E8M0},
};

}  // namespace

std::string_view dtype_name(DType dtype) { return info(dtype).name; }

size_t dtype_size(DType dtype) { return info(dtype).size; }

bool dtype_is_float(DType dtype) {
  switch (dtype) {
    case DType::F16:
    case DType::BF16:
    case DType::F32:
    case DType::F64:
    case DType::F8_E4M3:
    case DType::F8_E5M2:
    case DType::F8_E8M0:
      return true;
    default:
      return false;
  }
}

bool dtype_is_signed_int(DType dtype) {
  return dtype == DType::I8 || dtype == DType::I16 || dtype == DType::I32 || dtype == DType::I64;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType dtype : kAllDTypes) {
    if (dtype_name(dtype) == name) return dtype;
  }
  return std::nullopt;
}

std::optional<DType> parse_dtype_alias(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (DType dtype : kAllDTypes) {
    std::string exact(dtype_name(dtype));
    std::transform(exact.begin(), exact.end(), exact.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (exact == lower) return dtype;
  }
  for (const Alias& alias : kAliases) {
    if (alias.spelling == lower) return alias.dtype;
  }
  return std::nullopt;
}

}  // namespace wl
