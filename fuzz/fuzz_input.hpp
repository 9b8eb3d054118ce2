// Shared by the fuzz targets: the fuzzer's bytes as a file, for parsers that only take a path.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace wl::fuzz {

// The bytes as the contents of one in-memory file (a memfd reused for every input), named by a
// path that File can open.
inline std::string as_file(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("wl-fuzz-input", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0 || (size > 0 && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)))
    std::abort();
  return "/proc/self/fd/" + std::to_string(fd);
}

// A directory of this process's own under $TMPDIR (scripts/fuzz.sh points it at /dev/shm and
// removes it), for parsers that read a file by its name inside a folder.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("wl-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

inline void write_file(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) std::abort();
}

}  // namespace wl::fuzz
