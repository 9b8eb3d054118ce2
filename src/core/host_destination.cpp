#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "core/destination.hpp"

namespace wl {
namespace {

class HostMemory final : public Destination {
 public:
  bool in_place() const override { return true; }
  // MADV_POPULATE_WRITE: the page faults happen here, in parallel, before the reads.
  void prefault(std::byte* p, uint64_t n) const override {
    static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const auto start = reinterpret_cast<uintptr_t>(p), stop = start + n;
    const uintptr_t begin = start / page * page, end = (stop + page - 1) / page * page;
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
  }
  void deliver(std::byte* dst, const std::byte* values, uint64_t n, std::string_view) const override {
    std::memcpy(dst, values, n);
  }
};

}  // namespace

const Destination& host_memory() {
  static const HostMemory host;
  return host;
}

}  // namespace wl
