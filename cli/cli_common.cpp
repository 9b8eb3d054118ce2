#include "cli_common.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "weightloader/checkpoint_names.hpp"
#include "weightloader/linked_components.hpp"
#include "weightloader/format.hpp"
#include "weightloader/error.hpp"

namespace wl::cli {

namespace {

// --name-map: the name_map kwarg.
void add_name_map_option(CLI::App& app, std::string& name_map) {
  app.add_option("--name-map", name_map,
                 "auto: recognise the checkpoint's naming scheme (hf, meta, torchtune, gguf; wrapper prefixes such as "
                 "module. or _orig_mod.) and map it onto Hugging Face's / the model's, q/k rows included; explicit: "
                 "only --kw strip_prefix/rename/... (same as --kw name_map=)")
      ->check(CLI::IsMember({"auto", "explicit"}));
}

}  // namespace

void ReadOptions::add_to(CLI::App& app) {
  app.add_option("--io", io, "auto, mmap, pread, direct (O_DIRECT) or uring (O_DIRECT on io_uring); same as --kw io=")
      ->check(CLI::IsMember({"auto", "mmap", "pread", "direct", "uring"}));
  app.add_option("--staging-bytes", staging, "staging memory bound for conversion, all threads; same as --kw staging_bytes=");
  app.add_option("--device", device,
                 "where the parameters live: cpu (default), cuda or cuda:N (read and converted on the host, copied "
                 "through pinned buffers of --staging-bytes); same as --kw device=");
  app.add_option("--dtype", dtype, "convert every tensor to this dtype (bf16, f16, f32, ...); same as --kw dtype=");
}

void ReadOptions::into(Kwargs& kwargs) const {
  if (!dtype.empty()) kwargs["dtype"] = dtype;
  if (!io.empty()) kwargs["io"] = io;
  if (!device.empty()) kwargs["device"] = device;
  if (staging >= 0) kwargs["staging_bytes"] = std::to_string(staging);
}

void SourceOptions::add_to(CLI::App& app, const std::string& path_option) {
  app.add_option(
         path_option, path,
         "checkpoint file or directory, an http(s):// or s3:// URL, or a Hugging Face model id org/name (from the hub "
         "cache, downloaded into it when missing: see `weightloader download --help`)")
      ->required();
  app.add_option("--loader", loader, "loader name from `weightloader loaders` (default: auto, by content)");
  app.add_option("--kw", kw, "loader kwarg key=value (repeatable), e.g. --kw dtype=bf16 --kw strip_prefix=model.");
  add_name_map_option(app, name_map);
}

Kwargs parse_kw_items(const std::vector<std::string>& items) {
  Kwargs kwargs;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error(ErrorCode::InvalidArgument, fmt::format("--kw '{}' is not of the form key=value", item));
    kwargs[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return kwargs;
}

Kwargs SourceOptions::kwargs() const {
  Kwargs out = parse_kw_items(kw);
  if (!name_map.empty()) out["name_map"] = name_map;
  return out;
}

const Context& program_context() {
  static const Context context = with_linked_components();
  return context;
}

const WeightLoaderRegistry& program_registry() {
  static const std::unique_ptr<WeightLoaderRegistry> registry = WeightLoaderRegistry::with_builtins(program_context());
  return *registry;
}

SourceOptions::Opened SourceOptions::open_loader(const Kwargs& extra) const {
  Context session = program_context();
  session.opener = std::make_shared<CachingOpener>(session.files());
  LoaderChoice c = loader == "auto" ? detect_loader(path, *session.opener, formats_of(session)) : LoaderChoice{loader, {}};
  for (auto& [k, v] : kwargs()) c.kwargs[k] = v;
  for (const auto& [k, v] : extra) c.kwargs[k] = v;
  return {c.name, program_registry().create(c.name, c.kwargs, std::move(session))};
}

uint64_t peak_rss_bytes() {
  // VmHWM: this process image's own peak. getrusage's ru_maxrss survives execve, so a command
  // started by a large process (a Python test) would report its parent's peak.
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmHWM:")) return std::stoull(line.substr(6)) * 1024;  // "VmHWM:   123456 kB"
  struct rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

ProgressCallback make_progress_bar(bool quiet) {
  if (quiet || !::isatty(STDERR_FILENO)) return {};
  using clock = std::chrono::steady_clock;
  struct State {
    clock::time_point start = clock::now();
    clock::time_point last{};
    bool shown = false;
    uint64_t total = 0;
  };
  auto state = std::make_shared<State>();
  return [state](uint64_t done, uint64_t total) {
    const auto now = clock::now();
    if (total != state->total) {  // the next job (a download, then the load): a fresh bar
      *state = State{};
      state->total = total;
    }
    const double elapsed = std::chrono::duration<double>(now - state->start).count();
    const bool finished = done >= total;
    if ((elapsed < 1.0 && !state->shown) || (!finished && now - state->last < std::chrono::milliseconds(100))) return true;
    state->last = now;
    state->shown = true;
    const double frac = total ? double(done) / double(total) : 1.0;
    const double rate = elapsed > 0 ? done / elapsed : 0;
    const double eta = rate > 0 ? (total - done) / rate : 0;
    const int width = 30, filled = static_cast<int>(frac * width);
    std::fprintf(stderr, "\r[%s%s] %5.1f%% %s / %s  %s/s  ETA %.0fs ", std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), frac * 100, human_bytes(done).c_str(),
                 human_bytes(total).c_str(), human_bytes(static_cast<uint64_t>(rate)).c_str(), eta);
    if (finished) std::fprintf(stderr, "\n");
    return true;
  };
}

std::unique_ptr<WeightSource> normalised_weights(const WeightLoader& loader, const std::string& path) {
  const auto source = loader.get_weights(path);
  if (loader.options().auto_names) return loader.canonical_source(*source);
  return with_normalised_names(*source, loader.options().names);
}

}  // namespace wl::cli
