// Splitting "<prefix><N>.<rest>" names (model.layers.3.mlp..., blk.3.ffn_up..., layers.3....):
// shared by the naming schemes (src/naming), the "gguf" one among them.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace wl {

// (N, rest) when `name` is `prefix` + a decimal layer number + "." + rest; nullopt otherwise.
inline std::optional<std::pair<std::string_view, std::string_view>> split_layer_name(std::string_view name,
                                                                                      std::string_view prefix) {
  if (!name.starts_with(prefix)) return std::nullopt;
  name.remove_prefix(prefix.size());
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos) return std::nullopt;
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + dot, n);
  if (ec != std::errc() || end != name.data() + dot) return std::nullopt;
  return std::pair{name.substr(0, dot), name.substr(dot + 1)};
}

}  // namespace wl
