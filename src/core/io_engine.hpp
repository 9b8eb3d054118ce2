// The one I/O engine every read goes through: requests are cut into chunks independent of
// tensor sizes, read in parallel with pread straight into the destination when no conversion is
// needed, or through a small per-thread staging buffer that the conversion kernel drains.
#pragma once

#include <cstdint>
#include <vector>

#include "core/file.hpp"
#include "weightloader/source.hpp"

namespace wl {

// Runs every request; throws the first error (naming file and tensor). Cancels with
// ErrorCode::Cancelled when the progress callback returns false.
ReadStats run_reads(const std::vector<ReadRequest>& requests, FileCache& files, const IoOptions& options);

// Bytes the engine reads from disk for a slice of a tensor.
uint64_t stored_bytes_of_slice(const TensorInfo& tensor, const Slice& slice);

}  // namespace wl
