// Metadata values: names of their types, how they print, and lookups.
#include <fmt/format.h>

#include "weightloader/formats/gguf.hpp"

namespace wl {

std::string_view gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::U8: return "UINT8";
    case GgufType::I8: return "INT8";
    case GgufType::U16: return "UINT16";
    case GgufType::I16: return "INT16";
    case GgufType::U32: return "UINT32";
    case GgufType::I32: return "INT32";
    case GgufType::F32: return "FLOAT32";
    case GgufType::Bool: return "BOOL";
    case GgufType::String: return "STRING";
    case GgufType::Array: return "ARRAY";
    case GgufType::U64: return "UINT64";
    case GgufType::I64: return "INT64";
    case GgufType::F64: return "FLOAT64";
  }
  return "UNKNOWN";
}

uint64_t GgufArray::size() const noexcept {
  return std::visit([](const auto& v) -> uint64_t { return v.size(); }, elements);
}

std::string gguf_value_to_string(const GgufValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          return fmt::format("[array of {} {}]", v.size(), gguf_type_name(v.type()));
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
          return fmt::format("{}", static_cast<int>(v));  // a number, not a character
        } else {
          return fmt::format("{}", v);  // fmt prints floats in their shortest exact form
        }
      },
      value);
}

std::optional<uint64_t> gguf_value_to_uint(const GgufValue& value) {
  return std::visit(
      [](const auto& v) -> std::optional<uint64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_signed_v<T>)
            if (v < 0) return std::nullopt;
          return static_cast<uint64_t>(v);
        } else {
          return std::nullopt;
        }
      },
      value);
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

Shape GgufTensorRecord::shape() const { return Shape(dims.rbegin(), dims.rend()); }

}  // namespace wl
