// Matrix-vector products for the engine: weights stored in F32, BF16 or F16, computed in F32.
// Rows are cut into blocks that all threads share; F32 blocks go to OpenBLAS's sgemv, BF16 and F16
// blocks to a Highway kernel that widens in registers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/thread_pool.hpp"
#include "weightloader/dtype.hpp"

namespace wl {

struct MatVec {
  const std::byte* w = nullptr;  // [rows, cols], row-major
  DType dtype = DType::F32;
  uint64_t rows = 0;
  uint64_t cols = 0;
  const float* x = nullptr;      // [cols]
  float* y = nullptr;            // [rows], overwritten
};

// Runs every product, all of them in one parallel step.
void run_matvecs(ThreadPool& pool, std::span<const MatVec> jobs);

// One product on the calling thread (a task of a parallel step its caller runs).
void matvec(const MatVec& m);

// y[cols] = the sum over r of x[r] * w[r, :] (x is [rows]): the transposed product, on the calling thread.
void transposed_matvec(const std::byte* w, DType dtype, uint64_t rows, uint64_t cols, const float* x, float* y);

// Keeps OpenBLAS to one thread per call: the engine's own pool provides the parallelism.
void init_blas_threads();

}  // namespace wl
