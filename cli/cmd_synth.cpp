#include <fmt/format.h>

#include "cli_common.hpp"
#include "weightloader/error.hpp"
#include "weightloader/synth.hpp"

namespace wl::cli {

void add_synth_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("synth", "write a synthetic Llama-shaped checkpoint with deterministic values");
  struct Args {
    std::string out, preset = "tiny", format = "safetensors", dtype = "f32";
    unsigned shards = 1;
    uint64_t seed = 0;
    int64_t layers = -1;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("out", a->out, "output directory")->required();
  cmd->add_option("--preset", a->preset, "tiny (0.2 M params), small (56 M), 100m (110 M, tied embeddings), 1gb (270 M), 2gb (610 M)")->capture_default_str();
  cmd->add_option("--layers", a->layers, "override the preset's layer count");
  cmd->add_option("--format", a->format, "safetensors or custom_binary")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "element type written (safetensors only; custom_binary is always F32)")->capture_default_str();
  cmd->add_option("--shards", a->shards, "number of safetensors files (with model.safetensors.index.json)")->capture_default_str();
  cmd->add_option("--seed", a->seed, "seed of the deterministic values")->capture_default_str();
  cmd->callback([a] {
    SynthOptions o;
    o.shape = LlamaShape::preset(a->preset);
    if (a->layers >= 0) o.shape.layers = static_cast<uint64_t>(a->layers);
    const auto dt = parse_dtype_alias(a->dtype);
    if (!dt) throw Error(ErrorCode::InvalidArgument, fmt::format("unknown dtype '{}'", a->dtype));
    o.dtype = *dt;
    if (a->format == "safetensors")
      o.format = SynthFormat::Safetensors;
    else if (a->format == "custom_binary")
      o.format = SynthFormat::CustomBinary;
    else
      throw Error(ErrorCode::InvalidArgument, fmt::format("unknown format '{}' (safetensors or custom_binary)", a->format));
    if (o.format == SynthFormat::CustomBinary && o.dtype != DType::F32)
      throw Error(ErrorCode::InvalidArgument, "the custom_binary format stores F32 only");
    o.shards = a->shards;
    o.seed = a->seed;
    const uint64_t bytes = write_synthetic_llama(a->out, o);
    fmt::print("wrote {} ({} parameters, {} of {} tensor data) to {}\n", a->format, o.shape.parameter_count(),
               human_bytes(bytes), dtype_name(o.dtype), a->out);
  });
}

}  // namespace wl::cli
