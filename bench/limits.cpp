// The machine's own limits for moving N bytes, to put weightloader's figures in proportion:
//   memcpy    one thread, between two pre-touched buffers
//   pread     page-cache read of FILE into a pre-touched buffer, T threads, 4 MiB requests
//   reused    page-cache read of FILE through one reused 4 MiB buffer, 1 thread (no page faults)
//   fresh_*   as pread, into freshly mapped memory (the cost of page faults, timed with the read):
//             4k pages (MADV_NOHUGEPAGE), transparent huge pages (MADV_HUGEPAGE), and huge pages
//             pre-faulted by T threads with MADV_POPULATE_WRITE before the reads
// Prints one JSON object; each figure is the median of R runs with min and max for the spread.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace {

struct Stat {
  double median, min, max;
};

template <typename Fn>
Stat measure(int runs, uint64_t bytes, Fn&& fn) {
  std::vector<double> gbps;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbps.push_back(double(bytes) / s / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  return {gbps[gbps.size() / 2], gbps.front(), gbps.back()};
}

std::byte* touched_buffer(uint64_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  std::memset(p, 1, bytes);
  return static_cast<std::byte*>(p);
}

std::string json(const char* name, Stat s) {
  return fmt::format("\"{}\": {{\"gbps\": {:.3f}, \"min\": {:.3f}, \"max\": {:.3f}}}", name, s.median, s.min, s.max);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: wl_limits FILE [threads=2] [runs=5]\n");
    return 2;
  }
  const std::string path = argv[1];
  const unsigned threads = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 2;
  const int runs = argc > 3 ? std::atoi(argv[3]) : 5;
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    std::perror(path.c_str());
    return 1;
  }
  const uint64_t bytes = static_cast<uint64_t>(::lseek(fd, 0, SEEK_END));
  std::byte* a = touched_buffer(bytes);
  std::byte* b = touched_buffer(bytes);

  auto parallel_pread = [&](std::byte* dst) {
    constexpr uint64_t kReq = 4 << 20;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (uint64_t off = t * kReq; off < bytes; off += threads * kReq) {
          const uint64_t n = std::min(kReq, bytes - off);
          if (::pread(fd, dst + off, n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) std::abort();
        }
      });
    for (auto& th : pool) th.join();
  };
  auto fresh = [&](int advice, bool prefault) {
    return measure(runs, bytes, [&] {
      void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) std::abort();
      auto* dst = static_cast<std::byte*>(p);
      ::madvise(p, bytes, advice);
      if (prefault) {
        std::vector<std::thread> pool;
        const uint64_t per = (bytes / threads + 4095) / 4096 * 4096;
        for (unsigned t = 0; t < threads; ++t)
          pool.emplace_back([&, t] {
            const uint64_t at = std::min<uint64_t>(bytes, t * per);
            ::madvise(dst + at, std::min(per, bytes - at), MADV_POPULATE_WRITE);
          });
        for (auto& th : pool) th.join();
      }
      parallel_pread(dst);
      ::munmap(p, bytes);
    });
  };
  const Stat fresh_4k = fresh(MADV_NOHUGEPAGE, false);
  const Stat fresh_thp = fresh(MADV_HUGEPAGE, false);
  const Stat fresh_prefault = fresh(MADV_HUGEPAGE, true);
  const Stat reused = measure(runs, bytes, [&] {
    constexpr uint64_t kReq = 4 << 20;
    for (uint64_t off = 0; off < bytes; off += kReq)
      if (::pread(fd, a, std::min(kReq, bytes - off), static_cast<off_t>(off)) < 0) std::abort();
  });
  const Stat memcpy_stat = measure(runs, bytes, [&] { std::memcpy(b, a, bytes); });
  const Stat pread_stat = measure(runs, bytes, [&] { parallel_pread(a); });
  std::printf("{\"bytes\": %llu, \"threads\": %u, \"runs\": %d, %s, %s, %s, %s, %s, %s}\n",
              static_cast<unsigned long long>(bytes), threads, runs, json("memcpy", memcpy_stat).c_str(),
              json("pread_page_cache", pread_stat).c_str(), json("reused_buffer", reused).c_str(),
              json("fresh_4k", fresh_4k).c_str(), json("fresh_thp", fresh_thp).c_str(),
              json("fresh_prefault", fresh_prefault).c_str());
  return 0;
}
