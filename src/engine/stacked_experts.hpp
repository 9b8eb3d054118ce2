// gpt-oss's experts (MoeConfig::Stacks::Interleaved), run from this rank's slice of transformers 5's
// stacks as tensor_parallel.cpp declares them: gate_up [experts, hidden, 2 x units] (unit u's gate
// in column 2u, its up in 2u + 1), gate_up_bias [experts, 2 x units], down [experts, units, hidden],
// down_bias [experts, hidden] (null on the ranks that do not add it); and Llama 4's
// (MoeConfig::Stacks::Halves): gate and up [experts, hidden, columns] (this rank's units the first
// `units` columns of each; both within one gate_up stack when its experts are whole), down as
// gpt-oss's, no biases. The stacks are stored as transformers multiplies them (x @ W), transposed
// against nn.Linear's [out, in].
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/thread_pool.hpp"
#include "weightloader/dtype.hpp"
#include "weightloader/engine/llama_config.hpp"

namespace wl {

struct StackedExperts {
  const std::byte *gate_up = nullptr, *down = nullptr;  // in the engine's dtype
  const float *gate_up_bias = nullptr, *down_bias = nullptr;
  uint64_t units = 0;  // this rank's units of each expert
  const std::byte *gate = nullptr, *up = nullptr;  // Llama 4's halves (gate_up null)
  uint64_t columns = 0;                            // their row length
};

// y[cols] = x[rows] @ w[rows, cols] (row-major, F32, BF16 or F16; each row `stride` elements apart,
// 0: cols), the columns shared by the threads.
void matvec_transposed(ThreadPool& pool, const std::byte* w, DType dtype, uint64_t rows, uint64_t cols, const float* x, float* y,
                       uint64_t stride = 0);

// out[hidden] = this rank's part of local expert `e`'s output for x[hidden] (its down bias added
// where this rank holds it): gate_up (2 x units floats) and act (units floats) are scratch.
void run_stacked_expert(ThreadPool& pool, const StackedExperts& s, uint64_t e, DType dtype, uint64_t hidden, const MoeConfig& moe,
                        const float* x, float* gate_up, float* act, float* out);

// The same for Llama 4's halves: act(x @ gate) * (x @ up) @ down, `act` the config's hidden_act.
void run_stacked_halves_expert(ThreadPool& pool, const StackedExperts& s, uint64_t e, DType dtype, uint64_t hidden,
                               const std::string& hidden_act, const float* x, float* gate_up, float* act, float* out);

}  // namespace wl
