// The GGUF quantisers alone, in memory: reads a raw little-endian float32 file, quantises all of
// it to TYPE (its length a multiple of the type's block) RUNS times and prints the best time in
// seconds. Run by bench/gguf_quantize.py beside gguf-py's quantize on the same values.
//
//     wl_bench_gguf_quantize FILE.f32 TYPE [RUNS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "formats/gguf/ggml_types.hpp"
#include "formats/gguf/quants.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FILE.f32 TYPE [RUNS]\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary | std::ios::ate);
  std::vector<float> x(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(x.data()), static_cast<std::streamsize>(x.size() * sizeof(float)));
  const std::string name = argv[2];
  const wl::gguf::GgmlTypeTraits* traits = nullptr;
  for (const wl::GgufQuantizedType& q : wl::gguf_quantized_types())
    if (wl::ggml_type_name(q.type) == name) traits = wl::gguf::ggml_type_traits(static_cast<uint32_t>(q.type));
  if (!traits || x.size() % traits->block_elems != 0) {
    std::fprintf(stderr, "%s: not a quantised type, or the file is not whole blocks of it\n", argv[2]);
    return 2;
  }
  std::vector<std::byte> out(x.size() / traits->block_elems * traits->block_bytes);
  const int runs = argc > 3 ? std::stoi(argv[3]) : 3;
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    wl::gguf::ggml_quantize(traits->type, x.data(), x.size(), out.data());
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("%.6f\n", best);
}
