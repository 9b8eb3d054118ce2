// Checking a checkpoint's integrity: `weightloader verify`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "weightloader/byte_source.hpp"
#include "weightloader/export.hpp"
#include "weightloader/source.hpp"

namespace wl {

struct VerifyOptions {
  uint64_t window_bytes = 16ull << 20;  // values are scanned one window at a time
  IoOptions io;                          // reader threads, I/O mode, progress (tensor bytes)
};

struct WL_API TensorCheck {
  std::string name;
  std::string dtype;  // as stored
  Shape shape;
  uint64_t elements = 0;
  uint64_t nan = 0, inf = 0;
  bool all_zero = false;  // every value is 0 (and the tensor is not empty)
};

struct WL_API FileCheck {
  std::string name;                    // as the tensors name it
  std::string resolved;                // links followed (a Hugging Face cache blob)
  uint64_t size = 0;
  uint64_t tensor_end = 0;             // where its last tensor's bytes end, as the header claims
  std::optional<std::string> expected_sha256;  // the blob's name, when it is 64 hex digits
  std::optional<std::string> sha256;           // computed when there is one to compare with
};

struct WL_API VerifyReport {
  std::string origin, format;
  std::vector<TensorCheck> tensors;
  std::vector<FileCheck> files;
  std::optional<uint64_t> index_total_size;  // a sharded index's metadata.total_size
  uint64_t tensor_bytes = 0;                 // stored bytes of all tensors
  uint64_t bytes_read = 0;
  double seconds = 0.0;
  std::vector<std::string> findings;         // one line per problem; empty: the checkpoint is sound

  bool ok() const { return findings.empty(); }
  std::string to_json() const;
  std::string to_string(bool verbose = false) const;
};

// Reads every tensor once through the I/O engine (window by window, quantised tensors decoded)
// counting NaN and Inf values and finding all-zero tensors; compares each file's size with where
// its header says the last tensor ends, the sha256 of a Hugging Face cache blob (the file a
// snapshot links to, named by its sha256) with its name, and a sharded index's
// metadata.total_size with the tensors' bytes. Problems are findings, not errors; unreadable
// files still throw.
WL_API VerifyReport verify_checkpoint(const WeightSource& source, const VerifyOptions& options = {});

}  // namespace wl
