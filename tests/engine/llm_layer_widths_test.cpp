// Pruned models whose layers differ in width: config.json's per-layer intermediate_size list and
// Nemotron-NAS / DeciLM block_configs. The checkpoints are built here from the tiny transformers
// fixtures (../shared/testdata/hf-tiny-arch) so that the widths change and the function does not:
// extra FFN units whose down_proj columns are zero, kv heads duplicated (each query head reads a copy
// of the head it read), and inserted layers that add nothing. Their logits must stay transformers'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/reference_logits.hpp"
#include "engine/tensor_parallel.hpp"
#include "test_util.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/engine/llm.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

using nlohmann::json;
using Tensors = std::map<std::string, TensorView>;

std::string qwen2_dir() { return (test::testdata_dir() / "hf-tiny-arch" / "qwen2").string(); }
std::string qwen2_reference() { return qwen2_dir() + "/reference_logits.json"; }

// qwen2: hidden 8, 2 query heads and 1 kv head of 4, 12 FFN units, 2 layers, q/k/v biases.
Tensors qwen2_tensors() {
  auto source = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(qwen2_dir() + "/model.safetensors");
  Tensors out;
  for (const TensorInfo& t : source->tensors()) out[t.name] = source->load(t, DType::F32);
  return out;
}

json qwen2_config() { return json::parse(test::read_bytes(qwen2_dir() + "/config.json")); }

// A [rows, cols] (cols 0: a vector of `rows`) F32 tensor of f(row, col).
TensorView make(uint64_t rows, uint64_t cols, const std::function<float(uint64_t, uint64_t)>& f) {
  TensorView t = TensorView::empty(DType::F32, cols ? Shape{rows, cols} : Shape{rows});
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < std::max<uint64_t>(cols, 1); ++c) t.data<float>()[r * std::max<uint64_t>(cols, 1) + c] = f(r, c);
  return t;
}

float at(const TensorView& t, uint64_t r, uint64_t c) { return t.data<float>()[r * (t.shape().size() == 2 ? t.shape()[1] : 1) + c]; }

// Weights for units the model must not depend on: non-zero, so a wrong mapping would show.
float noise(uint64_t r, uint64_t c) { return 0.3f * std::sin(float(7 * r + 3 * c + 1)); }

// Layer `from`'s MLP widened to `units`: the new units' gate/up rows are noise, their down_proj columns zero.
void widen_mlp(const Tensors& in, uint64_t from, Tensors& out, uint64_t to, uint64_t units) {
  const std::string a = fmt::format("model.layers.{}.mlp.", from), b = fmt::format("model.layers.{}.mlp.", to);
  const TensorView &gate = in.at(a + "gate_proj.weight"), &up = in.at(a + "up_proj.weight"), &down = in.at(a + "down_proj.weight");
  const uint64_t ff = gate.shape()[0], D = gate.shape()[1];
  auto grown = [&](const TensorView& t) { return make(units, D, [&](uint64_t r, uint64_t c) { return r < ff ? at(t, r, c) : noise(r, c); }); };
  out[b + "gate_proj.weight"] = grown(gate);
  out[b + "up_proj.weight"] = grown(up);
  out[b + "down_proj.weight"] = make(D, units, [&](uint64_t r, uint64_t c) { return c < ff ? at(down, r, c) : 0.0f; });
}

// Layer `from`'s attention whose kv head k is the source's kv head heads[k] (each query head of a
// group of n_heads_in_group / copies reads a copy of the head it read).
void copy_attention(const Tensors& in, uint64_t from, Tensors& out, uint64_t to, const std::vector<uint64_t>& heads, uint64_t head_dim) {
  const std::string a = fmt::format("model.layers.{}.self_attn.", from), b = fmt::format("model.layers.{}.self_attn.", to);
  for (const char* name : {"q_proj.weight", "q_proj.bias", "o_proj.weight"})
    if (in.count(a + name)) out[b + name] = in.at(a + name);
  for (const char* name : {"k_proj.weight", "k_proj.bias", "v_proj.weight", "v_proj.bias"}) {
    if (!in.count(a + name)) continue;
    const TensorView& t = in.at(a + name);
    const uint64_t cols = t.shape().size() == 2 ? t.shape()[1] : 0;
    out[b + name] = make(heads.size() * head_dim, cols, [&](uint64_t r, uint64_t c) { return at(t, heads[r / head_dim] * head_dim + r % head_dim, c); });
  }
}

