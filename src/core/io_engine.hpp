// The one I/O engine every read goes through: a pure planner (core/io_plan.hpp) cuts requests
// into chunks independent of tensor sizes and merges them into extents; the executor reads them
// in parallel through the byte sources' capabilities (preadv straight into place, O_DIRECT,
// mappings, plain positioned reads), converting through a small per-thread staging buffer.
#pragma once

#include <vector>

#include "core/destination.hpp"
#include "core/io_way.hpp"
#include "core/side_reads.hpp"
#include "weightloader/source.hpp"

namespace wl {

// Runs every request; throws the first error (naming source and tensor) once every reader has
// stopped. Cancels with ErrorCode::Cancelled when the progress callback returns false.
// `files` names and opens the tensors' files (TensorInfo::source indexes them).
// `side`: requests[i] with is_side[i] read side tensors into host memory (core/side_reads.hpp), planned
// with the rest; the decoders waiting for them are prepared once they are read, before any of
// their blocks is decoded.
struct SideTensorReads {
  const SideReads& reads;
  std::vector<char> is_side;  // per request
};
ReadStats run_reads(const std::vector<ReadRequest>& requests, const SourceFiles& files, const IoOptions& options,
                    const Destination& destination = host_memory(), const SideTensorReads* side = nullptr);

// What run_reads would do with the same requests, reading nothing (measure=false: nor probing):
// its plan's bytes per file, threads, staging and own host memory (core/io_memory.hpp). With
// options.host_budget, of the staging and threads lowered until that memory fits: staging halved
// down to 1 MiB (or the setting, when smaller), then threads halved. `to_device`: values go
// through a pinned ring of up to staging_bytes (WeightSource::read_all).
struct FittedReads {
  ReadEstimate estimate;
  IoOptions options;  // staging and concurrency as fitted, host_budget cleared: what to run
};
FittedReads estimate_reads(const std::vector<ReadRequest>& requests, const SourceFiles& files, const IoOptions& options,
                           bool to_device, bool measure);

}  // namespace wl
