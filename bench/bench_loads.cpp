// Loads that the `weightloader` command does not do, for bench/run_all.py:
//   tp RANK WORLD PATH [IO]   tensor-parallel rank RANK of WORLD reads only its slices through
//                             WeightSource::read_all: rows of the column-parallel weights
//                             (q/k/v/gate/up projections, embeddings, lm_head), columns of the
//                             row-parallel ones (o_proj, down_proj); everything else whole.
//   naive PATH DTYPE          the seed's style: every tensor materialised into a dict first
//                             (WeightSource::load), then copied (converted) into the parameters.
//   reload PATH DTYPE IO      loads twice into the same model (through load_weights): the second
//                             load writes into memory already faulted in, as a weight refresh does.
// Each prints one JSON object: seconds, bytes read, parameter bytes, peak RSS.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "weightloader/weightloader.hpp"

namespace {

uint64_t peak_rss() {
  struct rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The dimension a tensor is split along for tensor parallelism, or -1 if every rank holds it all.
int split_dim(const wl::TensorInfo& t) {
  if (t.shape.size() != 2) return -1;
  for (const char* col : {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "embed_tokens", "lm_head"})
    if (contains(t.name, col)) return 0;
  for (const char* row : {"o_proj", "down_proj"})
    if (contains(t.name, row)) return 1;
  return -1;
}

std::unique_ptr<wl::WeightSource> open(const std::string& path, std::unique_ptr<wl::WeightLoader>& loader,
                                       wl::Kwargs extra = {}) {
  wl::LoaderChoice choice = wl::detect_loader(path);
  for (auto& [k, v] : extra) choice.kwargs[k] = v;
  loader = wl::WeightLoaderRegistry::with_builtins()->create(choice.name, choice.kwargs);
  return loader->get_weights(path);
}

int tp(unsigned rank, unsigned world, const std::string& path, const std::string& io) {
  std::unique_ptr<wl::WeightLoader> loader;
  auto source = open(path, loader, {{"io", io}});
  const auto start = std::chrono::steady_clock::now();
  std::vector<wl::TensorView> shards;
  std::vector<wl::ReadRequest> requests;
  uint64_t param_bytes = 0;
  for (const wl::TensorInfo& t : source->tensors()) {
    wl::Slice slice;
    const int dim = split_dim(t);
    if (dim >= 0) {
      const uint64_t n = t.shape[static_cast<size_t>(dim)], per = (n + world - 1) / world;
      slice = {static_cast<size_t>(dim), std::min<uint64_t>(n, rank * per), std::min<uint64_t>(n, (rank + 1) * per)};
    }
    shards.push_back(wl::TensorView::empty(t.dtype, source->slice_shape(t, slice)));
    requests.push_back({&t, slice, t.dtype, shards.back().raw()});
    param_bytes += shards.back().nbytes();
  }
  const wl::ReadStats stats = source->read_all(requests, loader->options().io);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{{\"rank\": {}, \"world\": {}, \"seconds\": {:.6f}, \"bytes_read\": {}, \"model_bytes\": {}, "
             "\"parameter_bytes\": {}, \"peak_rss_bytes\": {}, \"io_mode\": \"{}\"}}\n",
             rank, world, seconds, stats.bytes_read, source->total_bytes(), param_bytes, peak_rss(),
             wl::io_mode_name(stats.mode));
  return 0;
}

int reload(const std::string& path, const std::string& dtype, const std::string& io) {
  std::unique_ptr<wl::WeightLoader> loader;
  auto source = open(path, loader, {{"io", io}, {"dtype", dtype}});
  wl::Model model = loader->mirror_model(*source);
  const wl::LoadReport first = loader->load_weights(model, *source);
  const wl::LoadReport second = loader->load_weights(model, *source);
  fmt::print("{{\"first_seconds\": {:.6f}, \"seconds\": {:.6f}, \"bytes_read\": {}, \"gbps\": {:.4f}, \"io_mode\": \"{}\"}}\n",
             first.seconds, second.seconds, second.bytes_read, second.gbps(), second.io_mode);
  return 0;
}

int naive(const std::string& path, const std::string& dtype_name) {
  std::unique_ptr<wl::WeightLoader> loader;
  auto source = open(path, loader);
  const wl::DType dtype = *wl::parse_dtype_alias(dtype_name);
  wl::Model model;
  for (const wl::TensorInfo& t : source->tensors()) model.add_parameter(t.name, t.shape, dtype);
  const uint64_t before = peak_rss();
  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, wl::TensorView> dict;  // get_weights: the whole checkpoint in memory
  for (const wl::TensorInfo& t : source->tensors()) dict.emplace(t.name, source->load(t));
  for (wl::Parameter& p : model.parameters()) {  // load_weights: copy each into its parameter
    const wl::TensorView& t = dict.at(p.name);
    wl::convert(t.dtype(), t.raw(), p.dtype(), p.data.raw(), t.numel());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{{\"seconds\": {:.6f}, \"bytes_read\": {}, \"parameter_bytes\": {}, \"peak_rss_bytes\": {}, "
             "\"rss_before_load_bytes\": {}}}\n",
             seconds, source->total_bytes(), model.total_bytes(), peak_rss(), before);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 1, argv + argc);
    if (a.size() >= 4 && a[0] == "tp") return tp(std::stoul(a[1]), std::stoul(a[2]), a[3], a.size() > 4 ? a[4] : "auto");
    if (a.size() == 3 && a[0] == "naive") return naive(a[1], a[2]);
    if (a.size() == 4 && a[0] == "reload") return reload(a[1], a[2], a[3]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wl_bench_loads: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: wl_bench_loads tp RANK WORLD PATH [IO] | naive PATH DTYPE | reload PATH DTYPE IO\n");
  return 2;
}
