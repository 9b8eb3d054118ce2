// How a batch of reads will run, decided before any is made: the sources opened once each, the
// I/O mode (io=auto's choice from this machine's measured profile), the planner's parameters.
// Shared by the engine's run (core/io_engine.cpp) and its estimate (core/io_estimate.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/io_plan.hpp"
#include "weightloader/source.hpp"

namespace wl {

// The I/O mode, whether the destinations are prefaulted, and why.
struct Way {
  IoMode mode = IoMode::Pread;
  bool prefault = true;
  std::string reason;  // when io=auto chose
};

// A catalogue's files: their names by index (TensorInfo::source), and what opens them (a
// CachingOpener, so that every read shares one source per file).
struct SourceFiles {
  const std::vector<std::string>& names;
  const Opener& opener;
};

struct PreparedReads {
  std::vector<std::shared_ptr<ByteSource>> held;  // alive until the reads are done
  std::vector<ByteSource*> sources;               // each file the requests read, once, in order of first use
  std::vector<size_t> source_of;   // per request: its file's place in `sources`
  bool converts = false;           // some request decodes or converts
  Way way;
  PlanParams params;               // threads and staging as the options ask
};

// measure=false: io=auto and the prefault choice use only what the profile remembers (a plan
// reads nothing); true: a probe the profile lacks is taken now.
// InvalidArgument naming the tensor for a request whose file index `files` does not list.
PreparedReads prepare_reads(const std::vector<ReadRequest>& requests, const SourceFiles& files, const IoOptions& options,
                            bool in_place, bool measure);

// The rate this machine measured for reads the way `r` runs them, and in `from` which figure it
// was; nullopt when no profile remembers one (or the sources are not local files).
std::optional<double> measured_rate(const PreparedReads& r, std::string& from);

}  // namespace wl
