#include "weightloader/convert_checkpoint.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "convert/gguf_output.hpp"
#include "convert/model_fields.hpp"
#include "convert/refuse_overwrite.hpp"
#include "convert/safetensors_shards.hpp"
#include "convert/source_shapes.hpp"
#include "convert/tally.hpp"
#include "core/atomic_output.hpp"
#include "families/family.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/custom_binary.hpp"
#include "weightloader/formats/llama2c.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {

namespace {

namespace fs = std::filesystem;

std::vector<std::pair<std::string, TensorView>> load_all(const WeightSource& s, DType dtype, Tally& tally) {
  std::vector<std::pair<std::string, TensorView>> out;
  for (const TensorInfo& t : s.tensors()) {
    out.emplace_back(t.name, s.load(t, dtype));
    tally.add(t);
  }
  return out;
}

// The configuration the output needs to be run: the source's config.json, or one derived from its
// GGUF keys or llama2.c header. Nothing for a checkpoint that is not a Llama.
std::optional<std::string> config_json_text(const WeightSource& s) {
  if (auto it = s.metadata().find("config.json"); it != s.metadata().end()) return it->second;
  try {
    return llama_config_from_source(s).to_hf_config_json();
  } catch (const Error&) {
    return std::nullopt;
  }
}

// config.json in a directory output.
void write_config_json(const WeightSource& s, const std::string& dir) {
  const std::optional<std::string> text = config_json_text(s);
  if (!text) return;
  AtomicFileWriter file((fs::path(dir) / "config.json").string());
  file.write(text->data(), text->size());
  file.commit();
}

// Streams `indices` of `entries` into one safetensors file; returns the tensor bytes written.
// `metadata` goes into the file's __metadata__ beside "format": "pt".
uint64_t write_safetensors_file(const WeightSource& s, const std::vector<SafetensorsEntry>& entries,
                                const std::vector<size_t>& indices, const std::string& path, Tally& tally,
                                std::map<std::string, std::string> metadata = {}) {
  std::vector<SafetensorsEntry> mine;
  for (size_t i : indices) mine.push_back(entries[i]);
  metadata.emplace("format", "pt");
  SafetensorsStreamWriter writer(path, mine, std::move(metadata));
  uint64_t written = 0;
  for (const SafetensorsEntry& e : mine) {
    const TensorInfo& t = s.at(e.name);
    TensorView v = s.load(t, e.dtype);
    writer.write_tensor(v);
    written += v.nbytes();
    tally.add(t);
  }
  writer.finish();
  return written;
}

// A family whose experts transformers reads only as its stacks (Granite-MoE): the source presents
// them one tensor per expert (stacked_experts_source.hpp), and so they would be written.
void refuse_unstacked_experts(const WeightSource& s) {
  LlamaConfig c;
  try {
    c = llama_config_from_source(s);
  } catch (const Error&) {
    return;  // no configuration the engine reads: tensors written as they are, as ever
  }
  const Family* family = family_by_type(c.architecture);
  if (family && family->stacked_experts && c.moe.num_experts)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("{} cannot be written as safetensors: transformers reads its experts only stacked "
                            "(block_sparse_moe.input_linear / output_linear), and the writer stores one tensor per expert",
                            c.architecture),
                s.origin());
}

// One file, or a directory of shards + index (when they are more than one) + config.json.
uint64_t write_safetensors_output(const WeightSource& s, const std::string& out, const ConvertOptions& o, Tally& tally) {
  refuse_unstacked_experts(s);
  std::vector<SafetensorsEntry> entries;
  std::vector<size_t> all;
  for (const TensorInfo& t : s.tensors()) {
    all.push_back(entries.size());
    entries.push_back({t.name, o.dtype.value_or(t.dtype), t.shape});
  }
  if (out.ends_with(".safetensors") && !local_opener()->is_directory(out)) {
    if (o.shard_bytes)
      throw Error(ErrorCode::InvalidArgument, "a sharded checkpoint is a directory, not one .safetensors file", out);
    refuse_overwriting_input(s, out);
    // A single file has no folder for config.json: the configuration travels in __metadata__
    // (Hugging Face readers ignore the key; ours read it as the folder's config.json).
    std::map<std::string, std::string> metadata;
    if (std::optional<std::string> config = config_json_text(s)) metadata.emplace("config.json", std::move(*config));
    return write_safetensors_file(s, entries, all, out, tally, std::move(metadata));
  }
  ShardPlan plan = o.shard_bytes ? plan_safetensors_shards(entries, o.shard_bytes) : ShardPlan{{all}, 0};
  if (plan.shards.empty()) plan.shards.push_back({});
  std::vector<std::string> files{"config.json"};
  for (size_t i = 0; i < plan.shards.size(); ++i) files.push_back(safetensors_shard_name(i, plan.shards.size()));
  const bool indexed = plan.shards.size() > 1;
  if (indexed) files.push_back(kSafetensorsIndexName);
  refuse_overwriting_input(s, out, files);
  AtomicDirectory dir(out);
  uint64_t written = 0;
  for (size_t i = 0; i < plan.shards.size(); ++i)
    written += write_safetensors_file(s, entries, plan.shards[i], dir.file(files[i + 1]), tally);
  if (indexed) {
    AtomicFileWriter index(dir.file(kSafetensorsIndexName));
    const std::string text = safetensors_index_json(entries, plan);
    index.write(text.data(), text.size());
    index.commit();
  }
  write_config_json(s, dir.path());
  dir.commit({kSafetensorsIndexName, "config.json"});
  return written;
}

