// What a load did.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weightloader/dtype.hpp"
#include "weightloader/tensor.hpp"
#include "weightloader/export.hpp"

namespace wl {

struct ConvertedTensor {
  std::string name;
  std::string from;  // stored type, e.g. "F32" or "Q8_0"
  DType to;
};

struct ReshapedTensor {
  std::string name;
  Shape from;
  Shape to;
};

// What name_map=auto chose: the checkpoint's naming scheme and the model's, and how many of the
// model's names (parameters, or the checkpoint tensors their shards name) it explained.
struct WL_API NameMatch {
  std::string from, from_prefix;  // the checkpoint's scheme ("meta") and wrapper prefix ("module.")
  std::string to, to_prefix;      // the model's ("hf"; "vllm" when fused parameters were assembled)
  size_t matched = 0;
  size_t total = 0;
  std::string to_string() const;  // "auto (meta → hf), 21 of 21 matched"
};

struct WL_API LoadReport {
  std::string source;                     // where the weights came from
  std::string format;
  std::vector<std::string> loaded;        // parameter names that received data
  std::vector<ConvertedTensor> converted; // dtype changed on the way
  std::vector<ReshapedTensor> reshaped;   // element-count-preserving reshapes (allow_reshape)
  std::vector<std::string> skipped;       // checkpoint names dropped by the name mapping
  std::vector<std::string> missing;       // parameters nothing was loaded into (non-strict)
  std::vector<std::string> unexpected;    // checkpoint tensors no parameter takes (non-strict)
  uint64_t bytes_read = 0;                // bytes read from files
  uint64_t bytes_written = 0;             // bytes written into parameters
  uint64_t bytes_fetched = 0;             // bytes received over a network (remote checkpoints: the
                                          // headers and the reads), 0 for local files
  double seconds = 0;
  unsigned concurrency = 0;               // reader threads
  uint64_t staging_bytes = 0;             // staging memory used for conversion, at most
  uint64_t staging_bound = 0;             // the staging_bytes setting it stayed within
  std::string io_mode;                    // "pread", "direct", "uring", "mmap" (what ran, never "auto")
  std::string io_mode_reason;             // when io=auto chose: why
  std::vector<std::string> zero_copy;     // parameters backed by the file mapping (zero_copy=true)
  std::optional<NameMatch> names;         // name_map=auto: what it matched

  double gbps() const { return seconds > 0 ? double(bytes_read) / seconds / 1e9 : 0.0; }
  std::string to_string(bool verbose = false) const;  // human-readable summary
  std::string to_json() const;
  static LoadReport from_json(const std::string& json);  // to_json()'s output back (throws InvalidArgument)
};

}  // namespace wl
