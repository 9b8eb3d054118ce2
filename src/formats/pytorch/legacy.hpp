// Recognising the checkpoints PyTorch wrote before 1.6, which this reader does not load.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace wl::pytorch {

// Bytes of the file's start that recognition needs (a tar header block).
inline constexpr size_t kLegacySniffBytes = 512;

// "a pickle sequence ..." / "a tar archive ..." when `head` (the file's first bytes) starts a
// legacy checkpoint; nullopt otherwise.
std::optional<std::string_view> legacy_checkpoint_kind(std::span<const std::byte> head);

}  // namespace wl::pytorch
