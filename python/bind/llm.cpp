// The C++ engine for Python: LLM construction (loading through a C++ loader, or deferred so that
// a Python loader fills the ranks' parameters in place), the parameters as writable buffers that
// alias the engine's memory, and generation with the GIL released.
#include <fmt/format.h>

#include "bind/bindings.hpp"
#include "bind/interruptible.hpp"
#include "weightloader/error.hpp"
#include "weightloader/engine/llm.hpp"
#include "weightloader/registry.hpp"

namespace wl::py {

namespace pyb = pybind11;

namespace {

// The engine and how its long calls (construction, load_rank, generate) are interrupted; the
// constructor's progress callable keeps receiving the loader's progress in later load_rank calls.
struct Engine {
  Interruptible calls;
  std::unique_ptr<LLM> llm;
};

// A parameter's memory as a Python buffer; it keeps the LLM object alive, so a tensor made from it
// (torch.frombuffer) never outlives the engine's memory.
struct ParameterBuffer {
  pyb::object owner;
  std::byte* data;
  uint64_t nbytes;
};

std::unique_ptr<Engine> make_llm(const std::string& model, const std::string& loader, const pyb::dict& kwargs,
                                 const std::string& dtype, unsigned tp, bool expert_parallel, const std::string& tokenizer,
                                 unsigned threads, bool defer_load, pyb::object progress) {
  Interruptible calls(std::move(progress));
  LLMOptions o;
  o.model = model;
  o.weight_loader = loader;
  o.weight_loader_kwargs = to_kwargs(kwargs);
  if (!dtype.empty()) o.dtype = dtype_from_name(dtype);
  o.tensor_parallel_size = tp;
  o.expert_parallel = expert_parallel;
  o.tokenizer = tokenizer;
  o.threads = threads;
  o.defer_load = defer_load;
  o.context = module_context();
  o.registry = &module_registry();
  o.io.progress = calls.progress();
  std::unique_ptr<LLM> llm = calls.run([&] { return std::make_unique<LLM>(std::move(o)); });
  return std::make_unique<Engine>(Engine{calls, std::move(llm)});
}

// A generation stops between two tokens when interrupted (the engine asks before each), its ranks
// left ready for the next one.
pyb::dict generate(Engine& e, const pyb::object& prompt, uint32_t max_tokens, float temperature, float top_p,
                   uint64_t seed, bool return_logits, pyb::object stream) {
  SamplingParams p;
  p.max_tokens = max_tokens;
  p.temperature = temperature;
  p.top_p = top_p;
  p.seed = seed;
  p.return_logits = return_logits;
  p.cancelled = [&e] { return e.calls.cancelled(); };
  if (!stream.is_none())
    p.stream = [&stream](const std::string& piece) {
      pyb::gil_scoped_acquire gil;
      stream(pyb::bytes(piece));  // bytes: a piece may end inside a UTF-8 character
    };
  GenerationOutput out;
  if (pyb::isinstance<pyb::str>(prompt)) {
    const std::string text = prompt.cast<std::string>();
    out = e.calls.run([&] { return e.llm->generate(text, p); });
  } else {
    const std::vector<int32_t> ids = prompt.cast<std::vector<int32_t>>();
    out = e.calls.run([&] { return e.llm->generate(ids, p); });
  }
  pyb::dict d;
  d["text"] = pyb::bytes(out.text);
  d["completion"] = pyb::bytes(out.completion);
  d["token_ids"] = out.token_ids;
  d["prompt_token_ids"] = out.prompt_token_ids;
  d["tokens_per_second"] = out.tokens_per_second;
  if (return_logits) d["logits"] = out.logits;
  return d;
}

}  // namespace

void register_llm(pyb::module_& m) {
  // The config.json the engine derives from a checkpoint (its config.json, GGUF keys, llama2.c
  // header or params.json): what the vLLM plugin gives vLLM for a checkpoint without one.
  m.def("hf_config_json", [](const WeightSource& source) { return llama_config_from_source(source).to_hf_config_json(); },
        pyb::arg("source"));
  pyb::class_<ParameterBuffer>(m, "ParameterBuffer", pyb::buffer_protocol())
      .def_buffer([](ParameterBuffer& b) {
        return pyb::buffer_info(b.data, 1, "B", 1, {static_cast<pyb::ssize_t>(b.nbytes)}, {1}, false);
      });
  pyb::class_<Engine>(m, "LLM")
      .def(pyb::init(&make_llm), pyb::arg("model"), pyb::arg("weight_loader") = "auto",
           pyb::arg("kwargs") = pyb::dict(), pyb::arg("dtype") = "", pyb::arg("tensor_parallel_size") = 1,
           pyb::arg("expert_parallel") = false, pyb::arg("tokenizer") = "", pyb::arg("threads") = 0, pyb::arg("defer_load") = false,
           pyb::arg("progress") = pyb::none())
      .def_property_readonly("ranks", [](const Engine& e) { return e.llm->ranks(); })
      .def_property_readonly("loader_name", [](const Engine& e) { return e.llm->loader_name(); })
      .def_property_readonly("stop_token_ids", [](const Engine& e) { return e.llm->stop_token_ids(); })
      .def_property_readonly("has_tokenizer", [](const Engine& e) { return e.llm->tokenizer() != nullptr; })
      .def_property_readonly("config", [](const Engine& e) {
        const LlamaConfig& c = e.llm->config();
        pyb::dict d;
        d["hidden_size"] = c.hidden_size, d["intermediate_size"] = c.intermediate_size, d["num_layers"] = c.num_layers;
        d["num_heads"] = c.num_heads, d["num_kv_heads"] = c.num_kv_heads, d["head_dim"] = c.head_dim;
        d["vocab_size"] = c.vocab_size, d["max_position_embeddings"] = c.max_position_embeddings;
        d["tie_word_embeddings"] = c.tie_word_embeddings, d["origin"] = c.origin;
        d["architecture"] = c.architecture, d["features"] = c.features();
        return d;
      })
      // (name, dtype, shape, buffer, shards) of rank r's parameters; the buffers alias the engine's memory.
      .def("rank_parameters", [](pyb::object self, unsigned rank) {
        LLM& llm = *self.cast<Engine&>().llm;
        pyb::list out;
        for (Parameter& p : llm.rank_model(rank).parameters()) {
          pyb::list shards;  // (checkpoint name, dim, begin, end or None, row offset): what fills which rows
          for (const ParameterShard& s : p.shards)
            shards.append(pyb::make_tuple(s.from, s.slice.dim, s.slice.begin,
                                          s.slice.end == UINT64_MAX ? pyb::object(pyb::none()) : pyb::int_(s.slice.end),
                                          s.row_offset));
          out.append(pyb::make_tuple(p.name, std::string(dtype_name(p.dtype())), p.shape(),
                                     ParameterBuffer{self, p.data.raw(), p.data.nbytes()}, shards));
        }
        return out;
      })
      .def("load_rank", [](Engine& e, unsigned rank, const WeightSource& source, std::optional<bool> strict) {
        return e.calls.run([&] { return e.llm->load_rank(rank, source, strict); });
      }, pyb::arg("rank"), pyb::arg("source"), pyb::arg("strict") = pyb::none())
      .def("load_reports", [](const Engine& e) { return e.llm->load_reports(); })
      .def("generate", &generate, pyb::arg("prompt"), pyb::arg("max_tokens") = 16, pyb::arg("temperature") = 1.0f,
           pyb::arg("top_p") = 0.9f, pyb::arg("seed") = 0, pyb::arg("return_logits") = false,
           pyb::arg("stream") = pyb::none());
}

}  // namespace wl::py
