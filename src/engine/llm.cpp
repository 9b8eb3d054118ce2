#include "weightloader/llm.hpp"

#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "engine/llama_engine.hpp"
#include "engine/sampler.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

// run.c's safe_printf: a piece that is one byte, neither printable nor whitespace, is not shown.
std::string printable(std::string piece) {
  if (piece.size() == 1 && !std::isprint(static_cast<unsigned char>(piece[0])) &&
      !std::isspace(static_cast<unsigned char>(piece[0])))
    return {};
  return piece;
}

}  // namespace

LLM::LLM(LLMOptions options) : options_(std::move(options)) {
  std::error_code ec;
  LoaderChoice choice{options_.weight_loader, {}};
  if (choice.name == "auto") choice = std::filesystem::exists(options_.model, ec) ? detect_loader(options_.model) : LoaderChoice{"hf", {}};
  for (const auto& [k, v] : options_.weight_loader_kwargs) choice.kwargs[k] = v;
  loader_name_ = choice.name;
  const WeightLoaderRegistry& registry = options_.registry ? *options_.registry : WeightLoaderRegistry::global();
  std::unique_ptr<WeightLoader> loader = registry.create(choice.name, choice.kwargs);
  // Before get_weights: a model id missing from the cache downloads there, with this progress.
  if (options_.io.progress || options_.io.concurrency) loader->options().io = options_.io;
  std::unique_ptr<WeightSource> source = loader->get_weights(options_.model);
  config_ = llama_config_from_source(*source);
  const DType dtype = loader->dtype().value_or(options_.dtype);
  engine_ = std::make_unique<LlamaEngine>(config_, options_.tensor_parallel_size, dtype, options_.threads);

  // The engine never takes rotary tables, nor lm_head when the embeddings are tied.
  NameMapping& names = loader->options().names;
  names.drop(R"(.*rotary_emb\.inv_freq)");
  if (config_.tie_word_embeddings) names.drop(R"((.*\.)?lm_head\.weight)");
  loader_ = std::move(loader);
  if (!options_.defer_load)
    for (unsigned r = 0; r < engine_->ranks(); ++r) reports_.push_back(load_rank(r, *source));

  // Beside the weights: origin() is where the loader found them (a model id resolves to its snapshot).
  tokenizer_ = options_.tokenizer.empty() ? find_tokenizer(source->origin(), *source->opener()) : open_tokenizer(options_.tokenizer);
}

LLM::~LLM() = default;

unsigned LLM::ranks() const noexcept { return engine_->ranks(); }

Model& LLM::rank_model(unsigned rank) {
  if (rank >= engine_->ranks())
    throw Error(ErrorCode::InvalidArgument, fmt::format("rank {} of {}", rank, engine_->ranks()));
  return engine_->rank_model(rank);
}

LoadReport LLM::load_rank(unsigned rank, const WeightSource& source, std::optional<bool> strict) {
  Model& model = rank_model(rank);
  const LoadOptions base = loader_->options();
  // Row-parallel biases are added once, by rank 0.
  if (rank > 0) loader_->options().names.drop(R"(.*\.(o_proj|down_proj)\.bias)");
  if (strict) loader_->options().strict = *strict;
  try {
    LoadReport report = loader_->load_weights(model, source);
    loader_->options() = base;
    return report;
  } catch (...) {
    loader_->options() = base;
    throw;
  }
}

uint64_t LLM::parameter_bytes() const { return engine_->parameter_bytes(); }

GenerationOutput LLM::generate(const std::string& prompt, const SamplingParams& params) {
  if (!tokenizer_)
    throw Error(ErrorCode::TokenizerNotFound, "a text prompt needs a tokenizer: pass one (--tokenizer) or give token ids",
                options_.model);
  return generate(tokenizer_->encode(prompt, true), params);
}

GenerationOutput LLM::generate(const std::vector<int32_t>& prompt, const SamplingParams& params) {
  if (prompt.empty()) throw Error(ErrorCode::InvalidArgument, "the prompt needs at least one token (BOS)");
  GenerationOutput out;
  out.prompt_token_ids = prompt;
  // As run.c, generation stops where the model's context ends.
  const uint64_t positions = std::min<uint64_t>(prompt.size() + params.max_tokens, config_.max_position_embeddings);
  if (prompt.size() > positions)
    throw Error(ErrorCode::InvalidArgument, fmt::format("the prompt's {} tokens exceed the model's context of {}", prompt.size(),
                                                        config_.max_position_embeddings));
  engine_->reset(positions);
  const uint64_t seed = params.seed ? params.seed : uint64_t(std::time(nullptr));
  Sampler sampler(params.temperature, params.top_p, seed);
  const int32_t bos = tokenizer_ ? tokenizer_->bos_id() : 1;
  const int32_t eos = tokenizer_ ? tokenizer_->eos_id() : 2;
  auto emit = [&](const std::string& piece) {
    out.text += piece;
    if (params.stream && !piece.empty()) params.stream(piece);
  };
  if (tokenizer_ && prompt[0] != bos) emit(printable(tokenizer_->decode(bos, prompt[0])));

  int32_t token = prompt[0];
  std::chrono::steady_clock::time_point started;
  for (uint64_t pos = 0; pos < positions && out.token_ids.size() < params.max_tokens; ++pos) {
    const std::vector<float>& logits = engine_->forward(token, pos);
    if (params.return_logits) out.logits.push_back(logits);
    int32_t next;
    if (pos + 1 < prompt.size()) {
      next = prompt[pos + 1];
    } else {
      if (out.token_ids.empty()) started = std::chrono::steady_clock::now();
      next = sampler.sample(logits);
      if (params.stop_at_eos && (next == eos || next == bos)) break;
      out.token_ids.push_back(next);
    }
    if (tokenizer_) {
      const std::string piece = printable(tokenizer_->decode(token, next));
      if (pos + 1 >= prompt.size()) out.completion += piece;
      emit(piece);
    }
    token = next;
  }
  if (out.token_ids.size() > 1) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    out.tokens_per_second = s > 0 ? double(out.token_ids.size()) / s : 0;
  }
  return out;
}

}  // namespace wl
