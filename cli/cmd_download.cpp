#include <fmt/format.h>

#include "cli_common.hpp"
#include "weightloader/hf_cache.hpp"

namespace wl::cli {

void add_download_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "download",
      "download a model from the Hugging Face hub into its cache (the layout huggingface_hub uses) and print the "
      "snapshot directory. Without --include: config.json, the tokenizer files and the weights of one format (safetensors "
      "preferred; with an index, only the shards it lists). Interrupted downloads resume; each file is checked against "
      "its sha256 / git sha1. Environment: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN, HF_HUB_OFFLINE=1 "
      "(no requests), HF_HUB_CACHE / HF_HOME, WL_HTTP_RETRIES, WL_HTTP_BACKOFF_MS, WL_HUB_PIECE_BYTES (range size for "
      "parallel pieces of one file, default 64 MiB), WL_CA_BUNDLE");
  struct Args {
    HfDownload request;
    bool quiet = false;
  };
  auto a = std::make_shared<Args>();
  HfDownload* request = &a->request;
  cmd->add_option("model", request->model_id, "model id, org/name")->required();
  cmd->add_option("--revision", request->revision, "branch, tag or commit (default main)");
  cmd->add_option("--include", request->include,
                  "only the files matching this fnmatch pattern (repeatable), e.g. --include '*.json' --include "
                  "'model-0000[12]-*.safetensors'; overrides the choice of files a load needs")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);  // one pattern per --include: the model id may follow
  cmd->add_option("--cache-dir", request->cache_dir, "the hub cache (default HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub)");
  cmd->add_option("--concurrency", request->concurrency, "transfers at once: files, and ranges of a large file (default 8)")
      ->check(CLI::Range(1u, 256u));
  cmd->add_flag("-q,--quiet", a->quiet, "no progress bar");
  cmd->callback([a] {
    a->request.progress = make_progress_bar(a->quiet);
    fmt::print("{}\n", download_hf_snapshot(a->request, program_context().downloader));
  });
}

}  // namespace wl::cli
