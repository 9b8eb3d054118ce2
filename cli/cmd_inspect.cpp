#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <set>

#include "cli_common.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/error.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl::cli {

namespace {
// Where a tensor's bytes are: its file, or for one assembled from pieces (Meta's shards) the first
// piece's and how many more.
std::string where(const WeightSource& source, const TensorInfo& t) {
  if (t.parts.empty()) return source.file_of(t);
  return fmt::format("{} + {} more along dim {}", source.file_of(t.parts.front()), t.parts.size() - 1, t.parts_dim);
}

// The model's architecture and what it exercises, as the engine reads its configuration; empty
// when the checkpoint has none, and why not when the engine cannot run it.
std::string model_summary(const WeightLoader& loader, const WeightSource& source) {
  try {
    return llama_config_from_source(*loader.canonical_source(source)).features();
  } catch (const Error& e) {
    return e.code() == ErrorCode::ConfigMissing ? std::string() : fmt::format("not one the engine runs: {}", e.what());
  }
}

struct Args {
  SourceOptions source;
  bool json = false, residency = false;
};

// What inspect reports, read once and printed as a table or as JSON.
struct Inspection {
  std::string loader;
  std::unique_ptr<WeightSource> source;
  DetectedScheme scheme;
  std::string model;
  nlohmann::json files = nlohmann::json::array();  // --residency: each file's size and page-cache bytes
  uint64_t parameters = 0;
};

nlohmann::json residency_of(const WeightSource& source) {
  nlohmann::json files = nlohmann::json::array();
  std::set<std::string> names;
  for (const TensorInfo& t : source.tensors()) names.insert(source.file_of(t));
  for (const std::string& name : names) {
    const auto file = source.opener()->open(name);
    const std::optional<uint64_t> resident = file->resident_bytes();
    files.push_back({{"name", name}, {"size", file->size()},
                     {"resident_bytes", resident ? nlohmann::json(*resident) : nlohmann::json(nullptr)}});
  }
  return files;
}

Inspection inspect(const Args& a) {
  Inspection in;
  SourceOptions::Opened opened = a.source.open_loader();
  in.loader = opened.name;
  auto loader = std::move(opened.loader);
  in.source = loader->get_weights(a.source.path);
  if (a.residency) in.files = residency_of(*in.source);
  std::vector<std::string> names;
  for (const TensorInfo& t : in.source->tensors()) {
    names.push_back(t.name);
    in.parameters += t.numel();
  }
  in.scheme = detect_name_scheme(names);
  in.model = model_summary(*loader, *in.source);
  return in;
}

void print_json(const Args& a, const Inspection& in) {
  const WeightSource& source = *in.source;
  nlohmann::json j;
  j["path"] = a.source.path;
  j["loader"] = in.loader;
  j["format"] = source.format();
  j["metadata"] = source.metadata();
  j["tensors"] = nlohmann::json::array();
  for (const TensorInfo& t : source.tensors()) {
    // "bytes" is the older spelling of "nbytes", kept for scripts that read it.
    nlohmann::json e = {{"name", t.name}, {"dtype", t.stored_type()}, {"shape", t.shape}, {"nbytes", t.nbytes},
                        {"bytes", t.nbytes}, {"file", source.file_of(t)}, {"offset", t.offset}};
    if (!t.parts.empty()) {
      e["parts_dim"] = t.parts_dim;
      e["parts"] = nlohmann::json::array();
      for (const TensorInfo& p : t.parts) e["parts"].push_back({{"file", source.file_of(p)}, {"offset", p.offset}, {"shape", p.shape}});
    }
    j["tensors"].push_back(std::move(e));
  }
  const DetectedScheme& scheme = in.scheme;
  j["names"] = {{"scheme", scheme.scheme}, {"prefix", scheme.prefix}, {"matched", scheme.matched},
                {"total", scheme.total}, {"summary", scheme.to_string()}};
  if (!in.model.empty()) j["model"] = in.model;
  j["total_tensors"] = source.tensors().size();
  j["total_parameters"] = in.parameters;
  j["total_bytes"] = source.total_bytes();
  j["bytes_fetched"] = source.bytes_fetched();  // over the network: the headers only
  if (a.residency) j["files"] = in.files;
  fmt::print("{}\n", j.dump(2));
}

void print_table(const Inspection& in) {
  const WeightSource& source = *in.source;
  size_t width = 4;
  for (const TensorInfo& t : source.tensors()) width = std::max(width, t.name.size());
  fmt::print("{:<{}}  {:<8} {:<20} {:>12}  {}\n", "name", width, "dtype", "shape", "bytes", "file");
  for (const TensorInfo& t : source.tensors())
    fmt::print("{:<{}}  {:<8} {:<20} {:>12}  {}\n", t.name, width, t.stored_type(), shape_to_string(t.shape), t.nbytes, where(source, t));
  fmt::print("{} tensors, {} parameters, {} ({} bytes), format {}, loader {}\n", source.tensors().size(), in.parameters,
             human_bytes(source.total_bytes()), source.total_bytes(), source.format(), in.loader);
  fmt::print("names: {}\n", in.scheme.to_string());
  if (!in.model.empty()) fmt::print("model: {}\n", in.model);
  for (const auto& [k, v] : source.metadata())
    fmt::print("metadata {} = {}\n", k, v.find('\n') == std::string::npos ? v : fmt::format("({} bytes; --json shows it)", v.size()));
  if (const uint64_t fetched = source.bytes_fetched())
    fmt::print("fetched {} ({} bytes) over the network\n", human_bytes(fetched), fetched);
  for (const auto& f : in.files)
    fmt::print("file {}: {} bytes, {} in the page cache\n", f["name"].get<std::string>(), f["size"].get<uint64_t>(),
               f["resident_bytes"].is_null() ? std::string("unknown") : std::to_string(f["resident_bytes"].get<uint64_t>()));
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "list every tensor of a checkpoint (name, dtype, shape, bytes, file); reads no tensor data");
  auto a = std::make_shared<Args>();
  a->source.add_to(*cmd);
  cmd->add_flag("--json", a->json, "print JSON instead of a table");
  cmd->add_flag("--residency", a->residency,
                "also list each file's size and how much of it is in the page cache (the test io=auto uses; "
                "bench/run_all.py checks warm runs with it)");
  cmd->callback([a] {
    const Inspection in = inspect(*a);
    if (a->json) print_json(*a, in);
    else print_table(in);
  });
}

}  // namespace wl::cli
