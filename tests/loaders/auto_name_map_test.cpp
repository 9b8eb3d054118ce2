// name_map=auto: every pair of naming schemes, wrapper prefixes, fused parameters, the rotary
// layouts that go with the schemes, and the refusals (ambiguous, partial, heads unknown).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "test_util.hpp"
#include "weightloader/load_plan.hpp"
#include "weightloader/name_schemes.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

// A two-layer Llama: dim 16, 2 heads of 8 (a head size whose rotary permutation is not its own inverse), 1 kv head, FFN 6, vocab 5.
constexpr uint64_t kDim = 16, kHeads = 2, kKvHeads = 1, kHeadDim = 8, kFf = 6, kVocab = 5, kLayers = 2;

struct Tensor {
  std::string canonical;  // its Hugging Face name
  Shape shape;
  uint64_t rotary_heads;  // 0: not a q/k projection
};

std::vector<Tensor> llama() {
  std::vector<Tensor> out{{"model.embed_tokens.weight", {kVocab, kDim}, 0}};
  for (uint64_t l = 0; l < kLayers; ++l) {
    const std::string at = fmt::format("model.layers.{}.", l);
    out.push_back({at + "input_layernorm.weight", {kDim}, 0});
    out.push_back({at + "self_attn.q_proj.weight", {kHeads * kHeadDim, kDim}, kHeads});
    out.push_back({at + "self_attn.k_proj.weight", {kKvHeads * kHeadDim, kDim}, kKvHeads});
    out.push_back({at + "self_attn.v_proj.weight", {kKvHeads * kHeadDim, kDim}, 0});
    out.push_back({at + "self_attn.o_proj.weight", {kDim, kHeads * kHeadDim}, 0});
    out.push_back({at + "post_attention_layernorm.weight", {kDim}, 0});
    out.push_back({at + "mlp.gate_proj.weight", {kFf, kDim}, 0});
    out.push_back({at + "mlp.up_proj.weight", {kFf, kDim}, 0});
    out.push_back({at + "mlp.down_proj.weight", {kDim, kFf}, 0});
  }
  out.push_back({"model.norm.weight", {kDim}, 0});
  out.push_back({"lm_head.weight", {kVocab, kDim}, 0});
  return out;
}

