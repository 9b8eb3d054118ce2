// Loads into CUDA device memory against the machine's limits, for scripts/gpu-check.sh:
//   wl_bench_cuda DIR [--synth PRESET] [--reps N]
// --synth writes a synthetic F32 Llama checkpoint of PRESET ("2gb": 2.4 GB) into DIR first (and
// --reps 0 stops there: no GPU needed). Prints
// one tab-separated line per measurement: name, GB/s (file bytes per second; the H2D limit counts
// bytes copied), best seconds of N runs, and notes. The checkpoint should be in the page cache
// (the script reads it once before).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "weightloader/cuda.hpp"
#include "weightloader/error.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/synth.hpp"

namespace {

double seconds_of(const std::function<void()>& run, int reps) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw wl::Error(wl::ErrorCode::Io, fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

void print(const std::string& name, uint64_t bytes, double seconds, const std::string& notes) {
  fmt::print("{}\t{:.2f}\t{:.3f}\t{}\n", name, double(bytes) / seconds / 1e9, seconds, notes);
  std::fflush(stdout);
}

// cudaMemcpy from one pinned buffer, 256 MiB at a time: what the bus carries at best.
double h2d_seconds(uint64_t bytes, int reps) {
  constexpr uint64_t kPiece = 256ull << 20;
  void* host = nullptr;
  void* device = nullptr;
  check(cudaHostAlloc(&host, kPiece, cudaHostAllocDefault), "cudaHostAlloc");
  check(cudaMalloc(&device, bytes), "cudaMalloc");
  std::memset(host, 1, kPiece);
  const double s = seconds_of(
      [&] {
        for (uint64_t at = 0; at < bytes; at += kPiece)
          check(cudaMemcpy(static_cast<char*>(device) + at, host, std::min(kPiece, bytes - at), cudaMemcpyHostToDevice),
                "cudaMemcpy");
      },
      reps);
  cudaFree(device);
  cudaFreeHost(host);
  return s;
}

// Every file read with parallel preads into per-thread buffers: the page cache's limit here.
double page_cache_seconds(const std::vector<std::string>& files, int reps) {
  constexpr uint64_t kChunk = 8ull << 20;
  struct Piece {
    int fd;
    uint64_t offset, n;
  };
  std::vector<int> fds;
  std::vector<Piece> pieces;
  for (const std::string& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    if (fd < 0) throw wl::Error(wl::ErrorCode::Io, "cannot open", f);
    fds.push_back(fd);
    const uint64_t size = std::filesystem::file_size(f);
    for (uint64_t at = 0; at < size; at += kChunk) pieces.push_back({fd, at, std::min(kChunk, size - at)});
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const double s = seconds_of(
      [&] {
        std::atomic<size_t> next{0};
        std::vector<std::jthread> pool;
        for (unsigned t = 0; t < threads; ++t)
          pool.emplace_back([&] {
            std::vector<char> buf(kChunk);
            for (size_t i = next++; i < pieces.size(); i = next++)
              if (::pread(pieces[i].fd, buf.data(), pieces[i].n, static_cast<off_t>(pieces[i].offset)) < 0) std::abort();
          });
      },
      reps);
  for (int fd : fds) ::close(fd);
  return s;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    fmt::print(stderr, "usage: wl_bench_cuda DIR [--synth PRESET] [--reps N]\n");
    return 2;
  }
  const std::string dir = argv[1];
  int reps = 3;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--synth") {
      wl::SynthOptions synth;
      synth.shape = wl::LlamaShape::preset(argv[i + 1]);
      wl::write_synthetic_llama(dir, synth);
    } else if (std::string(argv[i]) == "--reps") {
      reps = std::stoi(argv[i + 1]);
    }
  }
  if (reps == 0) return 0;  // --synth only
  const wl::Context context = wl::with_cuda_devices({});
  const wl::LoaderChoice choice = wl::detect_loader(dir);
  auto probe = wl::WeightLoaderRegistry::with_builtins()->create(choice.name, choice.kwargs);
  auto source = probe->get_weights(dir);
  std::vector<std::string> files;
  uint64_t file_bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") {
      files.push_back(e.path().string());
      file_bytes += e.file_size();
    }

  fmt::print("measurement\tGB/s\tseconds\tnotes\n");
  print("h2d_limit", file_bytes, h2d_seconds(file_bytes, reps), "cudaMemcpy from pinned memory, 256 MiB pieces");
  print("page_cache_limit", file_bytes, page_cache_seconds(files, reps),
        fmt::format("pread, {} threads, 8 MiB", std::thread::hardware_concurrency()));
  for (wl::DType dtype : {wl::DType::F32, wl::DType::BF16}) {
    auto loader = wl::WeightLoaderRegistry::with_builtins()->create(choice.name, choice.kwargs);
    loader->dtype() = dtype;
    loader->options().context = context;
    loader->options().io.device = wl::Device::parse("cuda:0");
    wl::Model model = loader->mirror_model(*source);  // cudaMalloc outside the timing
    wl::LoadReport report;
    const double s = seconds_of([&] { report = loader->load_weights(model, *source); }, reps);
    print(fmt::format("weightloader_{}", dtype == wl::DType::F32 ? "f32" : "f32_to_bf16"), report.bytes_read, s,
          fmt::format("{} threads, {} io, pinned ring = staging bound = {} MiB, {} bytes on the device",
                      report.concurrency, report.io_mode,
                      loader->options().io.staging_bytes >> 20, report.bytes_written));
  }
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "wl_bench_cuda: {}\n", e.what());
  return 1;
}
