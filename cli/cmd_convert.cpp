#include <fmt/format.h>

#include "cli_common.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/error.hpp"
#include "weightloader/quantize.hpp"
#include "weightloader/engine/tokenizer.hpp"

namespace wl::cli {

void add_convert_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "convert",
      "convert a checkpoint of any readable format into safetensors, gguf, llama2c or custom_binary; the output's "
      "extension says which (.safetensors one file, .gguf, .bin llama2.c, a directory: safetensors + config.json)");
  struct Args {
    SourceOptions source;
    std::string out, to, dtype, gguf_type, gguf_mxfp4, tokenizer, shard_size, quantize;
    int64_t quantize_group = 128;
    bool no_tokenizer = false, quiet = false;
    int version = 1;
    uint64_t group = 64, heads = 0, kv_heads = 0, seq_len = 0;
  };
  auto a = std::make_shared<Args>();
  a->source.add_to(*cmd);
  cmd->add_option("out", a->out,
                  "output: NAME.safetensors, NAME.gguf, NAME.bin (llama2.c), or a directory (existing, ending in '/' or "
                  "without extension: safetensors + config.json, or custom_binary with --to); written under a temporary "
                  "name and renamed when complete, never over the input")
      ->required();
  cmd->add_option("--to", a->to, "safetensors, gguf, llama2c or custom_binary (default: from the output's extension; "
                                 "it must agree with it)");
  cmd->add_option("--shard-size", a->shard_size,
                  "safetensors directory: at most this much per file (5GB, 500MB, 2GiB, bytes), split and indexed "
                  "as Hugging Face's save_pretrained does");
  cmd->add_option("--dtype", a->dtype, "safetensors: element type written (default: --kw dtype=, else as stored)");
  std::string gguf_types;
  for (const GgufOutputType& t : gguf_output_types()) gguf_types += fmt::format("\n  {:<6} {}", t.name, t.about);
  cmd->add_option("--gguf-type", a->gguf_type,
                  "gguf: type of the matrices (default f16; vectors, biases, sinks and routers stay f32, as llama.cpp's converter keeps them; a matrix whose rows are not whole blocks of a "
                  "block type is written f16, as llama.cpp's converter does; naming a type also decodes MXFP4 experts to it, "
                  "see --gguf-mxfp4); the block types are quantised byte for byte as gguf-py's gguf.quants.quantize does:" +
                      gguf_types);
  cmd->add_option("--gguf-mxfp4", a->gguf_mxfp4,
                  "gguf: a checkpoint's MXFP4 experts (gpt-oss's _blocks/_scales): keep (written as GGUF MXFP4, the blocks "
                  "repacked as llama.cpp's converter repacks them) or decode (written as --gguf-type); default: keep "
                  "unless --gguf-type names a type other than mxfp4")
      ->check(CLI::IsMember({"keep", "decode"}));
  cmd->add_option("--llama2c-version", a->version, "llama2c: 0 (original), 1 (ak42 float32) or 2 (int8 groups)")->capture_default_str();
  cmd->add_option("--group-size", a->group, "llama2c v2: values per quantisation group")->capture_default_str();
  cmd->add_option("--heads", a->heads, "attention heads, when the source does not say (gguf, llama2c)");
  cmd->add_option("--kv-heads", a->kv_heads, "key/value heads (default: --heads)");
  cmd->add_option("--seq-len", a->seq_len, "maximum sequence length (llama2c)");
  cmd->add_option("--tokenizer", a->tokenizer,
                  "gguf: tokenizer to embed (llama2.c tokenizer.bin, tokenizer.model or a GGUF file; default: the one "
                  "found next to the input)");
  cmd->add_flag("--no-tokenizer", a->no_tokenizer, "gguf: embed no tokenizer");
  cmd->add_option("--quantize", a->quantize,
                  "safetensors: write the linear layers quantized, round-to-nearest: gptq-int4 (AutoGPTQ's layout, sym, v1 "
                  "zeros) or fp8-channel (compressed-tensors float-quantized); quantized inputs are read dense first");
  cmd->add_option("--quantize-group", a->quantize_group, "gptq-int4: input features per group (-1: one per layer)")
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", a->quiet, "no progress bar");
  cmd->callback([a] {
    ConvertOptions o;
    o.to = output_format_for(a->out, a->to.empty() ? std::nullopt : std::optional(parse_checkpoint_format(a->to)));
    if (!a->shard_size.empty()) o.shard_bytes = parse_byte_size(a->shard_size);
    auto loader = a->source.open_loader().loader;
    if (!a->dtype.empty()) {
      o.dtype = parse_dtype_alias(a->dtype);
      if (!o.dtype) throw Error(ErrorCode::InvalidArgument, fmt::format("unknown dtype '{}'", a->dtype));
    } else {
      o.dtype = loader->dtype();  // --kw dtype=
    }
    o.max_host_memory = loader->options().max_host_memory;  // --kw max_host_memory=
    o.gguf_type = a->gguf_type;
    if (!a->gguf_mxfp4.empty()) o.gguf_keep_mxfp4 = a->gguf_mxfp4 == "keep";
    o.llama2c_version = a->version;
    o.llama2c_group = a->group;
    o.heads = {a->heads, a->kv_heads, a->seq_len};
    o.progress = make_progress_bar(a->quiet);
    if (o.to == CheckpointFormat::Gguf && !a->no_tokenizer)
      o.tokenizer = a->tokenizer.empty() ? find_tokenizer_path(a->source.path) : a->tokenizer;
    std::unique_ptr<WeightSource> source = normalised_weights(*loader, a->source.path);
    if (!a->quantize.empty()) {
      if (o.to != CheckpointFormat::Safetensors)
        throw Error(ErrorCode::InvalidArgument, "--quantize writes safetensors (a .safetensors file or a directory)");
      source = quantize_checkpoint(*source, {parse_quantize_method(a->quantize), a->quantize_group});
      o.dtype.reset();  // packed integers and scales are written as the method stores them
    }
    const ConvertScope scope = convert_scope(*source, o);
    const uint64_t bytes = convert_checkpoint(*source, a->out, o);
    fmt::print("converted {} tensors ({}) from {} to {} at {}\n", scope.tensors, human_bytes(bytes), source->format(),
               checkpoint_format_name(o.to), a->out);
    if (scope.left_out)
      fmt::print("left out the vision model's {} tensors (outside language_model.; llama.cpp's converter writes them to a "
                 "separate mmproj file)\n",
                 scope.left_out);
    if (!o.tokenizer.empty()) fmt::print("embedded the tokenizer of {}\n", o.tokenizer);
  });
}

}  // namespace wl::cli
