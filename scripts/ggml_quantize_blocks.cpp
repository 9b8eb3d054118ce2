// For scripts/llama-cpp-check.sh: quantises the same pseudo-random F32 rows to every block type that
// ggml can quantise (ggml_quantize_chunk, what llama-quantize runs; an importance matrix of ones
// where the type requires one) and writes, per type, the blocks (<TYPE>.q) and ggml's own
// dequantisation of them (<TYPE>.f32, its type traits' to_float). Built against llama.cpp's ggml by
// that script, never by CMake.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ggml.h"

namespace {

constexpr int64_t kRows = 4, kCols = 512;  // rows of two 256-blocks: every type's block fits

// Values spanning several magnitudes and both signs, the same on every machine.
std::vector<float> rows() {
  std::vector<float> out(kRows * kCols);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < out.size(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = double(state >> 11) / double(1ull << 53);
    out[i] = float((u - 0.5) * std::exp2(double(i % 7) - 3.0));
  }
  return out;
}

bool write(const std::string& path, const void* data, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(data, 1, bytes, f) == bytes;
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  // ggml_init fills ggml's f16 tables, which to_float reads.
  ggml_context* ctx = ggml_init(ggml_init_params{/*mem_size=*/0, /*mem_buffer=*/nullptr, /*no_alloc=*/true});
  const std::vector<float> src = rows();
  const std::vector<float> ones(kCols, 1.0f);
  int written = 0;
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const auto type = static_cast<ggml_type>(t);
    const ggml_type_traits* traits = ggml_get_type_traits(type);
    if (!traits || !traits->type_name || !traits->is_quantized || !traits->to_float || ggml_blck_size(type) <= 1) continue;
    if (kCols % ggml_blck_size(type) != 0) continue;
    std::vector<uint8_t> blocks(ggml_row_size(type, kCols) * kRows);
    const float* imatrix = ggml_quantize_requires_imatrix(type) ? ones.data() : nullptr;
    if (ggml_quantize_chunk(type, src.data(), blocks.data(), 0, kRows, kCols, imatrix) != blocks.size()) continue;  // no quantiser
    std::vector<float> dense(kRows * kCols);
    traits->to_float(blocks.data(), dense.data(), kRows * kCols);
    const std::string name = traits->type_name;
    if (!write(dir + "/" + name + ".q", blocks.data(), blocks.size()) ||
        !write(dir + "/" + name + ".f32", dense.data(), dense.size() * sizeof(float))) {
      std::fprintf(stderr, "%s: cannot write %s's files\n", dir.c_str(), name.c_str());
      return 1;
    }
    std::printf("%s\n", name.c_str());
    ++written;
  }
  ggml_quantize_free();
  ggml_free(ctx);
  return written ? 0 : 1;
}