void copy_norms(const Tensors& in, uint64_t from, Tensors& out, uint64_t to, bool attention, bool ffn) {
  const std::string a = fmt::format("model.layers.{}.", from), b = fmt::format("model.layers.{}.", to);
  if (attention) out[b + "input_layernorm.weight"] = in.at(a + "input_layernorm.weight");
  if (ffn) out[b + "post_attention_layernorm.weight"] = in.at(a + "post_attention_layernorm.weight");
}

void copy_outside_layers(const Tensors& in, Tensors& out) {
  for (const char* name : {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"}) out[name] = in.at(name);
}

std::string write_model(const test::TempDir& dir, const Tensors& tensors, const json& config) {
  std::vector<std::pair<std::string, TensorView>> list(tensors.begin(), tensors.end());
  write_safetensors(dir.file("model.safetensors"), list);
  test::write_bytes(dir.file("config.json"), config.dump());
  return dir.path().string();
}

// qwen2 described as Nemotron-NAS: Llama's tensors, q/k/v biases by qkv_bias, a block per layer.
json as_nemotron(json config, const json& blocks) {
  config["model_type"] = "nemotron-nas";
  config["architectures"] = json::array({"DeciLMForCausalLM"});
  config["qkv_bias"] = true;
  config["num_hidden_layers"] = blocks.size();
  config["block_configs"] = blocks;
  config.erase("intermediate_size");
  config.erase("num_key_value_heads");
  config.erase("use_sliding_window");
  return config;
}

json block(const json& attention, const json& ffn) { return json::object({{"attention", attention}, {"ffn", ffn}}); }
json heads_in_group(uint64_t g) { return json::object({{"n_heads_in_group", g}, {"no_op", false}, {"replace_with_linear", false}}); }
json ffn_mult(double m) { return json::object({{"ffn_mult", m}, {"no_op", false}, {"replace_with_linear", false}}); }
json no_op() { return json::object({{"no_op", true}}); }

void expect_matches_transformers(const std::string& model, const std::string& what) {
  for (unsigned tp : {1u, 2u}) {
    LLMOptions o;
    o.model = model;
    o.tensor_parallel_size = tp;
    LLM llm(o);
    EXPECT_FALSE(llm.config().layer_widths.empty()) << what;
    const double err = test::max_relative_error(llm, qwen2_reference(), what);
    std::printf("[ %s tp=%u ] max error %.3g of the row's scale\n", what.c_str(), tp, err);
    EXPECT_LE(err, 1e-5) << what << " tp " << tp;
  }
}

// `got_model` gives `want_model`'s logits at every position of `ids`, on one rank and on two;
// `check` sees each of got_model's LLMs first.
void expect_same_logits(const std::string& want_model, const std::string& got_model, const std::vector<int32_t>& ids,
                        const std::function<void(const LLM&)>& check = {}) {
  SamplingParams p;
  p.temperature = 0, p.max_tokens = 1, p.return_logits = true, p.stop_at_eos = false;
  for (unsigned tp : {1u, 2u}) {
    LLMOptions o;
    o.tensor_parallel_size = tp;
    o.model = want_model;
    const GenerationOutput want = LLM(o).generate(ids, p);
    o.model = got_model;
    LLM llm(o);
    if (check) check(llm);
    const GenerationOutput got = llm.generate(ids, p);
    ASSERT_EQ(got.logits.size(), want.logits.size());
    for (size_t pos = 0; pos < want.logits.size(); ++pos)
      for (size_t v = 0; v < want.logits[pos].size(); ++v)
        ASSERT_NEAR(got.logits[pos][v], want.logits[pos][v], 1e-5) << "tp " << tp << " pos " << pos;
  }
}

TEST(LlmLayerWidths, AnIntermediateSizeListRunsEachLayerAtItsWidth) {
  WL_REQUIRE_TESTDATA();
  const Tensors in = qwen2_tensors();
  Tensors out = in;
  widen_mlp(in, 1, out, 1, 20);  // 12 -> 20 units
  json config = qwen2_config();
  config["intermediate_size"] = json::array({12, 20});
  test::TempDir dir;
  const std::string model = write_model(dir, out, config);
  LLMOptions o;
  o.model = model;
  EXPECT_EQ(LLM(o).config().layer_widths, (std::vector<LayerWidths>{{12, 1}, {20, 1}}));
  expect_matches_transformers(model, "qwen2, intermediate_size [12, 20]");
}

// Five layers: the original two with duplicated kv heads and FFNs padded to ffn_mult's widths
// (int(2 * m * 8 / 3) rounded up to 256: m = 1 -> 256, m = 50 -> 266 -> 512), and between them layers
// that add nothing: a skipped attention with an FFN whose down_proj is zero, an attention whose
// o_proj is zero with a skipped FFN, and a layer with both skipped.
TEST(LlmLayerWidths, NemotronNasBlockConfigsWithSkippedSubBlocksMatchTransformers) {
  WL_REQUIRE_TESTDATA();
  const Tensors in = qwen2_tensors();
  Tensors out;
  copy_outside_layers(in, out);
  copy_norms(in, 0, out, 0, true, true);
  copy_attention(in, 0, out, 0, {0, 0}, 4);  // 2 kv heads: n_heads_in_group 1
  widen_mlp(in, 0, out, 0, 256);
  copy_norms(in, 0, out, 1, false, true);  // layer 1: no attention, an FFN of 256 units that adds zero
  widen_mlp(in, 0, out, 1, 256);
  for (uint64_t c = 0; c < 256; ++c)
    for (uint64_t r = 0; r < 8; ++r) out["model.layers.1.mlp.down_proj.weight"].data<float>()[r * 256 + c] = 0;
  copy_norms(in, 1, out, 2, true, false);  // layer 2: an attention whose output is zero, no FFN
  copy_attention(in, 1, out, 2, {0}, 4);
  out["model.layers.2.self_attn.o_proj.weight"] = make(8, 8, [](uint64_t, uint64_t) { return 0.0f; });
  copy_norms(in, 1, out, 3, true, true);
  copy_attention(in, 1, out, 3, {0}, 4);
  widen_mlp(in, 1, out, 3, 512);
  const json blocks = json::array({block(heads_in_group(1), ffn_mult(1.0)), block(no_op(), ffn_mult(1.0)), block(heads_in_group(2), no_op()),
                                   block(heads_in_group(2), ffn_mult(50.0)), block(no_op(), no_op())});
  test::TempDir dir;
  const std::string model = write_model(dir, out, as_nemotron(qwen2_config(), blocks));
  LLMOptions o;
  o.model = model;
  EXPECT_EQ(LLM(o).config().layer_widths, (std::vector<LayerWidths>{{256, 2}, {256, 0}, {0, 1}, {512, 1}, {0, 0}}));
  expect_matches_transformers(model, "nemotron-nas of qwen2");
}

// A skipped sub-block of an original layer changes the model: the same as one whose output
// projection is zero (o_proj of layer 0, down_proj of layer 1), both run by the engine.
TEST(LlmLayerWidths, ASkippedSubBlockIsTheSameAsOneWhoseOutputIsZero) {
  WL_REQUIRE_TESTDATA();
  const Tensors in = qwen2_tensors();
  Tensors zeroed = in;
  zeroed["model.layers.0.self_attn.o_proj.weight"] = make(8, 8, [](uint64_t, uint64_t) { return 0.0f; });
  zeroed["model.layers.1.mlp.down_proj.weight"] = make(8, 12, [](uint64_t, uint64_t) { return 0.0f; });
  Tensors skipped;
  copy_outside_layers(in, skipped);
  copy_norms(in, 0, skipped, 0, false, true);
  widen_mlp(in, 0, skipped, 0, 256);
  copy_norms(in, 1, skipped, 1, true, false);
  copy_attention(in, 1, skipped, 1, {0}, 4);
  test::TempDir a, b;
  const std::string zeroed_model = write_model(a, zeroed, qwen2_config());
  const std::string skipped_model =
      write_model(b, skipped, as_nemotron(qwen2_config(), json::array({block(no_op(), ffn_mult(1.0)), block(heads_in_group(2), no_op())})));
  expect_same_logits(zeroed_model, skipped_model, {3, 1, 4, 1, 5, 9, 2, 6, 5, 3});
}

// The qwen2 fixture has one kv head; here the kv heads differ. stas/tiny-random-llama-2 (4 heads,
// 4 kv heads of 4) with layer 1's kv heads made pairwise equal (1 := 0, 3 := 2), run as it is and as
// Nemotron-NAS storing layer 1's two distinct heads (n_heads_in_group 2): each query head must read
// its group's head, on one rank and split over two (the transformers corpus checks the uniform path).
TEST(LlmLayerWidths, GroupedKvHeadsOfOneLayerReadTheirGroupsHead) {
  WL_REQUIRE_TESTDATA();
  const std::string llama = (test::testdata_dir() / "hf-tiny-random-llama-2").string();
  auto source = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(llama + "/model.safetensors");
  Tensors in;
  for (const TensorInfo& t : source->tensors()) in[t.name] = source->load(t, DType::F32);
  Tensors paired = in, grouped = in;
  copy_attention(in, 1, paired, 1, {0, 0, 2, 2}, 4);
  copy_attention(in, 1, grouped, 1, {0, 2}, 4);
  json config = json::parse(test::read_bytes(llama + "/config.json"));
  test::TempDir a, b;
  const std::string paired_model = write_model(a, paired, config);
  config["model_type"] = "nemotron-nas";
  config["architectures"] = json::array({"DeciLMForCausalLM"});
  const json ffn = json::object({{"intermediate_size", 64}});
  config["block_configs"] = json::array({block(heads_in_group(1), ffn), block(heads_in_group(2), ffn)});
  const std::string grouped_model = write_model(b, grouped, config);
  expect_same_logits(paired_model, grouped_model, {1, 450, 2812, 17, 2999, 3, 1024, 77, 500}, [](const LLM& llm) {
    EXPECT_EQ(llm.config().layer_widths, (std::vector<LayerWidths>{{64, 4}, {64, 2}}));
  });
}

// A layer whose tensors contradict its width is refused naming the tensor and the layer's widths.
TEST(LlmLayerWidths, EveryLayersTensorsAreCheckedAgainstItsWidths) {
  WL_REQUIRE_TESTDATA();
  const Tensors in = qwen2_tensors();
  json config = qwen2_config();
  config["intermediate_size"] = json::array({12, 20});  // layer 1's tensors stay 12 wide
  test::TempDir dir;
  LLMOptions o;
  o.model = write_model(dir, in, config);
  std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { LLM llm(o); });
  EXPECT_NE(msg.find("model.layers.1.mlp.gate_proj.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("layer 1: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("intermediate_size 20"), std::string::npos) << msg;
  // A sub-block the configuration skips must have no tensors.
  test::TempDir dir2;
  o.model = write_model(dir2, in, as_nemotron(qwen2_config(), json::array({block(heads_in_group(2), ffn_mult(1.0)), block(no_op(), no_op())})));
  msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { LLM llm(o); });
  EXPECT_NE(msg.find("model.layers.0.mlp.gate_proj.weight"), std::string::npos) << msg;  // 12 rows, not 256
  Tensors widened = in;
  widen_mlp(in, 0, widened, 0, 256);
  test::TempDir dir3;
  o.model = write_model(dir3, widened, as_nemotron(qwen2_config(), json::array({block(heads_in_group(2), ffn_mult(1.0)), block(no_op(), no_op())})));
  msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { LLM llm(o); });
  EXPECT_NE(msg.find("model.layers.1.self_attn.q_proj.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no_op"), std::string::npos) << msg;
}

