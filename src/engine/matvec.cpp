#include "engine/matvec.hpp"

#include "weightloader/engine/llm.hpp"

#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "engine/dot_hwy.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl {

namespace {

constexpr uint64_t kBlockElements = 1 << 15;  // 128 KiB of F32: stays in L2 while sgemv reads it

struct Block {
  const MatVec* job;
  uint64_t begin, end;  // rows
};

void run_block(const Block& b) {
  const MatVec& m = *b.job;
  const uint64_t rows = b.end - b.begin;
  const std::byte* w = m.w + b.begin * m.cols * dtype_size(m.dtype);
  if (m.dtype == DType::F32)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, int(rows), int(m.cols), 1.0f, reinterpret_cast<const float*>(w), int(m.cols),
                m.x, 1, 0.0f, m.y + b.begin, 1);
  else
    dot_rows_half(m.dtype, w, rows, m.cols, m.x, m.y + b.begin);
}

}  // namespace

// Exported by OpenBLAS's pthreads build (weak: the serial and OpenMP builds have no pool to stop).
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

void init_blas_threads() {
  static std::once_flag once;
  // Setting the count restarts a stopped pool: a process that stopped it is at one thread already.
  std::call_once(once, [] {
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
  });
}

void release_blas_threads() {
  init_blas_threads();
  if (blas_thread_shutdown_) blas_thread_shutdown_();
}

void matvec(const MatVec& m) { run_block({&m, 0, m.rows}); }

// BF16 and F16 weights are widened into this thread's buffer first: sgemv then reads them as F32.
void transposed_matvec(const std::byte* w, DType dtype, uint64_t rows, uint64_t cols, const float* x, float* y) {
  const float* w32 = reinterpret_cast<const float*>(w);
  if (dtype != DType::F32) {
    thread_local std::vector<float> widened;
    widened.resize(rows * cols);
    convert(dtype, w, DType::F32, widened.data(), rows * cols);
    w32 = widened.data();
  }
  cblas_sgemv(CblasRowMajor, CblasTrans, int(rows), int(cols), 1.0f, w32, int(cols), x, 1, 0.0f, y, 1);
}

void run_matvecs(ThreadPool& pool, std::span<const MatVec> jobs) {
  std::vector<Block> blocks;
  for (const MatVec& m : jobs) {
    const uint64_t step = std::max<uint64_t>(1, kBlockElements / std::max<uint64_t>(1, m.cols));
    for (uint64_t r = 0; r < m.rows; r += step) blocks.push_back({&m, r, std::min(m.rows, r + step)});
  }
  pool.run(blocks.size(), [&](size_t i) { run_block(blocks[i]); });
}

}  // namespace wl
