// The I/O modes' names (declared with IoMode in weightloader/source.hpp).
#include "weightloader/source.hpp"

namespace wl {

std::string_view io_mode_name(IoMode mode) {
  switch (mode) {
    case IoMode::Auto: return "auto";
    case IoMode::Mmap: return "mmap";
    case IoMode::Pread: return "pread";
    case IoMode::Direct: return "direct";
    case IoMode::Uring: return "uring";
  }
  return "?";
}

std::optional<IoMode> parse_io_mode(std::string_view name) {
  for (IoMode m : {IoMode::Auto, IoMode::Mmap, IoMode::Pread, IoMode::Direct, IoMode::Uring})
    if (io_mode_name(m) == name) return m;
  return std::nullopt;
}

}  // namespace wl
