#include <cstdio>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cli_common.hpp"
#include "weightloader/error.hpp"
#include "weightloader/engine/llm.hpp"
#ifdef WL_WITH_MPI
#include "weightloader/engine/mpi.hpp"
#endif

namespace wl::cli {

namespace {

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
    }
    if (used != item.size() || item.empty() || v < 0 || v > INT32_MAX)
      throw Error(ErrorCode::InvalidArgument, fmt::format("--prompt-ids: '{}' is not a token id", item));
    ids.push_back(int32_t(v));
    start = end + 1;
  }
  return ids;
}

struct Args {
  SourceOptions source;  // --model, --loader, --kw, --name-map
  std::string tokenizer, prompt, prompt_ids, dtype = "f32";
  uint32_t steps = 256;
  float temperature = 1.0f, top_p = 0.9f;
  uint64_t seed = 0;
  unsigned tp = 1, threads = 0;
  bool expert_parallel = false;
  bool quiet = false;
};

// Loads and generates as one rank of `options.communicator`, or as every rank when it is null.
void generate(const Args& o, LLMOptions& options, bool speaker) {
  options.model = o.source.path;
  options.weight_loader = o.source.loader;  // "auto": LLM detects it
  options.weight_loader_kwargs = o.source.kwargs();
  const std::optional<DType> dtype = parse_dtype_alias(o.dtype);
  if (!dtype) throw Error(ErrorCode::UnsupportedDType, fmt::format("--dtype '{}' is not a dtype", o.dtype));
  if (!o.prompt_ids.empty() && !o.prompt.empty()) throw Error(ErrorCode::InvalidArgument, "give --prompt or --prompt-ids, not both");
  const std::vector<int32_t> prompt_ids = o.prompt_ids.empty() ? std::vector<int32_t>{} : parse_ids(o.prompt_ids);
  options.dtype = *dtype;
  options.tensor_parallel_size = o.tp;
  options.expert_parallel = o.expert_parallel;
  options.tokenizer = o.tokenizer;
  if (o.threads) options.threads = o.threads;
  options.io.progress = make_progress_bar(o.quiet || !speaker);
  std::optional<LLM> llm_holder;
  try {
    llm_holder.emplace(options);
  } catch (const Error& e) {
    if (!options.communicator) throw;
    // Every rank throws the same agreed error here. Rank 0 says it, and no rank exits before it
    // has: mpirun ends the job at the first non-zero exit, which could cut rank 0 off mid-message.
    if (speaker) std::fprintf(stderr, "weightloader: error: %s\n", e.what());
    options.communicator->barrier();
    throw ExitStatus{1};
  }
  LLM& llm = *llm_holder;
  if (!o.quiet && speaker) {
    const LlamaConfig& c = llm.config();
    fmt::print(stderr, "model: {}, {} layers, hidden {}, {} heads ({} kv), vocab {}, from {} via loader '{}'; {} of weights\n",
               c.architecture, c.num_layers, c.hidden_size, c.num_heads, c.num_kv_heads, c.vocab_size, c.origin, llm.loader_name(),
               human_bytes(llm.parameter_bytes()));
    for (size_t r = 0; r < llm.load_reports().size(); ++r)
      fmt::print(stderr, "rank {}: read {} in {:.3f} s\n", r, human_bytes(llm.load_reports()[r].bytes_read),
                 llm.load_reports()[r].seconds);
  }
  SamplingParams params;
  params.max_tokens = o.steps;
  params.temperature = o.temperature;
  params.top_p = o.top_p;
  params.seed = o.seed;
  params.stream = [](const std::string& piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  const GenerationOutput out = prompt_ids.empty() ? llm.generate(o.prompt, params) : llm.generate(prompt_ids, params);
  if (!speaker) return;
  if (!llm.tokenizer()) {
    std::vector<std::string> ids;
    for (int32_t id : out.token_ids) ids.push_back(std::to_string(id));
    fmt::print("{}", fmt::join(ids, " "));
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!o.quiet) fmt::print(stderr, "achieved tok/s: {:.2f}\n", out.tokens_per_second);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "generate",
      "load a Llama-family model through a loader and generate text on the CPU; prints the prompt followed by the\n"
      "generated text, as llama2.c's run does, and the speed on stderr.\n"
      "Under mpirun (`mpirun -np N weightloader generate ...`, in builds with MPI; detected from the launcher's environment:\n"
      "OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK) each process is one tensor-parallel rank: it reads only its\n"
      "slice of the checkpoint, the ranks combine through MPI, and rank 0 prints the text and every rank's load report.");
  auto o = std::make_shared<Args>();
  o->source.add_to(*cmd, "--model");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "tokenizer file (llama2.c tokenizer.bin, SentencePiece tokenizer.model, or a GGUF file); default: the "
                  "one beside the model or inside its GGUF file");
  cmd->add_option("-i,--prompt", o->prompt, "prompt text (default: empty, generation starts from BOS)");
  cmd->add_option("--prompt-ids", o->prompt_ids, "prompt as comma-separated token ids, instead of text");
  cmd->add_option("-n,--max-tokens", o->steps, "tokens to generate (vLLM's max_tokens; stops early at EOS)")->capture_default_str();
  cmd->add_option("-t,--temperature", o->temperature, "sampling temperature; 0 = greedy")->capture_default_str();
  cmd->add_option("-p,--top-p", o->top_p, "nucleus sampling threshold in (0, 1); 1 = off")->capture_default_str();
  cmd->add_option("-s,--seed", o->seed, "random seed (default: the clock)");
  cmd->add_option("--tp", o->tp,
                  "tensor-parallel ranks (threads in this process), each loading only its slice; under mpirun one rank per "
                  "process (then --tp is 1 or the number of processes)")->capture_default_str();
  cmd->add_flag("--expert-parallel", o->expert_parallel,
                "with --tp N, each rank holds num_experts / N whole experts (and reads only theirs) instead of a slice of "
                "every expert (vLLM's --enable-expert-parallel)");
  cmd->add_option("--dtype", o->dtype, "how weights are held: f32, bf16 or f16 (computed in f32)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "compute threads (default: one per core, shared by the ranks on this host)");
  cmd->add_flag("-q,--quiet", o->quiet, "no load summary or speed on stderr");
  cmd->callback([o] {
    LLMOptions options;
    options.context = program_context();
#ifdef WL_WITH_MPI
    std::shared_ptr<MpiCommunicator> mpi;
    if (launched_by_mpi()) {
      mpi = std::make_shared<MpiCommunicator>();
      options.communicator = mpi;
      // Processes on one host share its cores.
      if (o->threads == 0) options.threads = std::max(1u, std::thread::hardware_concurrency() / mpi->local_size());
    }
#endif
    // Rank 0 speaks for all ranks: the text, the load reports, and the errors (which are agreed: every
    // rank throws the same one; the others leave silently with the same status).
    const bool speaker = !options.communicator || options.communicator->rank() == 0;
    try {
      generate(*o, options, speaker);
    } catch (const Error&) {
      if (!speaker) throw CLI::RuntimeError(1);
      throw;
    }
  });
}

}  // namespace wl::cli
