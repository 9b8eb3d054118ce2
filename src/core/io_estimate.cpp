// The I/O engine's plan of a batch of reads without running it: bytes, threads and memory.
#include <algorithm>

#include "core/io_engine.hpp"
#include "core/io_memory.hpp"
#include "core/io_way.hpp"
#include "core/named_errors.hpp"

namespace wl {
namespace {

// Staging is not lowered below this to fit a budget: below it, reads get too small to be worth it.
constexpr uint64_t kLeastStagingBytes = 1ull << 20;

}  // namespace

FittedReads estimate_reads(const std::vector<ReadRequest>& requests, const SourceFiles& files, const IoOptions& options,
                           bool to_device, bool measure) {
  const PreparedReads r = prepare_reads(requests, files, options, !to_device, measure);
  uint64_t reader = 0;  // a network client's buffers, per thread
  for (const ByteSource* s : r.sources) reader = std::max(reader, s->memory_per_reader());
  uint64_t values = 0;  // what a device's pinned ring is sized by
  if (to_device)
    for (size_t i = 0; i < requests.size(); ++i) {
      const ReadRequest& q = requests[i];
      const Shape sliced = naming_file(r.params.files[r.source_of[i]], [&] { return slice_shape_of(*q.tensor, q.slice); });
      values += shape_numel(sliced) * dtype_size(q.dst_dtype);
    }
  auto host_bytes = [&](uint64_t staging, unsigned threads, IoPlan& plan) {
    PlanParams params = r.params;
    params.staging_bytes = staging;
    params.threads = threads;
    plan = plan_reads(requests, r.source_of, params);
    EngineMemory extra;
    extra.reader_bytes = reader;
    if (to_device) extra.ring_bytes = std::clamp<uint64_t>(values, 1, std::max<uint64_t>(staging, 1));
    if (options.verify_sha256) extra.digest_bytes = staging * r.sources.size();
    return engine_host_bytes(plan, params, extra);
  };
  uint64_t staging = options.staging_bytes;
  unsigned threads = r.params.threads;
  const uint64_t least = std::min(staging, kLeastStagingBytes);
  IoPlan plan;
  uint64_t host = host_bytes(staging, threads, plan);
  while (options.host_budget && host > options.host_budget && (staging > least || threads > 1)) {
    if (staging > least)
      staging = std::max(least, staging / 2);
    else
      threads = std::max(1u, threads / 2);
    host = host_bytes(staging, threads, plan);
  }

  FittedReads out;
  ReadEstimate& e = out.estimate;
  for (const Chunk& c : plan.chunks) e.file_bytes[r.params.files[c.source]] += c.src_bytes + c.aux_bytes;
  for (const Gather& g : plan.gathers) e.file_bytes[r.params.files[g.source]] += g.request->tensor->nbytes;
  for (const auto& [file, bytes] : e.file_bytes) e.bytes_read += bytes;
  e.threads = plan.threads;
  e.staging_bytes = staging;
  e.mode = r.way.mode;
  e.mode_reason = r.way.reason;
  e.host_bytes = host;
  IoPlan least_plan;
  e.min_host_bytes = host_bytes(least, 1, least_plan);
  e.bytes_per_s = measured_rate(r, e.rate_from);
  out.options = options;
  out.options.staging_bytes = staging;
  out.options.concurrency = threads;
  out.options.host_budget = 0;
  return out;
}

}  // namespace wl
