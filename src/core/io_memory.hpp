// The I/O engine's own host memory for a plan: what its threads' scratch, its whole-tensor
// gathers, mapped windows, the pinned ring and verify's copies can hold at once. A pure function
// of the plan, as the executor (core/io_engine.cpp) allocates: keep the two in step.
#pragma once

#include <cstdint>

#include "core/io_plan.hpp"

namespace wl {

struct EngineMemory {
  uint64_t ring_bytes = 0;    // pinned buffers of a device destination
  uint64_t digest_bytes = 0;  // verify=sha256: copies kept for hashing, all sources together
  uint64_t reader_bytes = 0;  // each thread's, besides its scratch: the most any source holds per reader
};

// Bytes at most, all threads together, for `plan` made with `params`.
uint64_t engine_host_bytes(const IoPlan& plan, const PlanParams& params, const EngineMemory& extra);

}  // namespace wl
