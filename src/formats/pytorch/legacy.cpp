#include "formats/pytorch/legacy.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

namespace wl::pytorch {
namespace {

// LONG1 of 10 bytes holding 0x1950a86a20f9469cfc6c, little-endian: how the magic number is pickled.
constexpr std::array<uint8_t, 12> kMagicLong = {0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
// The magic is the first pickle: PROTO, maybe a FRAME header, then the LONG1.
constexpr size_t kMagicWithin = 16;

bool is_legacy_pickle(std::span<const std::byte> head) {
  if (head.empty() || static_cast<uint8_t>(head[0]) != 0x80) return false;
  const auto window = head.first(std::min(head.size(), kMagicWithin + kMagicLong.size()));
  return std::search(window.begin(), window.end(), kMagicLong.begin(), kMagicLong.end(), [](std::byte a, uint8_t b) {
           return static_cast<uint8_t>(a) == b;
         }) != window.end();
}

// A tar archive whose first member is one of those the old torch.save wrote.
bool is_legacy_tar(std::span<const std::byte> head) {
  if (head.size() < kLegacySniffBytes) return false;
  const auto text = [&](size_t at, size_t n) {
    return std::string(reinterpret_cast<const char*>(head.data()) + at, n);
  };
  if (text(257, 5) != "ustar") return false;
  const std::string name = text(0, 100).c_str();  // NUL-padded
  return name == "sys_info" || name == "pickle" || name == "storages" || name == "tensors";
}

}  // namespace

std::optional<std::string_view> legacy_checkpoint_kind(std::span<const std::byte> head) {
  if (is_legacy_pickle(head))
    return "a legacy PyTorch checkpoint (written before PyTorch 1.6, or with _use_new_zipfile_serialization=False: "
           "a sequence of pickles starting with the magic number 0x1950a86a20f9469cfc6c)";
  if (is_legacy_tar(head)) return "a legacy PyTorch checkpoint in the tar format of very old PyTorch versions";
  return std::nullopt;
}

}  // namespace wl::pytorch
