#include "weightloader/byte_size.hpp"

#include <cctype>
#include <charconv>
#include <fstream>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

uint64_t parse_byte_size(const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [rest, ec] = std::from_chars(text.data(), end, value);
  std::string unit(rest, end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  struct Unit {
    const char* name;
    uint64_t bytes;
  };
  static constexpr Unit kUnits[] = {{"", 1},          {"B", 1},          {"KB", 1000ull},      {"MB", 1000ull * 1000},
                                    {"GB", 1000ull * 1000 * 1000},      {"TB", 1000ull * 1000 * 1000 * 1000},
                                    {"KIB", 1ull << 10}, {"MIB", 1ull << 20}, {"GIB", 1ull << 30}, {"TIB", 1ull << 40}};
  if (ec == std::errc() && rest != text.data())
    for (const Unit& u : kUnits) {
      uint64_t bytes = 0;
      if (unit == u.name && !__builtin_mul_overflow(value, u.bytes, &bytes) && bytes > 0) return bytes;
    }
  throw Error(ErrorCode::InvalidArgument,
              fmt::format("'{}' is not a positive size (e.g. 5GB, 500MB, 2GiB or a number of bytes)", text));
}

uint64_t parse_host_memory(const std::string& text) {
  if (text.find('.') == std::string::npos) return parse_byte_size(text);
  double share = 0;
  const auto [rest, ec] = std::from_chars(text.data(), text.data() + text.size(), share);
  if (ec != std::errc() || rest != text.data() + text.size() || !(share > 0) || share > 1)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("'{}' is neither a size (2GiB, 500MB, bytes) nor a share of memory in (0, 1] (0.5)", text));
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemTotal:") return static_cast<uint64_t>(share * static_cast<double>(kib) * 1024);
  throw Error(ErrorCode::InvalidArgument, fmt::format("'{}': a share of memory, but /proc/meminfo has no MemTotal", text));
}

std::string human_bytes(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.2f} GiB", bytes / double(1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", bytes / double(1ull << 20));
  if (bytes >= (1ull << 10)) return fmt::format("{:.1f} KiB", bytes / double(1ull << 10));
  return fmt::format("{} B", bytes);
}

}  // namespace wl
