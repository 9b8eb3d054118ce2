#include "weightloader/checkpoint_names.hpp"
#include "weightloader/engine/llm.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <exception>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/llama_engine.hpp"
#include "engine/rank_load_options.hpp"
#include "loaders/rank_agreement.hpp"
#include "engine/sampler.hpp"
#include "loaders/shared_catalogue.hpp"
#include "loaders/catalogue_value.hpp"
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

// generation_config.json beside the weights, when there is one: its eos_token_id.
std::vector<int32_t> generation_config_eos(const WeightSource& source) {
  const Opener& opener = *source.opener();
  const std::string dir = opener.is_directory(source.origin()) ? source.origin() : opener.parent(source.origin());
  const std::string path = opener.join(dir, "generation_config.json");
  if (!opener.exists(path) || opener.is_directory(path)) return {};
  const std::shared_ptr<ByteSource> file = opener.open(path);
  return eos_ids_from_generation_config(file->read_string(0, file->size()), path);
}

// What rank 0 broadcasts instead of a token when SamplingParams::cancelled says stop.
constexpr int32_t kCancelledToken = -1;

bool stopped_for_another(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& error) {
    return error.code() == ErrorCode::RankFailed;
  } catch (...) {
    return false;
  }
}

}  // namespace

LLM::LLM(LLMOptions options) : options_(std::move(options)) {
  std::unique_ptr<WeightSource> source;
  Communicator* comm = options_.communicator.get();
  if (!comm) {
    source = open();
    if (!options_.defer_load) load_held_ranks(*source);
    for (const auto& e : engines_) parameter_bytes_ += e->model().total_bytes();
    return;
  }
  // Across processes every stage ends in an agreement, so that no rank throws alone (the others
  // would wait for it in their first collective) and none computes from a model another lacks.
  std::optional<Error> failure;
  auto attempt = [&](auto&& step) {
    if (failure) return;
    try {
      step();
    } catch (const Error& e) {
      failure = e;
    } catch (const std::exception& e) {
      comm->abort(e.what());  // not an Error the ranks can agree on: end them all
      throw;
    }
  };
  // Rank 0 reads the headers; the others given the same model take its catalogue (where it can be
  // carried) and open only the bytes they load. Every rank then compares what it holds.
  std::string shared;
  if (comm->rank() == 0) attempt([&] { source = open({}, &shared); });
  shared = broadcast_string(*comm, shared, 0);
  if (comm->rank() != 0) attempt([&] { source = open(shared); });
  agree(*comm, "opening the checkpoint", failure, failure ? std::string() : describe_checkpoint(*source));
  if (!options_.defer_load) attempt([&] { load_held_ranks(*source); });
  agree(*comm, "loading", failure);
  const uint64_t mine = engines_[0]->model().total_bytes();
  std::vector<uint64_t> bytes(comm->size());
  comm->all_gather(&mine, sizeof mine, bytes.data());
  for (uint64_t b : bytes) parameter_bytes_ += b;
  if (!reports_.empty()) {
    std::vector<LoadReport> all;
    for (const std::string& json : all_gather_strings(*comm, reports_[0].to_json())) all.push_back(LoadReport::from_json(json));
    reports_ = std::move(all);
  }
}

LLM::~LLM() = default;

