// Pieces the `weightloader` subcommands share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "weightloader/registry.hpp"

namespace wl::cli {

// The options every command that opens a checkpoint takes: --loader and --kw.
struct SourceOptions {
  std::string path;
  std::string loader = "auto";
  std::vector<std::string> kw;  // key=value

  void add_to(CLI::App& app);
  // The loader to use ("auto" resolved by content) and its kwargs: --kw items, over the ones
  // detection suggests. InvalidArgument for an item without '='.
  LoaderChoice choice() const;
};

// --kw items (key=value) as kwargs; InvalidArgument for an item without '='.
Kwargs parse_kw_items(const std::vector<std::string>& items);

// A progress bar on stderr (bytes, bytes/s, ETA) when stderr is a terminal and the work takes more
// than about a second; silent otherwise. A new total starts a fresh bar (a download, then the load).
ProgressCallback make_progress_bar(bool quiet);

// Peak resident set size of this process so far, in bytes.
uint64_t peak_rss_bytes();

std::string human_bytes(uint64_t bytes);

// Body bytes received over the network so far (0 in a build without remote sources).
uint64_t network_bytes();

// Subcommands; each adds itself to `app` and runs through its callback.
void add_inspect_command(CLI::App& app);
void add_loaders_command(CLI::App& app);
void add_load_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_download_command(CLI::App& app);

}  // namespace wl::cli