// GGUF and llama.2c headers say one width for all layers: such a model is not written as either.
TEST(LlmLayerWidths, FormatsWithOneWidthPerModelRefuseToStoreIt) {
  WL_REQUIRE_TESTDATA();
  const Tensors in = qwen2_tensors();
  Tensors out = in;
  widen_mlp(in, 1, out, 1, 20);
  json config = qwen2_config();
  config["intermediate_size"] = json::array({12, 20});
  test::TempDir dir;
  const std::string model = write_model(dir, out, config);
  for (CheckpointFormat to : {CheckpointFormat::Llama2c, CheckpointFormat::Gguf}) {
    ConvertOptions o;
    o.to = to;
    const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] {
      convert_checkpoint(*WeightLoaderRegistry::with_builtins()->create("hf")->get_weights(model), dir.file("x.out"), o);
    });
    EXPECT_NE(msg.find("per-layer intermediate_size/kv heads"), std::string::npos) << msg;
  }
}

const char* kNemotron = R"({"model_type": "nemotron-nas", "architectures": ["DeciLMForCausalLM"], "hidden_size": 8192,
  "num_hidden_layers": 3, "num_attention_heads": 64, "vocab_size": 128256, "block_configs": [
  {"attention": {"n_heads_in_group": 8, "no_op": false, "replace_with_linear": false, "sparsify": null, "num_sink_tokens": null,
                 "window_length": null, "unshifted_sink": false, "use_prefill_window_in_sink_attention": false},
   "ffn": {"ffn_mult": 5.25, "no_op": false, "replace_with_linear": false, "sparsify": null}},
  {"attention": {"n_heads_in_group": 32, "no_op": false}, "ffn": {"ffn_mult": 1.3, "no_op": false}},
  {"attention": {"no_op": true, "n_heads_in_group": null}, "ffn": {"ffn_mult": 2.625}}]})";