std::unique_ptr<WeightSource> LLM::open(const std::string& shared, std::string* to_share) {
  LoaderChoice choice{options_.weight_loader, {}};
  // Through the opener: a URL (http, https, s3) is a path as a local one is; a model id means hf.
  // Detection and get_weights share one caching opener: each file is opened (a HEAD) once.
  Context context = options_.context;
  const auto session = std::make_shared<CachingOpener>(context.files());
  context.opener = session;
  const std::optional<SharedCatalogue> received = received_catalogue(shared, options_.model);
  if (received) choice = received->choice;
  else if (choice.name == "auto") choice = detect_loader(options_.model, *session, formats_of(context));
  const LoaderChoice detected = choice;
  for (const auto& [k, v] : options_.weight_loader_kwargs) choice.kwargs[k] = v;
  loader_name_ = choice.name;
  std::unique_ptr<WeightLoaderRegistry> builtins;  // when the options name no registry
  const WeightLoaderRegistry& registry =
      options_.registry ? *options_.registry : *(builtins = WeightLoaderRegistry::with_builtins());
  std::unique_ptr<const WeightLoader> loader = registry.create(choice.name, choice.kwargs, std::move(context));
  // This LLM's calls: a model id missing from the cache downloads with this progress and concurrency.
  load_options_ = loader->options();
  if (options_.io.progress || options_.io.concurrency) load_options_.io = options_.io;
  std::unique_ptr<WeightSource> source =
      received ? catalogue_from_value(received->catalogue, session) : loader->get_weights(options_.model, load_options_);
  if (to_share) *to_share = share(detected, *source, options_.model);
  // Under Hugging Face names (name_map=auto: whatever the checkpoint's scheme), as the configuration reads them.
  config_ = llama_config_from_source(*loader->canonical_source(*source));
  const DType dtype = loader->dtype().value_or(options_.dtype);

  const unsigned cores = options_.threads ? options_.threads : std::max(1u, std::thread::hardware_concurrency());
  if (Communicator* comm = options_.communicator.get()) {
    if (options_.tensor_parallel_size != 1 && options_.tensor_parallel_size != comm->size())
      throw Error(ErrorCode::InvalidArgument, fmt::format("tensor_parallel_size {} differs from the communicator's {} ranks",
                                                          options_.tensor_parallel_size, comm->size()));
    engines_.push_back(std::make_unique<LlamaEngine>(config_, *comm, dtype, cores, options_.expert_parallel));
  } else {
    const unsigned tp = options_.tensor_parallel_size;
    partition_rank(config_, 0, tp, options_.expert_parallel);  // ConfigInvalid for a size the model cannot be split into
    own_group_ = in_process_group(tp);
    for (unsigned r = 0; r < tp; ++r)
      engines_.push_back(
          std::make_unique<LlamaEngine>(config_, *own_group_[r], dtype, std::max(1u, cores / tp), options_.expert_parallel));
  }

  drop_unused_by_engine(load_options_.names, config_);
  loader_ = std::move(loader);
  // Beside the weights: origin() is where the loader found them (a model id resolves to its snapshot).
  tokenizer_ = options_.tokenizer.empty() ? find_tokenizer(source->origin(), *source->opener())
                                          : open_tokenizer(options_.tokenizer, *options_.context.files());
  stop_ids_ = stop_tokens(*source);
  return source;
}

std::vector<int32_t> LLM::stop_tokens(const WeightSource& source) const {
  // llama2.c's run.c stops at BOS and EOS (1 and 2 without a tokenizer).
  if (config_.origin == "llama2c") return tokenizer_ ? std::vector<int32_t>{tokenizer_->bos_id(), tokenizer_->eos_id()} : std::vector<int32_t>{1, 2};
  // Otherwise what the model says (generation_config.json over config.json, as transformers
  // reads them; GGUF's tokenizer.ggml.eos_token_id), or else its tokenizer's EOS.
  std::vector<int32_t> ids = config_.origin == "config.json" ? generation_config_eos(source) : std::vector<int32_t>{};
  if (ids.empty()) ids = config_.eos_token_ids;
  if (ids.empty() && tokenizer_ && tokenizer_->eos_id() >= 0) ids.push_back(tokenizer_->eos_id());
  return ids;
}

void LLM::load_held_ranks(const WeightSource& source) {
  for (const auto& e : engines_) reports_.push_back(load_rank(e->rank(), source));
}

unsigned LLM::ranks() const noexcept { return engines_.front()->communicator().size(); }

std::vector<unsigned> LLM::held_ranks() const {
  std::vector<unsigned> out;
  for (const auto& e : engines_) out.push_back(e->rank());
  return out;
}

LlamaEngine& LLM::engine(unsigned rank) const {
  for (const auto& e : engines_)
    if (e->rank() == rank) return *e;
  throw Error(ErrorCode::InvalidArgument, rank < ranks() ? fmt::format("rank {} of {} is held by another process", rank, ranks())
                                                         : fmt::format("rank {} of {}", rank, ranks()));
}

Model& LLM::rank_model(unsigned rank) { return engine(rank).model(); }

LoadReport LLM::load_rank(unsigned rank, const WeightSource& source, std::optional<bool> strict) {
  Model& model = rank_model(rank);
  // This rank's: the loader is shared by every rank's thread.
  LoadOptions call = rank_load_options(load_options_, config_, engine(rank).partition());
  if (strict) call.strict = *strict;
  return loader_->load_weights(model, source, call);
}

uint64_t LLM::parameter_bytes() const { return parameter_bytes_; }

GenerationOutput LLM::generate(const std::string& prompt, const SamplingParams& params) {
  if (!tokenizer_)
    throw Error(ErrorCode::TokenizerNotFound, "a text prompt needs a tokenizer: pass one (--tokenizer) or give token ids",
                options_.model);
  return generate(tokenizer_->encode(prompt, true), params);
}

