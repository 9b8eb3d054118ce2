// The machine's own limits for moving N bytes, to put weightloader's figures in proportion:
//   memcpy    one thread, between two pre-touched buffers
//   pread     page-cache read of FILE into a pre-touched buffer, T threads, 4 MiB requests
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

  const Stat memcpy_stat = measure(runs, bytes, [&] { std::memcpy(b, a, bytes); });
  const Stat pread_stat = measure(runs, bytes, [&] {
    constexpr uint64_t kReq = 4 << 20;
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (uint64_t off = t * kReq; off < bytes; off += threads * kReq) {
          const uint64_t n = std::min(kReq, bytes - off);
          if (::pread(fd, a + off, n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) std::abort();
        }
      });
    for (auto& th : pool) th.join();
  });
  std::printf("{\"bytes\": %llu, \"threads\": %u, \"runs\": %d, %s, %s}\n", static_cast<unsigned long long>(bytes), threads,
              runs, json("memcpy", memcpy_stat).c_str(), json("pread_page_cache", pread_stat).c_str());
  return 0;
}