// llama2.c's header says only the sizes: a model that run.c would compute otherwise is refused.
void refuse_what_llama2c_changes(const WeightSource& s) {
  LlamaConfig c;
  try {
    c = llama_config_from_source(s);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::ConfigMissing) throw;  // one that is there but wrong is not guessed around
    return;  // no configuration: a Llama of the tensors' shapes and the overrides
  }
  refuse_model_change(c, as_llama2c_runs(c), "llama2.c", s.origin());
}

}  // namespace

CheckpointFormat parse_checkpoint_format(const std::string& name) {
  if (name == "safetensors") return CheckpointFormat::Safetensors;
  if (name == "gguf") return CheckpointFormat::Gguf;
  if (name == "llama2c") return CheckpointFormat::Llama2c;
  if (name == "custom_binary") return CheckpointFormat::CustomBinary;
  throw Error(ErrorCode::InvalidArgument,
              fmt::format("unknown output format '{}' (safetensors, gguf, llama2c, custom_binary)", name));
}

LlamaHeads llama_heads_from_metadata(const WeightSource& s, LlamaHeads o) {
  LlamaHeads h;
  try {  // the engine's reading of config.json, GGUF keys or the llama2.c header
    const LlamaConfig c = llama_config_from_source(s);
    h = {c.num_heads, c.num_kv_heads, c.max_position_embeddings, c.rms_norm_eps, c.rope_theta};
  } catch (const Error& e) {
    if (e.code() != ErrorCode::ConfigMissing) throw;  // one that is there but wrong is not guessed around
    // no configuration: the overrides must say it
  }
  if (o.heads) h.heads = o.heads;
  if (o.kv_heads) h.kv_heads = o.kv_heads;
  if (o.seq_len) h.seq_len = o.seq_len;
  if (!h.kv_heads) h.kv_heads = h.heads;
  return h;
}

uint64_t convert_peak_bytes(const WeightSource& s, const ConvertOptions& o) {
  uint64_t largest = 0, model_f32 = 0, largest_stored = 0;
  for (const TensorInfo& t : s.tensors()) {
    const uint64_t f32 = t.numel() * 4;
    uint64_t held = t.nbytes;
    if (o.to == CheckpointFormat::Safetensors) held += t.numel() * dtype_size(o.dtype.value_or(t.dtype));
    if (o.to == CheckpointFormat::Gguf) held += 2 * f32;  // the F32 values, and at most as much quantized
    largest = std::max(largest, held);
    largest_stored = std::max(largest_stored, t.nbytes);
    model_f32 += f32;
  }
  const bool whole_model = o.to == CheckpointFormat::Llama2c || o.to == CheckpointFormat::CustomBinary;
  return whole_model ? model_f32 + largest_stored : largest;
}

uint64_t convert_checkpoint(const WeightSource& s, const std::string& out, const ConvertOptions& o) {
  if (o.max_host_memory) {
    if (const uint64_t peak = convert_peak_bytes(s, o); peak > o.max_host_memory)
      throw Error(ErrorCode::OverBudget,
                  fmt::format("max_host_memory={} is below the {} bytes converting to {} holds at once ({}); nothing "
                              "was read or written",
                              o.max_host_memory, peak, checkpoint_format_name(o.to),
                              o.to == CheckpointFormat::Llama2c || o.to == CheckpointFormat::CustomBinary
                                  ? "the whole model in F32"
                                  : "the largest tensor as read and as written"),
                  s.origin());
  }
  uint64_t written = 0;
  if (o.shard_bytes && o.to != CheckpointFormat::Safetensors)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("--shard-size applies to safetensors, not {}", checkpoint_format_name(o.to)), out);
  if (o.to != CheckpointFormat::Safetensors && o.to != CheckpointFormat::CustomBinary) refuse_overwriting_input(s, out);
  Tally tally(s, o.progress, convert_scope(s, o).bytes);
  switch (o.to) {
    case CheckpointFormat::Safetensors:
      return write_safetensors_output(s, out, o, tally);
    case CheckpointFormat::CustomBinary: {
      refuse_overwriting_input(s, out, {"model.bin", "meta.txt", "config.json"});
      auto tensors = load_all(s, DType::F32, tally);
      AtomicDirectory dir(out);
      write_custom_binary(dir.path(), tensors);
      write_config_json(s, dir.path());
      dir.commit({"meta.txt"});
      for (const auto& [n, v] : tensors) written += v.nbytes();
      return written;
    }
    case CheckpointFormat::Gguf:
      return write_gguf_output(s, out, o, tally);
    case CheckpointFormat::Llama2c: {
      refuse_what_llama2c_changes(s);
      const LlamaHeads h = llama_heads_from_metadata(s, o.heads);
      if (!h.heads || !h.seq_len)
        throw Error(ErrorCode::InvalidArgument,
                    "attention heads and sequence length are unknown: pass --heads and --seq-len", s.origin());
      const Shape embed = shape_of(s, "model.embed_tokens.weight");
      Llama2cHeader header;
      header.version = o.llama2c_version;
      header.dim = embed[1];
      header.hidden_dim = shape_of(s, "model.layers.0.mlp.gate_proj.weight")[0];
      while (s.find(fmt::format("model.layers.{}.input_layernorm.weight", header.n_layers))) ++header.n_layers;
      header.n_heads = h.heads;
      header.n_kv_heads = h.kv_heads;
      header.vocab_size = embed[0];
      header.seq_len = h.seq_len;
      header.shared_classifier = s.find("lm_head.weight") == nullptr;
      header.group_size = o.llama2c_group;
      auto tensors = load_all(s, DType::F32, tally);
      write_llama2c(out, header, tensors);
      for (const auto& [n, v] : tensors) written += v.nbytes();
      return written;
    }
  }
  return written;
}

}  // namespace wl
