// The engine's matrix-vector products against a plain double-precision loop, for every stored dtype,
// with row lengths that leave SIMD tails and row counts that split over threads unevenly.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/matvec.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl {
namespace {

TEST(MatVec, EveryDtypeMatchesAPlainLoop) {
  init_blas_threads();
  ThreadPool pool(3);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    for (uint64_t cols : {1u, 7u, 64u, 173u, 1000u}) {
      const uint64_t rows = 301;
      std::vector<float> w(rows * cols), x(cols);
      for (float& v : w) v = dist(rng);
      for (float& v : x) v = dist(rng);
      std::vector<std::byte> stored(w.size() * dtype_size(dtype));
      convert(DType::F32, w.data(), dtype, stored.data(), w.size());
      std::vector<float> exact(w.size());  // the values as stored
      convert(dtype, stored.data(), DType::F32, exact.data(), w.size());
      std::vector<float> y(rows, NAN), y2(cols % 2 + 5, NAN);
      const MatVec jobs[] = {{stored.data(), dtype, rows, cols, x.data(), y.data()},
                             {stored.data(), dtype, y2.size(), cols, x.data(), y2.data()}};
      run_matvecs(pool, jobs);
      for (uint64_t r = 0; r < rows; ++r) {
        double want = 0;
        for (uint64_t c = 0; c < cols; ++c) want += double(exact[r * cols + c]) * x[c];
        ASSERT_NEAR(y[r], want, 1e-4 * std::sqrt(double(cols))) << dtype_name(dtype) << " cols " << cols << " row " << r;
        if (r < y2.size()) {
          ASSERT_NEAR(y2[r], want, 1e-4 * std::sqrt(double(cols)));
        }
      }
    }
  }
}

TEST(MatVec, TransposedProductMatchesAPlainLoop) {
  init_blas_threads();
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    const uint64_t rows = 9, cols = 37;
    std::vector<float> w(rows * cols), x(rows);
    for (float& v : w) v = dist(rng);
    for (float& v : x) v = dist(rng);
    std::vector<std::byte> stored(w.size() * dtype_size(dtype));
    convert(DType::F32, w.data(), dtype, stored.data(), w.size());
    std::vector<float> exact(w.size());
    convert(dtype, stored.data(), DType::F32, exact.data(), w.size());
    std::vector<float> y(cols, NAN);
    transposed_matvec(stored.data(), dtype, rows, cols, x.data(), y.data());
    for (uint64_t c = 0; c < cols; ++c) {
      double want = 0;
      for (uint64_t r = 0; r < rows; ++r) want += double(exact[r * cols + c]) * x[r];
      ASSERT_NEAR(y[c], want, 1e-5) << dtype_name(dtype) << " column " << c;
    }
  }
}

}  // namespace
}  // namespace wl
