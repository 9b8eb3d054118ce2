#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "core/destination.hpp"

namespace wl {
namespace {

class HostMemory final : public Destination {
 public:
  bool in_place() const override { return true; }
  // Huge pages over the whole 2 MiB pages inside the range: memory the caller allocated (a torch
  // tensor's) would otherwise take one fault per 4 KiB, several times slower than the read itself
  // on machines whose THP setting is "madvise" (ours ask for them for their own buffers).
  void prepare(std::byte* p, uint64_t n) const override {
    constexpr uint64_t kHuge = 2ull << 20;
    const auto start = reinterpret_cast<uintptr_t>(p), stop = start + n;
    const uintptr_t huge_begin = (start + kHuge - 1) / kHuge * kHuge, huge_end = stop / kHuge * kHuge;
    if (huge_end > huge_begin) ::madvise(reinterpret_cast<void*>(huge_begin), huge_end - huge_begin, MADV_HUGEPAGE);
  }
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
