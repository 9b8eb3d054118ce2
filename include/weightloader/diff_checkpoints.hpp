// Comparing two checkpoints of any formats tensor by tensor: `weightloader diff`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weightloader/export.hpp"
#include "weightloader/source.hpp"

namespace wl {

struct DiffOptions {
  // Values a (first) and b (second) agree when |a - b| <= atol + rtol * |b| (numpy's isclose);
  // NaN agrees with NaN (numpy.testing.assert_allclose's equal_nan), an infinity with the same one.
  double atol = 0.0;
  double rtol = 0.0;
  uint64_t window_bytes = 16ull << 20;  // memory per side: values are compared one window at a time
  IoOptions io;                          // reader threads, I/O mode, progress
};

// One tensor found under the same (normalised) name on both sides.
struct WL_API TensorDiff {
  std::string name;
  std::string dtype_a, dtype_b;  // as stored ("F32", "Q8_0", ...)
  Shape shape_a, shape_b;
  bool equal_bits = false;       // same stored type and every value identical (compared as F32 or F64)
  double max_abs_diff = 0.0;     // over finite pairs
  double max_rel_diff = 0.0;     // |a - b| / |b| over finite pairs with b != 0
  uint64_t beyond_tolerance = 0; // values that do not agree (NaN against a number counts)
  uint64_t elements = 0;

  bool shape_differs() const { return shape_a != shape_b; }
  bool dtype_differs() const { return dtype_a != dtype_b; }
  bool matches() const { return !shape_differs() && beyond_tolerance == 0; }
};

struct WL_API DiffReport {
  std::string a, b;                 // the two origins
  double atol = 0.0, rtol = 0.0;
  std::vector<TensorDiff> tensors;  // in a's order
  std::vector<std::string> only_in_a, only_in_b;
  uint64_t bytes_read = 0;
  double seconds = 0.0;

  // Every common tensor within tolerance and no name on one side only.
  bool matches() const;
  std::string to_json() const;
  std::string to_string(bool verbose = false) const;  // the differing tensors (all with verbose) and a summary
};

// Streams both checkpoints through the I/O engine (one window of values per side at a time;
// quantised tensors decoded by their decoders) after normalising both sides' names
// (with_normalised_names), so that a GGUF file and its Hugging Face original compare equal.
// Values are compared as F64 when either side is 64-bit, else as F32.
WL_API DiffReport diff_checkpoints(const WeightSource& a, const WeightSource& b, const DiffOptions& options = {});

}  // namespace wl
