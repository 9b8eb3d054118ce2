// weightloader: inspect, load and generate model checkpoints from the command line.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "cli_common.hpp"
#include "weightloader/engine/llm.hpp"
#include "weightloader/error.hpp"

int main(int argc, char** argv) {
  wl::release_blas_threads();  // before anything runs: the pool's spinning threads take a core
  CLI::App app{
      "weightloader: load model weights from safetensors, PyTorch, GGUF, llama2.c and the custom\n"
      "meta.txt + model.bin format "
      "into a model's parameters, through loaders chosen by name.",
      "weightloader"};
  app.set_version_flag("--version", "weightloader " WL_VERSION, "print the version and exit");
  app.require_subcommand(1);
  wl::cli::add_inspect_command(app);
  wl::cli::add_loaders_command(app);
  wl::cli::add_load_command(app);
  wl::cli::add_plan_command(app);
  wl::cli::add_synth_command(app);
  wl::cli::add_convert_command(app);
  wl::cli::add_generate_command(app);
  wl::cli::add_tokenize_command(app);
  wl::cli::add_diff_command(app);
  wl::cli::add_verify_command(app);
  wl::cli::add_download_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const wl::cli::ExitStatus& e) {
    return e.code;
  } catch (const wl::Error& e) {
    std::fprintf(stderr, "weightloader: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weightloader: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
