// One MPI rank's load of a Llama checkpoint, for bench/mpi_tp_ranks.py (run under mpirun):
//   mpi_load_ranks PATH                each rank reads only its slice (LLM over an MpiCommunicator)
//   mpi_load_ranks PATH --load-whole   the common approach: each rank reads the whole checkpoint into
//                                      memory (every tensor, as a state dict), then copies its slice
//                                      into its parameters and frees the rest
// Rank 0 prints one JSON object with every rank's bytes read, seconds, peak RSS, the bytes of its
// slice, the staging bound, and the RSS the process had before loading anything.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "weightloader/engine/llm.hpp"
#include "weightloader/loader.hpp"
#include "weightloader/engine/mpi.hpp"
#include "weightloader/registry.hpp"

namespace {

uint64_t peak_rss() {
  struct rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

uint64_t current_rss() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Reads every tensor whole into a mirror of the checkpoint, then loads this rank's slice from that
// memory through the LLM's own loader (the same names, slices and fused shards).
wl::LoadReport load_whole_then_slice(wl::LLM& llm, unsigned rank, const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<wl::WeightLoader> loader = wl::WeightLoaderRegistry::with_builtins()->create("hf");
  std::unique_ptr<wl::WeightSource> file = loader->get_weights(path);
  wl::LoadReport whole;
  std::unique_ptr<wl::WeightSource> memory;
  {
    auto dict = std::make_shared<wl::Model>(loader->mirror_model(*file));
    whole = loader->load_weights(*dict, *file);
    std::vector<wl::MemoryTensor> tensors;
    for (wl::Parameter& p : dict->parameters()) tensors.push_back({p.name, p.dtype(), p.shape(), {}, p.data.raw(), dict});
    memory = wl::WeightSource::from_memory("<state dict>", std::move(tensors), file->metadata());
  }
  llm.load_rank(rank, *memory);
  memory.reset();  // the state dict goes with it
  whole.seconds = seconds_since(start);
  return whole;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mpi_load_ranks PATH [--load-whole]\n");
    return 2;
  }
  const std::string path = argv[1];
  const bool whole = argc > 2 && std::string(argv[2]) == "--load-whole";
  auto comm = std::make_shared<wl::MpiCommunicator>();
  try {
    const uint64_t base_rss = current_rss();
    wl::LLMOptions o;
    o.model = path;
    o.weight_loader = "hf";
    o.communicator = comm;
    o.threads = 1;
    o.defer_load = whole;
    const auto start = std::chrono::steady_clock::now();
    wl::LLM llm(o);
    wl::LoadReport report = whole ? load_whole_then_slice(llm, comm->rank(), path) : llm.load_reports().at(comm->rank());
    if (!whole) report.seconds = seconds_since(start);  // the whole construction: catalogue, agreement, reads
    const nlohmann::json mine{{"bytes_read", report.bytes_read},
                              {"seconds", report.seconds},
                              {"peak_rss", peak_rss()},
                              {"base_rss", base_rss},
                              {"slice_bytes", llm.rank_model(comm->rank()).total_bytes()},
                              {"staging_bound", report.staging_bound}};
    const std::vector<std::string> all = wl::all_gather_strings(*comm, mine.dump());
    if (comm->rank() == 0) {
      nlohmann::json out{{"mode", whole ? "load-whole" : "slices"}, {"ranks", comm->size()}, {"per_rank", nlohmann::json::array()}};
      for (const std::string& s : all) out["per_rank"].push_back(nlohmann::json::parse(s));
      std::printf("%s\n", out.dump().c_str());
    }
  } catch (const std::exception& e) {
    comm->abort(e.what());
  }
  return 0;
}
