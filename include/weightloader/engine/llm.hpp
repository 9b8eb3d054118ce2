// vLLM's entry point: LLM(model, weight_loader, weight_loader_kwargs) loads a model of a family LlamaConfig describes
// through any registered loader and generates from it on the CPU. The engine exists to make a
// load's correctness visible (its output matches other implementations' exactly), while being
// a real engine: KV cache, multithreaded products, tensor parallelism over threads of one process
// or over processes (MPI), with one forward pass for both.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weightloader/dtype.hpp"
#include "weightloader/communicator.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/report.hpp"
#include "weightloader/engine/tokenizer.hpp"

#include "weightloader/export.hpp"

namespace wl {

// For a process whose only BLAS user is the engine (the CLI): one BLAS thread per call, as the
// engine runs it, and OpenBLAS's pool of worker threads stopped. That pool starts when the library
// loads and its threads spin (sched_yield) for a while, taking a core from a load — and from a
// server on the same machine (measured: HTTP loads over loopback 1.2x faster without it). Not for a
// process whose other code wants OpenBLAS's threads (torch shares the library).
WL_API void release_blas_threads();

struct LLMOptions {
  std::string model;                    // a path (file or directory) or a cached Hugging Face model id
  std::string weight_loader = "auto";   // a registered loader, or "auto" to pick one by content
  Kwargs weight_loader_kwargs;          // passed to the loader (file_pattern, strip_prefix, io, ...)
  DType dtype = DType::F32;             // how weights are stored: F32, BF16 or F16 (computed in F32)
  unsigned tensor_parallel_size = 1;    // ranks, each holding and reading only its slice
  bool expert_parallel = false;         // ranks hold whole experts (num_experts / ranks each), not slices of all
  std::string tokenizer;                // a tokenizer file; empty: the one found beside the model
  unsigned threads = 0;                 // compute threads, shared by the ranks held here; 0 = one per core
  IoOptions io;                         // loading: concurrency, progress
  const WeightLoaderRegistry* registry = nullptr;  // where weight_loader is looked up; null: the built-ins
  // Where the model, its tokenizer and configuration are opened, the formats "auto" detects, the
  // downloader of a model id missing from the cache; the loader is given it (whatever its registry's).
  Context context;
  // Declare the ranks' parameters but read nothing: the caller fills them (rank_model, load_rank)
  // before generating. The Python module does this for loaders written in Python.
  bool defer_load = false;
  // Where the ranks run. Null: tensor_parallel_size ranks as threads of this process. A communicator
  // (e.g. wl::MpiCommunicator, weightloader/engine/mpi.hpp): this process is rank communicator->rank() of
  // communicator->size() and declares and reads only that rank's slice; tensor_parallel_size must be
  // 1 or the communicator's size. Every rank then constructs its LLM and calls generate() with the
  // same arguments. A rank that fails to open or load the checkpoint, or that sees a different one
  // (RanksDisagree), makes every rank's constructor throw the same error naming it, before anything
  // is computed.
  std::shared_ptr<Communicator> communicator;
};

struct SamplingParams {
  uint32_t max_tokens = 256;   // tokens to generate (vLLM's max_tokens)
  float temperature = 1.0f;    // 0 = greedy
  float top_p = 0.9f;          // nucleus sampling when in (0, 1)
  uint64_t seed = 0;           // 0 = from the clock
  bool return_logits = false;  // keep the logits of every position
  bool stop_at_eos = true;     // stop at the model's stop tokens (LLM::stop_token_ids)
  // Called with each piece of text as it is produced (the prompt's pieces too), e.g. to print it;
  // by rank 0 only (on its thread), when the ranks are spread over processes.
  std::function<void(const std::string& piece)> stream;
  // Asked by rank 0 before each generated token; true stops every rank there (agreed through the
  // token broadcast, so the ranks stay usable) and generate throws Cancelled.
  std::function<bool()> cancelled;
};

struct GenerationOutput {
  std::vector<int32_t> prompt_token_ids;
  std::vector<int32_t> token_ids;             // generated
  std::string text;                           // the prompt then the generated text, as llama2.c's run prints it
  std::string completion;                     // the generated text alone (vLLM's output text)
  std::vector<std::vector<float>> logits;     // when asked: logits[i] predicts the token after position i
  double tokens_per_second = 0;               // generated tokens over the time spent generating them
};

class LlamaEngine;

class WL_API LLM {
 public:
  // Loads the model; throws wl::Error (ConfigMissing, ConfigInvalid, load errors...).
  explicit LLM(LLMOptions options);
  ~LLM();
  LLM(const LLM&) = delete;
  LLM& operator=(const LLM&) = delete;