// The widths as vLLM's nemotron_nas.py computes them (Llama-3.3-Nemotron-Super-49B's sizes).
TEST(LayerWidthsConfig, BlockConfigsGiveEachLayersWidths) {
  const LlamaConfig c = llama_config_from_hf_json(kNemotron, "config.json");
  EXPECT_EQ(c.architecture, "nemotron-nas");
  // 2 * 5.25 * 8192 / 3 = 28672; 2 * 1.3 * 8192 / 3 = 7099.7 -> 7099 -> 7168; 2.625: 14336.
  EXPECT_EQ(c.layer_widths, (std::vector<LayerWidths>{{28672, 8}, {7168, 2}, {14336, 0}}));
  EXPECT_EQ(c.intermediate_size, 28672u);  // the widest
  EXPECT_EQ(c.num_kv_heads, 8u);
  EXPECT_NE(c.features().find("per-layer widths"), std::string::npos) << c.features();
  // config.json written back reads as the same model.
  EXPECT_EQ(llama_config_from_hf_json(c.to_hf_config_json(), "written"), c);
  // Layers of one width are the uniform case.
  const LlamaConfig same = llama_config_from_hf_json(
      R"({"model_type": "deci", "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 16,
          "num_key_value_heads_per_layer": [2, 2]})", "c");
  EXPECT_TRUE(same.layer_widths.empty());
  EXPECT_EQ(same.num_kv_heads, 2u);
  const LlamaConfig list = llama_config_from_hf_json(
      R"({"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": [16, 24]})", "c");
  EXPECT_EQ(list.layer_widths, (std::vector<LayerWidths>{{16, 2}, {24, 2}}));
  EXPECT_EQ(llama_config_from_hf_json(list.to_hf_config_json(), "written"), list);
}