GenerationOutput LLM::generate(const std::vector<int32_t>& prompt, const SamplingParams& params) {
  // Everything a rank could refuse is checked here, alike on every rank, before any collective.
  if (prompt.empty()) throw Error(ErrorCode::InvalidArgument, "the prompt needs at least one token (BOS)");
  for (int32_t token : prompt)
    if (token < 0 || uint64_t(token) >= config_.vocab_size)
      throw Error(ErrorCode::InvalidArgument, fmt::format("token id {} is outside the vocabulary [0, {})", token, config_.vocab_size));
  // As run.c, generation stops where the model's context ends.
  const uint64_t positions = std::min<uint64_t>(prompt.size() + params.max_tokens, config_.context_length());
  if (prompt.size() > positions)
    throw Error(ErrorCode::InvalidArgument, fmt::format("the prompt's {} tokens exceed the model's context of {}", prompt.size(),
                                                        config_.context_length()));
  const uint64_t seed = params.seed ? params.seed : uint64_t(std::time(nullptr));

  // Each held rank runs the same loop on its own thread (the first on this one). A rank that
  // fails aborts the group, so the others stop instead of waiting for it (across processes,
  // MPI ends the job).
  const size_t n = engines_.size();
  std::vector<std::optional<GenerationOutput>> outs(n);
  std::vector<std::exception_ptr> errors(n);
  auto run = [&](size_t i) {
    try {
      outs[i] = run_rank(*engines_[i], prompt, params, positions, seed);
    } catch (const std::exception& e) {
      errors[i] = std::current_exception();
      engines_[i]->communicator().abort(e.what());
    }
  };
  for (const auto& engine : engines_) engine->communicator().recover();  // a failed generate left no rank waiting
  std::vector<std::thread> others;
  for (size_t i = 1; i < n; ++i) others.emplace_back(run, i);
  run(0);
  for (std::thread& t : others) t.join();
  // The first rank's own error, rather than the others' "stopped because it failed".
  std::exception_ptr first;
  for (const std::exception_ptr& e : errors)
    if (e && (!first || (stopped_for_another(first) && !stopped_for_another(e)))) first = e;
  if (first) std::rethrow_exception(first);
  if (!outs[0]) throw Error(ErrorCode::Cancelled, "generation cancelled", options_.model);
  return std::move(*outs[0]);
}

std::optional<GenerationOutput> LLM::run_rank(LlamaEngine& engine, const std::vector<int32_t>& prompt, const SamplingParams& params,
                               uint64_t positions, uint64_t seed) {
  GenerationOutput out;
  out.prompt_token_ids = prompt;
  engine.reset(positions);
  // Rank 0 samples and sends each token to the others; every rank keeps the same output.
  const bool leader = engine.rank() == 0;
  Sampler sampler(params.temperature, params.top_p, seed);
  const int32_t bos = tokenizer_ ? tokenizer_->bos_id() : 1;
  auto emit = [&](const std::string& piece) {
    out.text += piece;
    if (leader && params.stream && !piece.empty()) params.stream(piece);
  };
  if (tokenizer_ && prompt[0] != bos) emit(printable(tokenizer_->decode(bos, prompt[0])));

  int32_t token = prompt[0];
  std::chrono::steady_clock::time_point started;
  for (uint64_t pos = 0; pos < positions && out.token_ids.size() < params.max_tokens; ++pos) {
    if (engine.set_sequence_length(std::max<uint64_t>(prompt.size(), pos + 1)))
      for (uint64_t p = 0; p < pos; ++p)  // the cached positions again, with the new frequencies
        engine.forward(p < prompt.size() ? prompt[p] : out.token_ids[p - prompt.size()], p);
    const std::vector<float>& logits = engine.forward(token, pos);
    if (params.return_logits) out.logits.push_back(logits);
    int32_t next;
    if (pos + 1 < prompt.size()) {
      next = prompt[pos + 1];
    } else {
      if (out.token_ids.empty()) started = std::chrono::steady_clock::now();
      next = leader ? (params.cancelled && params.cancelled() ? kCancelledToken : sampler.sample(logits)) : 0;
      engine.communicator().broadcast(&next, sizeof next, 0);
      if (next == kCancelledToken) return std::nullopt;
      if (params.stop_at_eos && std::find(stop_ids_.begin(), stop_ids_.end(), next) != stop_ids_.end()) break;
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