  // Encodes `prompt` with BOS (TokenizerNotFound when there is no tokenizer) and generates.
  GenerationOutput generate(const std::string& prompt, const SamplingParams& params = {});
  // Generates after the given token ids (text is empty without a tokenizer).
  GenerationOutput generate(const std::vector<int32_t>& prompt_token_ids, const SamplingParams& params = {});

  const LlamaConfig& config() const noexcept { return config_; }
  const std::string& loader_name() const noexcept { return loader_name_; }
  // One report per tensor-parallel rank, in rank order: what it loaded and the bytes it read (those of
  // ranks in other processes gathered from them: names, sizes, bytes and seconds).
  const std::vector<LoadReport>& load_reports() const noexcept { return reports_; }
  uint64_t parameter_bytes() const;  // all ranks' together
  const Tokenizer* tokenizer() const noexcept { return tokenizer_.get(); }
  // Where generation stops: generation_config.json's or config.json's eos_token_id (an id or a
  // list), GGUF's tokenizer.ggml.eos_token_id, else the tokenizer's EOS; llama2.c models stop at
  // BOS and EOS as its run.c does (1 and 2 without a tokenizer).
  const std::vector<int32_t>& stop_token_ids() const noexcept { return stop_ids_; }

  // Tensor-parallel ranks (all of them, wherever they run), the ranks this process holds, and rank
  // r's parameters (as the engine names them: fused qkv_proj and gate_up_proj, each rank holding
  // its slice; InvalidArgument for a rank another process holds).
  unsigned ranks() const noexcept;
  std::vector<unsigned> held_ranks() const;
  Model& rank_model(unsigned rank);
  // Loads `source` into rank r through the model's loader (its name mapping and the engine's
  // drops: rotary tables, a tied lm_head, rank > 0's row-parallel biases), which maps checkpoint
  // names onto the fused and sharded parameters. strict: nullopt keeps the loader's setting.
  LoadReport load_rank(unsigned rank, const WeightSource& source, std::optional<bool> strict = std::nullopt);

 private:
  LLMOptions options_;
  std::unique_ptr<const WeightLoader> loader_;
  LoadOptions load_options_;  // the loader's, with this LLM's context and io: what each rank's load starts from
  LlamaConfig config_;
  std::string loader_name_;
  std::vector<LoadReport> reports_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int32_t> stop_ids_;
  std::vector<std::unique_ptr<Communicator>> own_group_;  // the in-process ranks' communicators
  std::vector<std::unique_ptr<LlamaEngine>> engines_;     // the ranks held here, in rank order
  uint64_t parameter_bytes_ = 0;

  // The loader, the catalogue, the configuration, the held ranks' engines and the tokenizer. With
  // `shared` (what rank 0's open put in `to_share`: its loader choice and, where it can be carried,
  // its catalogue as a value) the catalogue is rank 0's and no header is read here.
  std::unique_ptr<WeightSource> open(const std::string& shared = {}, std::string* to_share = nullptr);
  std::vector<int32_t> stop_tokens(const WeightSource& source) const;
  void load_held_ranks(const WeightSource& source);
  LlamaEngine& engine(unsigned rank) const;
  // nullopt when params.cancelled stopped it.
  std::optional<GenerationOutput> run_rank(LlamaEngine& engine, const std::vector<int32_t>& prompt, const SamplingParams& params,
                            uint64_t positions, uint64_t seed);
};

}  // namespace wl