TEST(LayerWidthsConfig, MalformedPerLayerWidthsAreRefusedNamingTheField) {
  struct Case {
    const char* json;
    const char* field;
  };
  const std::string base = R"("hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10)";
  const std::string deci = R"("model_type": "nemotron-nas", )" + base;
  const std::string ok = R"({"attention": {"n_heads_in_group": 2}, "ffn": {"ffn_mult": 1.0}})";
  const Case cases[] = {
      {R"("intermediate_size": [16, 16, 16])", "intermediate_size"},
      {R"("intermediate_size": [16, 0])", "intermediate_size"},
      {R"("model_type": "mixtral", "intermediate_size": [16, 16])", "intermediate_size"},
  };
  for (const Case& c : cases) {
    const std::string text = "{" + base + ", " + c.json + "}";
    const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_hf_json(text, "cfg.json"); });
    EXPECT_NE(msg.find(std::string("'") + c.field + "'"), std::string::npos) << text << " → " << msg;
  }
  const Case blocks[] = {
      {R"([{"attention": {"n_heads_in_group": 2}, "ffn": {"ffn_mult": 1.0}}])", "block_configs"},
      {R"([{"attention": {"n_heads_in_group": 3}, "ffn": {"ffn_mult": 1.0}}, OK])", "block_configs[0].attention.n_heads_in_group"},
      {R"([OK, {"attention": {"no_op": false}, "ffn": {"ffn_mult": 1.0}}])", "block_configs[1].attention.n_heads_in_group"},
      {R"([OK, {"attention": {"n_heads_in_group": 2}, "ffn": {"replace_with_linear": true}}])", "block_configs[1].ffn.replace_with_linear"},
      {R"([{"attention": {"replace_with_linear": true}, "ffn": {"no_op": true}}, OK])", "block_configs[0].attention.replace_with_linear"},
      {R"([OK, {"attention": {"n_heads_in_group": 2, "num_sink_tokens": 4}, "ffn": {"ffn_mult": 1.0}}])", "block_configs[1].attention.num_sink_tokens"},
      {R"([OK, {"attention": {"n_heads_in_group": 2}, "ffn": {"ffn_mult": -1.0}}])", "block_configs[1].ffn.ffn_mult"},
      {R"([OK, {"attention": {"n_heads_in_group": 2}, "ffn": {}}])", "block_configs[1].ffn.intermediate_size"},
      {R"([OK, {"attention": {"n_heads_in_group": 2}, "ffn": {"ffn_mult": 1.0, "hidden_act": "gelu"}}])", "block_configs[1].ffn.hidden_act"},
      {R"([OK, {"ffn": {"ffn_mult": 1.0}}])", "block_configs[1].attention"},
  };
  for (const Case& c : blocks) {
    std::string list = c.json;
    for (size_t at = list.find("OK"); at != std::string::npos; at = list.find("OK")) list.replace(at, 2, ok);
    const std::string text = "{" + deci + R"(, "block_configs": )" + list + "}";
    const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_hf_json(text, "cfg.json"); });
    EXPECT_NE(msg.find(std::string("'") + c.field + "'"), std::string::npos) << text << " → " << msg;
  }
  const std::string kv = std::string(R"({"model_type": "deci", )") + base + R"(, "intermediate_size": 16, "num_key_value_heads_per_layer": [4, 3]})";
  EXPECT_NE(test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_hf_json(kv, "c"); }).find("'num_key_value_heads_per_layer'"),
            std::string::npos);
}

