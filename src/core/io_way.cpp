#include "core/io_way.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "core/io_probe.hpp"
#include "core/uring_queue.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

// The share of the sources' bytes in the page cache.
double cached_fraction(const std::vector<ByteSource*>& sources) {
  uint64_t size = 0, cached = 0;
  for (const ByteSource* s : sources) {
    size += s->size();
    cached += s->resident_bytes().value_or(0);
  }
  return size ? double(cached) / double(size) : 1.0;
}

const ByteSource* largest_of(const std::vector<ByteSource*>& sources) {
  const ByteSource* largest = nullptr;
  for (const ByteSource* s : sources)
    if (!largest || s->size() > largest->size()) largest = s;
  return largest;
}

bool all_local(const std::vector<ByteSource*>& sources) {
  return std::all_of(sources.begin(), sources.end(), [](const ByteSource* s) { return s->kind() == SourceKind::LocalFile; });
}

bool has_mapping(const ByteSource& s) { return s.size() == 0 || s.mapping() != nullptr; }

// io=auto: sources that are not local files are copied out of memory when they are memory, else
// read with positioned reads. Files mostly in the page cache are read the way this machine measured
// fastest for cached bytes, straight or converting (core/io_probe's memory probe: pread or mmap,
// prefaulted or not); otherwise with whichever of O_DIRECT (one read at a time per thread, or on
// io_uring where it measured faster and the kernel allows it now) and buffered reads this device
// measured faster (the storage probe). Without a probe: pread when cached, O_DIRECT when not (it
// leaves the page cache alone) unless the file system refuses it, prefaulting. An explicit
// prefault= wins; an explicit mode gets the prefault its probe measured faster.
Way choose_way(const std::vector<ByteSource*>& sources, const IoOptions& options, bool converts, bool measure) {
  std::string reason;
  const ByteSource* largest = largest_of(sources);
  const bool all_files = all_local(sources);
  // Asked only where mmap is a candidate: asking maps a file.
  auto all_mapped = [&] { return std::all_of(sources.begin(), sources.end(), [](const ByteSource* s) { return has_mapping(*s); }); };
  auto memory = [&]() { return largest && all_files ? memory_probe(*largest, measure) : std::nullopt; };
  auto measured_prefault = [&](IoMode mode) {
    if (options.prefault) return *options.prefault;
    if (mode != IoMode::Pread && mode != IoMode::Mmap) return true;  // direct and network reads prefault in the background
    const std::optional<MemoryProbe> probe = memory();
    if (!probe) return true;
    const bool prefault = probe->prefault(mode, converts);
    reason += fmt::format("{}{} (measured faster here for {} reads)", reason.empty() ? "" : "; ", prefault ? "prefault" : "no prefault",
                          converts ? "converting" : "straight");
    return prefault;
  };
  if (options.mode != IoMode::Auto) return {options.mode, measured_prefault(options.mode), reason};
  if (!all_files) {
    const bool mapped = all_mapped();
    reason = mapped ? "auto: sources in memory, copied out of it" : "auto: not every source is a local file: positioned reads";
    const IoMode mode = mapped ? IoMode::Mmap : IoMode::Pread;
    return {mode, options.prefault.value_or(true), reason};
  }
  const bool direct_ok = std::all_of(sources.begin(), sources.end(), [](const ByteSource* s) { return s->supports_direct(); });
  const double frac = cached_fraction(sources);
  reason = fmt::format("auto: {:.0f}% of the file bytes in the page cache", frac * 100);
  if (frac >= 0.5) {
    const std::optional<MemoryProbe> probe = all_mapped() ? memory() : std::nullopt;
    if (!probe) return {IoMode::Pread, measured_prefault(IoMode::Pread), reason};
    const MemoryProbe::Way best = probe->best(converts);
    reason += fmt::format("; {}{}: the fastest way measured here for {} reads of cached bytes ({:.2f} GB/s)",
                          io_mode_name(best.mode), best.prefault ? ", prefault" : ", no prefault",
                          converts ? "converting" : "straight", best.gbps);
    return {best.mode, options.prefault.value_or(best.prefault), reason};
  }
  if (!direct_ok) {
    reason += ", O_DIRECT refused by the file system";
    return {IoMode::Pread, measured_prefault(IoMode::Pread), reason};
  }
  const std::optional<StorageProbe> probe = largest ? storage_probe(*largest, measure) : std::nullopt;
  if (!probe) return {IoMode::Direct, true, reason};
  reason += fmt::format(", this device measured O_DIRECT {:.2f} GB/s, buffered {:.2f} GB/s", probe->direct_gbps,
                        probe->buffered_gbps);
  // O_DIRECT on io_uring where it measured clearly faster than a read at a time per thread.
  bool uring = false;
  if (probe->uring_gbps > 0) {
    reason += fmt::format(", O_DIRECT on io_uring {:.2f} GB/s", probe->uring_gbps);
    if (probe->uring_gbps > 1.05 * probe->direct_gbps) {
      const int refused = uring_refusal();
      if (refused) reason += fmt::format(" (but io_uring is refused now: {})", std::strerror(refused));
      uring = !refused;
    }
  }
  const double direct_gbps = uring ? probe->uring_gbps : probe->direct_gbps;
  // O_DIRECT unless buffered reads measured clearly faster: it keeps the page cache for other work.
  if (probe->buffered_gbps > 1.05 * direct_gbps) return {IoMode::Pread, measured_prefault(IoMode::Pread), reason};
  return {uring ? IoMode::Uring : IoMode::Direct, true, reason};
}

