#include "weightloader/dtype.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <utility>

namespace wl {
namespace {

TEST(DType, NamesAndSizes) {
  const std::pair<DType, std::pair<std::string_view, size_t>> expected[] = {
      {DType::BOOL, {"BOOL", 1}},       {DType::U8, {"U8", 1}},     {DType::I8, {"I8", 1}},
      {DType::U16, {"U16", 2}},         {DType::I16, {"I16", 2}},   {DType::U32, {"U32", 4}},
      {DType::I32, {"I32", 4}},         {DType::U64, {"U64", 8}},   {DType::I64, {"I64", 8}},
      {DType::F16, {"F16", 2}},         {DType::BF16, {"BF16", 2}}, {DType::F32, {"F32", 4}},
      {DType::F64, {"F64", 8}},         {DType::F8_E4M3, {"F8_E4M3", 1}},
      {DType::F8_E5M2, {"F8_E5M2", 1}}, {DType::F8_E8M0, {"F8_E8M0", 1}},
  };
  ASSERT_EQ(std::size(expected), std::size(kAllDTypes));
  for (const auto& [dtype, info] : expected) {
    EXPECT_EQ(dtype_name(dtype), info.first);
    EXPECT_EQ(dtype_size(dtype), info.second) << info.first;
    EXPECT_EQ(parse_dtype(info.first), dtype) << info.first;
  }
}

TEST(DType, Categories) {
  for (DType dtype : kAllDTypes) {
    const std::string_view name = dtype_name(dtype);
    const bool is_float = name.starts_with("F") || name.starts_with("BF");
    const bool is_signed = name.starts_with("I");
    EXPECT_EQ(dtype_is_float(dtype), is_float) << name;
    EXPECT_EQ(dtype_is_signed_int(dtype), is_signed) << name;
  }
  EXPECT_FALSE(dtype_is_float(DType::BOOL));
  EXPECT_FALSE(dtype_is_signed_int(DType::BOOL));
  EXPECT_FALSE(dtype_is_signed_int(DType::U64));
}

TEST(DType, ParseTakesOnlyTheExactSafetensorsSpelling) {
  for (const char* name : {"f32", "bf16", "Bf16", "F32 ", " F32", "", "FLOAT", "float32", "F8_E4M3FN", "F4", "I128"}) {
    EXPECT_EQ(parse_dtype(name), std::nullopt) << name;
  }
}

TEST(DType, AliasesAreCaseInsensitive) {
  const std::pair<const char*, DType> aliases[] = {
      {"bf16", DType::BF16},         {"BFloat16", DType::BF16},       {"bfloat16", DType::BF16},
      {"f32", DType::F32},           {"float32", DType::F32},         {"float", DType::F32},
      {"FP32", DType::F32},          {"f16", DType::F16},             {"fp16", DType::F16},
      {"half", DType::F16},          {"Float16", DType::F16},         {"f64", DType::F64},
      {"double", DType::F64},        {"float64", DType::F64},         {"fp64", DType::F64},
      {"int8", DType::I8},           {"uint8", DType::U8},            {"int16", DType::I16},
      {"uint16", DType::U16},        {"int32", DType::I32},           {"uint32", DType::U32},
      {"int64", DType::I64},         {"uint64", DType::U64},          {"long", DType::I64},
      {"bool", DType::BOOL},         {"fp8_e4m3", DType::F8_E4M3},    {"e4m3", DType::F8_E4M3},
      {"float8_e4m3fn", DType::F8_E4M3}, {"FP8_E5M2", DType::F8_E5M2}, {"e5m2", DType::F8_E5M2},
      {"float8_e5m2", DType::F8_E5M2},
  };
  for (const auto& [alias, dtype] : aliases) EXPECT_EQ(parse_dtype_alias(alias), dtype) << alias;
  for (DType dtype : kAllDTypes) {
    std::string lower(dtype_name(dtype));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(parse_dtype_alias(dtype_name(dtype)), dtype) << lower;
    EXPECT_EQ(parse_dtype_alias(lower), dtype) << lower;
  }
  for (const char* name : {"", "float128", "int4", "bf 16", "e4m3fnuz", "f8"}) {
    EXPECT_EQ(parse_dtype_alias(name), std::nullopt) << name;
  }
}

}  // namespace
}  // namespace wl