// Each scheme's names, written out here independently of the library's tables.
std::string name_in(const std::string& scheme, const std::string& canonical) {
  using Table = std::vector<std::pair<std::string, std::string>>;
  static const std::map<std::string, Table> whole{
      {"hf", {{"model.embed_tokens.weight", "model.embed_tokens.weight"}, {"model.norm.weight", "model.norm.weight"}, {"lm_head.weight", "lm_head.weight"}}},
      {"meta", {{"model.embed_tokens.weight", "tok_embeddings.weight"}, {"model.norm.weight", "norm.weight"}, {"lm_head.weight", "output.weight"}}},
      {"torchtune", {{"model.embed_tokens.weight", "tok_embeddings.weight"}, {"model.norm.weight", "norm.scale"}, {"lm_head.weight", "output.weight"}}},
      {"gguf", {{"model.embed_tokens.weight", "token_embd.weight"}, {"model.norm.weight", "output_norm.weight"}, {"lm_head.weight", "output.weight"}}},
  };
  static const std::map<std::string, std::pair<std::string, Table>> layer{
      {"hf", {"model.layers.", {}}},
      {"meta", {"layers.", {{"input_layernorm.weight", "attention_norm.weight"}, {"self_attn.q_proj.weight", "attention.wq.weight"},
                            {"self_attn.k_proj.weight", "attention.wk.weight"}, {"self_attn.v_proj.weight", "attention.wv.weight"},
                            {"self_attn.o_proj.weight", "attention.wo.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
                            {"mlp.gate_proj.weight", "feed_forward.w1.weight"}, {"mlp.up_proj.weight", "feed_forward.w3.weight"},
                            {"mlp.down_proj.weight", "feed_forward.w2.weight"}}}},
      {"torchtune", {"layers.", {{"input_layernorm.weight", "sa_norm.scale"}, {"self_attn.q_proj.weight", "attn.q_proj.weight"},
                                 {"self_attn.k_proj.weight", "attn.k_proj.weight"}, {"self_attn.v_proj.weight", "attn.v_proj.weight"},
                                 {"self_attn.o_proj.weight", "attn.output_proj.weight"}, {"post_attention_layernorm.weight", "mlp_norm.scale"},
                                 {"mlp.gate_proj.weight", "mlp.w1.weight"}, {"mlp.up_proj.weight", "mlp.w3.weight"},
                                 {"mlp.down_proj.weight", "mlp.w2.weight"}}}},
      {"gguf", {"blk.", {{"input_layernorm.weight", "attn_norm.weight"}, {"self_attn.q_proj.weight", "attn_q.weight"},
                         {"self_attn.k_proj.weight", "attn_k.weight"}, {"self_attn.v_proj.weight", "attn_v.weight"},
                         {"self_attn.o_proj.weight", "attn_output.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
                         {"mlp.gate_proj.weight", "ffn_gate.weight"}, {"mlp.up_proj.weight", "ffn_up.weight"},
                         {"mlp.down_proj.weight", "ffn_down.weight"}}}},
  };
  for (const auto& [c, n] : whole.at(scheme))
    if (c == canonical) return n;
  const std::string rest = canonical.substr(std::string("model.layers.").size());
  const std::string number = rest.substr(0, rest.find('.')), leaf = rest.substr(rest.find('.') + 1);
  const auto& [prefix, table] = layer.at(scheme);
  if (table.empty()) return canonical;
  for (const auto& [c, n] : table)
    if (c == leaf) return prefix + number + "." + n;
  ADD_FAILURE() << "no " << scheme << " name for " << canonical;
  return {};
}

bool interleaved(const std::string& scheme) { return scheme != "hf"; }

// The tensor's values in Hugging Face's layout: distinct per tensor and element.
std::vector<float> hf_values(const Tensor& t, size_t index) {
  std::vector<float> v(shape_numel(t.shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(index * 1000 + i);
  return v;
}

// Meta's interleaved layout from Hugging Face's (the inverse of convert_llama_weights_to_hf.py's permute):
// within each head, interleaved row 2i + j holds HF row j * d/2 + i.
std::vector<float> to_interleaved(const std::vector<float>& hf, uint64_t heads, uint64_t cols) {
  std::vector<float> out(hf.size());
  const uint64_t rows = hf.size() / cols, d = rows / heads, half = d / 2;
  for (uint64_t h = 0; h < heads; ++h)
    for (uint64_t i = 0; i < half; ++i)
      for (uint64_t j = 0; j < 2; ++j)
        std::copy_n(hf.begin() + (h * d + j * half + i) * cols, cols, out.begin() + (h * d + 2 * i + j) * cols);
  return out;
}

std::vector<float> stored_values(const Tensor& t, size_t index, const std::string& scheme) {
  std::vector<float> v = hf_values(t, index);
  return t.rotary_heads && interleaved(scheme) ? to_interleaved(v, t.rotary_heads, t.shape[1]) : v;
}

const char* kConfig = R"({"num_attention_heads": 2, "num_key_value_heads": 1})";

// The model's tensors in `scheme` under `prefix`, as a checkpoint in memory (with the head counts a config.json gives).
std::unique_ptr<WeightSource> checkpoint(const std::string& scheme, const std::string& prefix = "",
                                         std::vector<std::pair<std::string, std::vector<float>>> extra = {},
                                         bool with_config = true) {
  auto values = std::make_shared<std::vector<std::vector<float>>>();
  std::vector<MemoryTensor> tensors;
  const std::vector<Tensor> all = llama();
  for (size_t i = 0; i < all.size(); ++i) {
    values->push_back(stored_values(all[i], i, scheme));
    tensors.push_back({prefix + name_in(scheme, all[i].canonical), DType::F32, all[i].shape, {}, values->back().data(), values});
  }
  for (auto& [name, v] : extra) {
    values->push_back(std::move(v));
    tensors.push_back({name, DType::F32, {values->back().size()}, {}, values->back().data(), values});
  }
  std::map<std::string, std::string> metadata;
  if (with_config) metadata["config.json"] = kConfig;
  return WeightSource::from_memory("<memory>", std::move(tensors), std::move(metadata));
}

// A model declaring the tensors in `scheme` under `prefix`; "vllm": Hugging Face names with fused
// qkv_proj and gate_up_proj parameters (no shards: name_map=auto assembles them).
Model model_in(const std::string& scheme, const std::string& prefix = "") {
  Model m;
  const std::string s = scheme == "vllm" ? "hf" : scheme;
  for (const Tensor& t : llama()) {
    if (scheme == "vllm") {
      const bool q = t.canonical.find("q_proj") != std::string::npos, g = t.canonical.find("gate_proj") != std::string::npos;
      if (t.canonical.find("k_proj") != std::string::npos || t.canonical.find("v_proj") != std::string::npos ||
          t.canonical.find("up_proj") != std::string::npos)
        continue;
      if (q || g) {
        std::string name = t.canonical;
        name.replace(name.find(q ? "q_proj" : "gate_proj"), q ? 6 : 9, q ? "qkv_proj" : "gate_up_proj");
        m.add_parameter(prefix + name, {q ? (kHeads + 2 * kKvHeads) * kHeadDim : 2 * kFf, kDim}, DType::F32);
        continue;
      }
    }
    m.add_parameter(prefix + name_in(s, t.canonical), t.shape, DType::F32);
  }
  return m;
}

std::vector<float> values_of(const Model& m, const std::string& name) {
  const Parameter* p = m.find(name);
  EXPECT_NE(p, nullptr) << name;
  if (!p) return {};
  return std::vector<float>(p->data.data<float>(), p->data.data<float>() + p->data.numel());
}

std::unique_ptr<WeightLoader> auto_loader(Kwargs extra = {}) {
  extra["name_map"] = std::string("auto");
  return WeightLoaderRegistry::with_builtins()->create("local", extra);
}

// Every parameter holds the values of its checkpoint tensor, in the model scheme's layout.
void expect_loaded(const Model& m, const std::string& scheme, const std::string& prefix = "") {
  const std::vector<Tensor> all = llama();
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string& c = all[i].canonical;
    if (scheme == "vllm" && (c.find("_proj.") != std::string::npos && c.find("o_proj") == std::string::npos &&
                             c.find("down_proj") == std::string::npos))
      continue;  // checked below
    EXPECT_EQ(values_of(m, prefix + name_in(scheme == "vllm" ? "hf" : scheme, c)), stored_values(all[i], i, scheme == "vllm" ? "hf" : scheme))
        << c << " into " << scheme;
  }
  if (scheme != "vllm") return;
  for (uint64_t l = 0; l < kLayers; ++l) {
    auto concat = [&](std::initializer_list<const char*> parts) {
      std::vector<float> out;
      for (const char* part : parts)
        for (size_t i = 0; i < all.size(); ++i)
          if (all[i].canonical == fmt::format("model.layers.{}.{}.weight", l, part)) {
            const std::vector<float> v = hf_values(all[i], i);
            out.insert(out.end(), v.begin(), v.end());
          }
      return out;
    };
    EXPECT_EQ(values_of(m, fmt::format("{}model.layers.{}.self_attn.qkv_proj.weight", prefix, l)),
              concat({"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}));
    EXPECT_EQ(values_of(m, fmt::format("{}model.layers.{}.mlp.gate_up_proj.weight", prefix, l)),
              concat({"mlp.gate_proj", "mlp.up_proj"}));
  }
}

class EverySchemePair : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(EverySchemePair, LoadsEveryTensorInTheModelsLayout) {
  const auto& [from, to] = GetParam();
  auto source = checkpoint(from);
  Model m = model_in(to);
  const LoadReport r = auto_loader()->load_weights(m, *source);
  expect_loaded(m, to);
  ASSERT_TRUE(r.names);
  EXPECT_EQ(r.names->from, from);
  EXPECT_EQ(r.names->to, to);
  const size_t total = m.parameters().size();
  EXPECT_EQ(r.names->matched, total);
  EXPECT_EQ(r.names->total, total);
  EXPECT_EQ(r.names->to_string(), fmt::format("auto ({} → {}), {} of {} matched", from, to, total, total));
  EXPECT_TRUE(r.missing.empty());
  EXPECT_TRUE(r.unexpected.empty());
}

INSTANTIATE_TEST_SUITE_P(AutoNameMap, EverySchemePair,
                         ::testing::Combine(::testing::Values("hf", "meta", "torchtune", "gguf"),
                                            ::testing::Values("hf", "meta", "torchtune", "gguf", "vllm")),
                         [](const auto& info) { return std::get<0>(info.param) + "_to_" + std::get<1>(info.param); });

TEST(AutoNameMap, WrapperPrefixesOnEitherSideInAnyCombination) {
  for (const std::string prefix : {"module.", "_orig_mod.", "module._orig_mod.", "transformer.", "model.", "language_model."}) {
    auto source = checkpoint("meta", prefix);
    Model m = model_in("hf");
    const LoadReport r = auto_loader()->load_weights(m, *source);
    expect_loaded(m, "hf");
    EXPECT_EQ(r.names->from_prefix, prefix);
    EXPECT_EQ(r.names->to_string(), fmt::format("auto (meta under {} → hf), 21 of 21 matched", prefix));
  }
  auto source = checkpoint("hf", "module.");
  Model m = model_in("torchtune", "_orig_mod.");
  const LoadReport r = auto_loader()->load_weights(m, *source);
  expect_loaded(m, "torchtune", "_orig_mod.");
  EXPECT_EQ(r.names->to_string(), "auto (hf under module. → torchtune under _orig_mod.), 21 of 21 matched");
}

TEST(AutoNameMap, ShardedModelParametersMatchThroughTheirShardsNames) {
  // The engine's own declaration: fused parameters with shards naming Hugging Face tensors.
  auto source = checkpoint("gguf");
  Model m;
  const std::vector<Tensor> all = llama();
  m.add_parameter("qkv", {(kHeads + 2 * kKvHeads) * kHeadDim, kDim}, DType::F32,
                  {{"model.layers.1.self_attn.q_proj.weight", Slice{}, 0},
                   {"model.layers.1.self_attn.k_proj.weight", Slice{}, kHeads * kHeadDim},
                   {"model.layers.1.self_attn.v_proj.weight", Slice{}, (kHeads + kKvHeads) * kHeadDim}});
  LoadOptions options;
  options.auto_names = true;
  options.strict = false;
  const LoadReport r = execute_load(plan_load(m, *source, options), *source, options);
  std::vector<float> want;
  for (size_t i = 0; i < all.size(); ++i)
    for (const char* p : {"q_proj", "k_proj", "v_proj"})
      if (all[i].canonical == fmt::format("model.layers.1.self_attn.{}.weight", p)) {
        const std::vector<float> v = hf_values(all[i], i);
        want.insert(want.end(), v.begin(), v.end());
      }
  // q and k listed in catalogue order; the order of the loop above is q, k, v per tensor index.
  EXPECT_EQ(values_of(m, "qkv"), want);
  EXPECT_EQ(r.names->to_string(), "auto (gguf → hf), 3 of 3 matched");
}

TEST(AutoNameMap, TwoMappingsThatTieAreAmbiguousAndListTheCandidates) {
  // Both a Hugging Face and a Meta final norm, and a model that takes one: which one is unknowable.
  auto values = std::make_shared<std::vector<float>>(kDim, 1.0f);
  auto source = WeightSource::from_memory(
      "<memory>", {{"model.norm.weight", DType::F32, {kDim}, {}, values->data(), values},
                   {"norm.weight", DType::F32, {kDim}, {}, values->data(), values}});
  Model m;
  m.add_parameter("output_norm.weight", {kDim}, DType::F32);
  const std::string msg = test::expect_error(ErrorCode::NameSchemeAmbiguous, [&] { auto_loader()->load_weights(m, *source); });
  EXPECT_NE(msg.find("hf → gguf"), std::string::npos) << msg;
  EXPECT_NE(msg.find("meta → gguf"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 of 1"), std::string::npos) << msg;
  // An explicit mapping settles it.
  auto explicit_loader = auto_loader({{"rename", std::string("norm.weight=output_norm.weight")}, {"strict", false}});
  const LoadReport r = explicit_loader->load_weights(m, *source);
  EXPECT_EQ(r.loaded, std::vector<std::string>{"output_norm.weight"});
}

TEST(AutoNameMap, APartialMatchIsAnErrorUnderStrictListingWhatIsLeft) {
  auto source = checkpoint("meta");
  Model m = model_in("hf");
  m.add_parameter("model.layers.2.input_layernorm.weight", {kDim}, DType::F32);  // a third layer the checkpoint lacks
  const std::string msg = test::expect_error(ErrorCode::NameSchemePartial, [&] { auto_loader()->load_weights(m, *source); });
  EXPECT_NE(msg.find("model.layers.2.input_layernorm.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("meta → hf 21 of 22"), std::string::npos) << msg;
  EXPECT_NE(msg.find("torchtune → hf"), std::string::npos) << msg;  // the runner-up, with its score
  const LoadReport r = auto_loader({{"strict", false}})->load_weights(m, *source);
  EXPECT_EQ(r.names->to_string(), "auto (meta → hf), 21 of 22 matched");
  EXPECT_EQ(r.missing, std::vector<std::string>{"model.layers.2.input_layernorm.weight"});
}

TEST(AutoNameMap, ExplicitRulesWinOverTheScheme) {
  // Tied embeddings written out: the model's lm_head takes tok_embeddings by an explicit rename.
  auto source = checkpoint("meta");
  Model m = model_in("hf");
  auto l = auto_loader({{"rename", std::string("tok_embeddings.weight=lm_head.weight")}, {"drop", std::string("output\\.weight")},
                        {"strict", false}});
  const LoadReport r = l->load_weights(m, *source);
  const std::vector<Tensor> all = llama();
  EXPECT_EQ(values_of(m, "lm_head.weight"), hf_values(all[0], 0));
  EXPECT_EQ(r.skipped, std::vector<std::string>{"output.weight"});
  EXPECT_EQ(r.missing, std::vector<std::string>{"model.embed_tokens.weight"});
  EXPECT_EQ(r.names->matched, 20u);
}

TEST(AutoNameMap, RotaryConversionNeedsTheHeadCounts) {
  auto source = checkpoint("meta", "", {}, /*with_config=*/false);
  Model m = model_in("hf");
  const std::string msg = test::expect_error(ErrorCode::ConfigMissing, [&] { auto_loader()->load_weights(m, *source); });
  EXPECT_NE(msg.find("attention.wq.weight"), std::string::npos) << msg;
  // Between two interleaved schemes no head count is needed.
  Model gguf = model_in("gguf");
  auto_loader()->load_weights(gguf, *source);
  expect_loaded(gguf, "gguf");
}

TEST(AutoNameMap, TheSchemesOwnLeftoversAreSkipped) {
  auto source = checkpoint("meta", "", {{"rope.freqs", std::vector<float>(kHeadDim / 2, 1.0f)}});
  Model m = model_in("hf");
  const LoadReport r = auto_loader()->load_weights(m, *source);
  EXPECT_EQ(r.skipped, std::vector<std::string>{"rope.freqs"});
  expect_loaded(m, "hf");
}

TEST(AutoNameMap, ShapesBreakTies) {
  // norm.weight [8] and norm.scale [3]: Meta's and torchtune's final norm; the model's shape picks Meta's.
  auto a = std::make_shared<std::vector<float>>(kDim, 2.0f);
  auto b = std::make_shared<std::vector<float>>(3, 3.0f);
  auto source = WeightSource::from_memory("<memory>", {{"norm.weight", DType::F32, {kDim}, {}, a->data(), a},
                                                       {"norm.scale", DType::F32, {3}, {}, b->data(), b}});
  Model m;
  m.add_parameter("model.norm.weight", {kDim}, DType::F32);
  const LoadReport r = auto_loader({{"strict", false}})->load_weights(m, *source);
  EXPECT_EQ(r.names->from, "meta");
  EXPECT_EQ(values_of(m, "model.norm.weight"), std::vector<float>(kDim, 2.0f));
}

TEST(AutoNameMap, MirrorModelUsesHuggingFaceNames) {
  auto source = checkpoint("torchtune", "module.");
  auto l = auto_loader();
  Model m = l->mirror_model(*source);
  Model want = model_in("hf");
  ASSERT_EQ(m.parameters().size(), want.parameters().size());
  for (const Parameter& p : want.parameters()) EXPECT_NE(m.find(p.name), nullptr) << p.name;
  l->load_weights(m, *source);
  expect_loaded(m, "hf");
}

TEST(AutoNameMap, TheKwargTakesAutoOrExplicit) {
  EXPECT_TRUE(auto_loader()->options().auto_names);
  EXPECT_FALSE(WeightLoaderRegistry::with_builtins()->create("local", {{"name_map", std::string("explicit")}})->options().auto_names);
  const std::string msg = test::expect_error(ErrorCode::InvalidKwarg, [] {
    WeightLoaderRegistry::with_builtins()->create("local", {{"name_map", std::string("guess")}});
  });
  EXPECT_NE(msg.find("guess"), std::string::npos);
}

TEST(AutoNameMap, WithoutItAStrictLoadSaysWhichSchemesItSaw) {
  auto source = checkpoint("gguf", "module.");
  Model m = model_in("torchtune");
  const std::string msg = test::expect_error(ErrorCode::MissingParameters, [&] {
    WeightLoaderRegistry::with_builtins()->create("local")->load_weights(m, *source);
  });
  EXPECT_NE(msg.find("the checkpoint's names are gguf (prefix module.), the model's torchtune: pass name_map=auto"),
            std::string::npos) << msg;
}

TEST(DetectNameScheme, RecognisesEachSchemeAndItsWrapper) {
  for (const std::string scheme : {"hf", "meta", "torchtune", "gguf"}) {
    std::vector<std::string> names;
    for (const Tensor& t : llama()) names.push_back("module." + name_in(scheme, t.canonical));
    const DetectedScheme d = detect_name_scheme(names);
    EXPECT_EQ(d.scheme, scheme);
    EXPECT_EQ(d.prefix, "module.");
    EXPECT_EQ(d.matched, names.size());
    EXPECT_EQ(d.to_string(), scheme + " (prefix module.)");
  }
  const DetectedScheme none = detect_name_scheme({"a.b", "c"});
  EXPECT_EQ(none.scheme, "");
  EXPECT_NE(none.to_string().find("unknown"), std::string::npos);
  const DetectedScheme part = detect_name_scheme({"model.norm.weight", "extra"});
  EXPECT_EQ(part.to_string(), "hf, 1 of 2 names");
}

}  // namespace
}  // namespace wl