// The way that runs, checked against what every source can do.
Way resolve_way(const std::vector<ByteSource*>& sources, const IoOptions& options, bool converts, bool measure) {
  const Way way = choose_way(sources, options, converts, measure);
  for (const ByteSource* s : sources) {
    if (reads_direct(way.mode) && !s->supports_direct())
      throw Error(ErrorCode::Io, "this source does not support O_DIRECT reads (use io=pread or io=auto)", s->name());
    if (way.mode == IoMode::Mmap && !has_mapping(*s))
      throw Error(ErrorCode::InvalidArgument, "this source cannot be mapped (use io=pread or io=auto)", s->name());
  }
  if (way.mode == IoMode::Uring && !sources.empty())
    if (const int err = uring_refusal())
      throw Error(ErrorCode::Io,
                  fmt::format("io=uring: the kernel refuses io_uring (io_uring_setup: {}; seccomp, the io_uring_disabled "
                              "sysctl or a kernel before 5.1); use io=direct or io=auto",
                              std::strerror(err)),
                  sources.front()->name())
          .set_os_errno(err);
  return way;
}
}  // namespace

PreparedReads prepare_reads(const std::vector<ReadRequest>& requests, const SourceFiles& files, const IoOptions& options,
                            bool in_place, bool measure) {
  PreparedReads r;
  r.source_of.resize(requests.size());
  constexpr size_t kUnopened = SIZE_MAX;
  std::vector<size_t> opened(files.names.size(), kUnopened);  // per file index: its place in r.sources
  for (size_t i = 0; i < requests.size(); ++i) {
    const TensorInfo& t = *requests[i].tensor;
    if (t.source >= files.names.size())
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("file index {} is not one of the {} files of its catalogue", t.source, files.names.size()), {},
                  t.name);
    size_t& at = opened[t.source];
    if (at == kUnopened) {
      at = r.sources.size();
      r.held.push_back(files.opener.open(files.names[t.source]));
      r.sources.push_back(r.held.back().get());
      r.params.files.push_back(files.names[t.source]);
    }
    r.source_of[i] = at;
  }
  r.converts = std::any_of(requests.begin(), requests.end(), [](const ReadRequest& q) {
    return q.tensor->decoder || q.dst_dtype != q.tensor->dtype;
  });
  r.way = resolve_way(r.sources, options, r.converts, measure);

  PlanParams& params = r.params;
  params.mode = r.way.mode;
  params.prefault = r.way.prefault;
  params.in_place = in_place;
  params.staging_bytes = options.staging_bytes;
  params.chunk_bytes = options.chunk_bytes;
  unsigned preferred = 0;
  for (const ByteSource* s : r.sources) {
    params.costs.push_back(s->request_cost());
    if (!options.chunk_bytes) params.chunk_bytes = std::max(params.chunk_bytes, s->preferred_request_bytes());
    preferred = std::max(preferred, s->preferred_concurrency());
    if (options.verify_sha256) params.whole.emplace_back(s->size());
  }
  if (!params.chunk_bytes) params.chunk_bytes = 8ull << 20;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  // Direct reads wait on the device, not the CPU: keep at least 4 requests in flight. io=uring keeps
  // many in flight from each thread's ring: one thread per core, for the copies and conversions.
  params.threads = options.concurrency ? options.concurrency
                   : preferred         ? preferred
                   : params.mode == IoMode::Direct ? std::max(4u, hw)
                                                   : hw;
  return r;
}

std::optional<double> measured_rate(const PreparedReads& r, std::string& from) {
  const ByteSource* largest = largest_of(r.sources);
  if (!largest || !all_local(r.sources)) return std::nullopt;
  const IoMode mode = r.way.mode;
  if (mode == IoMode::Mmap || (mode == IoMode::Pread && cached_fraction(r.sources) >= 0.5)) {
    const std::optional<MemoryProbe> probe = memory_probe(*largest, false);
    if (!probe) return std::nullopt;
    for (const MemoryProbe::Way& w : r.converts ? probe->converting : probe->raw)
      if (w.mode == mode && w.prefault == r.way.prefault) {
        from = fmt::format("memory probe: {}{}, {} reads of cached bytes", io_mode_name(mode),
                           w.prefault ? " prefault" : "", r.converts ? "converting" : "straight");
        return w.gbps * 1e9;
      }
    return std::nullopt;
  }
  const std::optional<StorageProbe> probe = storage_probe(*largest, false);
  if (!probe) return std::nullopt;
  const double gbps = mode == IoMode::Direct  ? probe->direct_gbps
                      : mode == IoMode::Uring ? probe->uring_gbps
                                              : probe->buffered_gbps;
  if (gbps <= 0) return std::nullopt;  // io_uring refused when the probe measured
  from = mode == IoMode::Direct  ? "storage probe: O_DIRECT reads"
         : mode == IoMode::Uring ? "storage probe: O_DIRECT reads on io_uring"
                                 : "storage probe: buffered reads";
  return gbps * 1e9;
}

}  // namespace wl
