#include "weightloader/byte_source.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

uint64_t ByteSource::read_up_to(uint64_t offset, void* dst, uint64_t length) const {
  uint64_t got = 0;
  while (got < length) {  // a source may return short reads before its end; 0 is the end
    const uint64_t n = read_some(offset + got, static_cast<std::byte*>(dst) + got, length - got);
    if (n == 0) break;
    got += n;
  }
  return got;
}

void ByteSource::read_exact(uint64_t offset, void* dst, uint64_t length) const {
  const uint64_t got = read_up_to(offset, dst, length);
  if (got != length)
    throw Error(ErrorCode::Truncated,
                fmt::format("ended early: wanted bytes [{}, {}) but only {} could be read (the source may have "
                            "shrunk while loading)",
                            offset, offset + length, got),
                name());
}

std::string ByteSource::read_string(uint64_t offset, uint64_t length) const {
  std::string out(length, '\0');
  read_exact(offset, out.data(), length);
  return out;
}

uint64_t ByteSource::read_some_scattered(uint64_t offset, const ReadBuffer* buffers, size_t count) const {
  for (size_t i = 0; i < count; ++i) {
    if (!buffers[i].length) continue;
    if (buffers[i].data) return read_some(offset, buffers[i].data, buffers[i].length);
    std::vector<std::byte> dropped(std::min<uint64_t>(buffers[i].length, 64u << 10));  // a gap
    return read_some(offset, dropped.data(), dropped.size());
  }
  return 0;
}

uint64_t ByteSource::read_direct(uint64_t, void*, uint64_t) const {
  throw Error(ErrorCode::Io, "this source has no O_DIRECT reads (use io=pread)", name());
}

void ByteSource::queue_direct(UringQueue&, uint64_t, void*, uint64_t, uint64_t) const {
  throw Error(ErrorCode::Io, "this source has no O_DIRECT reads to queue on io_uring (use io=pread)", name());
}

std::string Opener::join(const std::string& directory, const std::string& relative) const {
  if (directory.empty() || directory == ".") return relative;
  return directory.back() == '/' ? directory + relative : directory + "/" + relative;
}

std::string Opener::parent(const std::string& name) const {
  const size_t slash = name.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : name.substr(0, slash);
}

}  // namespace wl