// Each layer's kv heads and MLP units split over the ranks; a width the ranks cannot split is
// refused naming the layer.
TEST(LayerWidthsTensorParallel, EachLayerSplitsAtItsWidth) {
  const LlamaConfig c = llama_config_from_hf_json(
      R"({"model_type": "deci", "hidden_size": 24, "num_hidden_layers": 3, "num_attention_heads": 6, "vocab_size": 10,
          "intermediate_size": [512, 64, 4], "num_key_value_heads_per_layer": [6, 2, 1]})", "c");
  const RankPartition p = partition_rank(c, 1, 2);
  ASSERT_EQ(p.layers.size(), 3u);
  EXPECT_EQ(p.layers[0].kv_head0, 3u);
  EXPECT_EQ(p.layers[0].kv_heads, 3u);
  EXPECT_EQ(p.layers[0].ff0, 256u);  // whole blocks of 256
  EXPECT_EQ(p.layers[0].ff, 256u);
  EXPECT_EQ(p.layers[1].kv_head0, 1u);
  EXPECT_EQ(p.layers[1].ff0, 32u);
  EXPECT_EQ(p.layers[2].kv_head0, 0u);  // one kv head, replicated
  EXPECT_EQ(p.layers[2].kv_heads, 1u);
  EXPECT_EQ(p.layers[2].ff, 2u);
  std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { partition_rank(c, 0, 3); });
  EXPECT_NE(msg.find("layer 1's num_key_value_heads 2"), std::string::npos) << msg;
  const LlamaConfig narrow = llama_config_from_hf_json(
      R"({"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10, "intermediate_size": [16, 1]})", "c");
  msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { partition_rank(narrow, 0, 2); });
  EXPECT_NE(msg.find("layer 1's intermediate_size 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tensor_parallel_size"), std::string::npos) << msg;
}

}  // namespace
}  // namespace wl
