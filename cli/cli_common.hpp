// Pieces the `weightloader` subcommands share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "weightloader/byte_size.hpp"
#include "weightloader/registry.hpp"

namespace wl::cli {

// Every command is built one way: a `struct Args` of its flags (a SourceOptions `source` among them
// when it opens a checkpoint), held in a shared_ptr that the options write into, and a callback that
// runs the command from it.

// The options every command that opens a checkpoint takes: the path, --loader, --kw, --name-map.
struct SourceOptions {
  std::string path;
  std::string loader = "auto";
  std::vector<std::string> kw;  // key=value
  std::string name_map;         // --name-map: auto or explicit (the name_map kwarg)

  // The path is positional ("path") or an option (e.g. "--model").
  void add_to(CLI::App& app, const std::string& path_option = "path");
  // --kw items and --name-map as kwargs. InvalidArgument for an item without '='.
  Kwargs kwargs() const;
  // The loader to use ("auto" resolved by content) and its kwargs: kwargs() over the ones
  // detection suggests, then `extra` over both; created with one caching opener for detection and
  // its get_weights, so that each file is opened (over a network: a HEAD) once.
  struct Opened {
    std::string name;  // the loader chosen
    std::unique_ptr<const WeightLoader> loader;  // given this command's session; never changed
  };
  Opened open_loader(const Kwargs& extra = {}) const;
};

// The options of commands that run a load's reads (load, plan): --dtype, --device, --io,
// --staging-bytes, each the same as its --kw.
struct ReadOptions {
  std::string dtype, device, io;
  int64_t staging = -1;

  void add_to(CLI::App& app);
  // The ones given, as kwargs added to `kwargs`.
  void into(Kwargs& kwargs) const;
};

// What this program's loads reach through: local files, and what the build links — http://,
// https:// and s3:// names and hub downloads (the remote component), CUDA devices. Made once.
const Context& program_context();
// The loaders this program knows: the built-ins, given program_context(). Made once.
const WeightLoaderRegistry& program_registry();

// The checkpoint at `path` under the names a comparison or a conversion should see: with
// name_map=auto the loader's canonical (Hugging Face) names and rotary rows; otherwise its explicit
// mapping over the names the formats present (a GGUF Llama's as Hugging Face's: with_normalised_names).
std::unique_ptr<WeightSource> normalised_weights(const WeightLoader& loader, const std::string& path);

// --kw items (key=value) as kwargs; InvalidArgument for an item without '='.
Kwargs parse_kw_items(const std::vector<std::string>& items);

// A progress bar on stderr (bytes, bytes/s, ETA) when stderr is a terminal and the work takes more
// than about a second; silent otherwise. A new total starts a fresh bar (a download, then the load).
ProgressCallback make_progress_bar(bool quiet);

// Peak resident set size of this process so far, in bytes.
uint64_t peak_rss_bytes();

// Thrown by a command that ran to the end but has a finding to report through its exit status
// (diff: the checkpoints differ; verify: a file is damaged); main returns `code`, printing nothing.
struct ExitStatus {
  int code = 1;
};

// Subcommands; each adds itself to `app` and runs through its callback.
void add_inspect_command(CLI::App& app);
void add_loaders_command(CLI::App& app);
void add_load_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_diff_command(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_download_command(CLI::App& app);

}  // namespace wl::cli
