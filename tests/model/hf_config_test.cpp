// config.json of each family into the model description: what each family's fields mean.
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/rotary.hpp"
#include "families/family.hpp"
#include "test_util.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

LlamaConfig family(const std::string& name) {
  const std::string path = (test::testdata_dir() / "hf-tiny-arch" / name / "config.json").string();
  return llama_config_from_hf_json(test::read_bytes(path), path);
}

TEST(HfConfig, EachFamilysFields) {
  WL_REQUIRE_TESTDATA();
  const LlamaConfig mistral = family("mistral");
  EXPECT_EQ(mistral.max_position_embeddings, 16u);  // the window is not the context
  EXPECT_EQ(mistral.window_layer(0), 4u);
  EXPECT_EQ(mistral.window_layer(1), 4u);
  const LlamaConfig mixtral = family("mixtral");
  EXPECT_EQ(mixtral.moe.num_experts, 4u);
  EXPECT_EQ(mixtral.moe.experts_per_token, 2u);
  EXPECT_EQ(mixtral.moe.expert_intermediate_size, 12u);
  EXPECT_TRUE(mixtral.moe.norm_topk_prob);
  EXPECT_TRUE(mixtral.moe_layer(1));
  EXPECT_EQ(mixtral.window_layer(0), 0u);  // sliding_window: null
  const LlamaConfig gemma = family("gemma");
  EXPECT_EQ(gemma.head_dim, 6u);
  EXPECT_EQ(gemma.hidden_act, "gelu_pytorch_tanh");  // Gemma's rule: hidden_act "gelu" runs the tanh form
  EXPECT_TRUE(gemma.norm_weight_offset && gemma.scale_embeddings && gemma.tie_word_embeddings);
  EXPECT_FALSE(gemma.sandwich_norms);
  const LlamaConfig gemma2 = family("gemma2");
  EXPECT_TRUE(gemma2.sandwich_norms);
  EXPECT_EQ(gemma2.window_layer(0), 4u);
  EXPECT_EQ(gemma2.window_layer(1), 0u);
  EXPECT_DOUBLE_EQ(gemma2.attn_logit_softcapping, 5.0);
  EXPECT_DOUBLE_EQ(gemma2.final_logit_softcapping, 0.5);
  EXPECT_DOUBLE_EQ(gemma2.query_pre_attn_scalar, 12.0);
  const LlamaConfig phi3 = family("phi3");
  EXPECT_EQ(phi3.rotary_dims(), 6u);
  EXPECT_EQ(phi3.head_dim, 8u);
  EXPECT_EQ(phi3.eos_token_ids, std::vector<int32_t>{2});
  EXPECT_TRUE(family("qwen2").qkv_bias);
  // Written back and read again, each is the same description.
  for (const char* name : {"qwen2", "mistral", "mixtral", "gemma", "gemma2", "phi3"}) {
    const LlamaConfig c = family(name);
    EXPECT_EQ(llama_config_from_hf_json(c.to_hf_config_json(), "again"), c) << name;
  }
}

// Gemma3ForConditionalGeneration's config.json (Family::multimodal): the language model's fields in
// text_config, the outer tie_word_embeddings over the inner one, as transformers follows them.
TEST(HfConfig, AMultimodalModelsLanguageModelIsReadFromItsTextConfig) {
  nlohmann::json doc = {{"model_type", "gemma3"},
                        {"architectures", nlohmann::json::array({"Gemma3ForConditionalGeneration"})},
                        {"tie_word_embeddings", false},
                        {"vision_config", {{"hidden_size", 16}}},
                        {"text_config",
                         {{"model_type", "gemma3_text"}, {"hidden_size", 32}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                          {"num_key_value_heads", 2}, {"head_dim", 8}, {"intermediate_size", 48}, {"vocab_size", 97},
                          {"tie_word_embeddings", true}}}};
  const LlamaConfig c = llama_config_from_hf_json(doc.dump(), "config.json");
  EXPECT_EQ(c.architecture, "gemma3_text");
  EXPECT_EQ(c.multimodal, "gemma3");
  EXPECT_EQ(c.hidden_size, 32u);
  EXPECT_EQ(c.head_dim, 8u);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_NE(c.features().find("the language model of a gemma3 (its vision tensors not read)"), std::string::npos);
  doc["text_config"]["model_type"] = "qwen3";
  try {
    llama_config_from_hf_json(doc.dump(), "config.json");
    FAIL() << "a gemma3 holding a qwen3 was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ConfigInvalid);
    EXPECT_NE(std::string(e.what()).find("text_config.model_type"), std::string::npos) << e.what();
  }
}

TEST(HfConfig, Qwen2MoeExpertsAndSlidingLayers) {
  const LlamaConfig c = llama_config_from_hf_json(
      R"({"model_type": "qwen2_moe", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 4, "num_attention_heads": 2,
          "vocab_size": 10, "num_experts": 6, "num_experts_per_tok": 2, "moe_intermediate_size": 4, "norm_topk_prob": false,
          "shared_expert_intermediate_size": 8, "decoder_sparse_step": 2, "mlp_only_layers": [3],
          "use_sliding_window": true, "sliding_window": 3, "max_window_layers": 2, "eos_token_id": [5, 7]})", "c");
  EXPECT_EQ(c.moe.num_experts, 6u);
  EXPECT_FALSE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 8u);
  EXPECT_FALSE(c.moe_layer(0));
  EXPECT_TRUE(c.moe_layer(1));
  EXPECT_FALSE(c.moe_layer(3));  // listed in mlp_only_layers
  EXPECT_EQ(c.window_layer(1), 0u);
  EXPECT_EQ(c.window_layer(2), 3u);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(llama_config_from_hf_json(c.to_hf_config_json(), "again"), c);
}

// A Llama whose q/k/v alone have biases (a GGUF's tensors can say so; a Llama config cannot) is
// written as Qwen2's config, which reads back as the same model.
TEST(HfConfig, LlamaWithQkvBiasesOnlyIsWrittenAsQwen2) {
  LlamaConfig c = llama_config_from_hf_json(
      R"({"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
          "vocab_size": 10})", "c");
  c.qkv_bias = true;
  const std::string written = c.to_hf_config_json();
  EXPECT_NE(written.find(R"("model_type": "qwen2")"), std::string::npos) << written;
  const LlamaConfig again = llama_config_from_hf_json(written, "again");
  EXPECT_TRUE(again.qkv_bias);
  EXPECT_FALSE(again.o_bias);
}

TEST(HfConfig, RopeScalingLinearAndLlama3) {
  const LlamaConfig c = llama_config_from_hf_json(
      R"({"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
          "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                           "original_max_position_embeddings": 8192}})", "c");
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192u);
  const LlamaConfig l = llama_config_from_hf_json(
      R"({"hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
          "rope_scaling": {"type": "linear", "factor": 4}})", "c");
  EXPECT_EQ(l.rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(l.rope_scaling.factor, 4.0);
}

// transformers 5 writes the rotary settings inside rope_parameters: rope_theta, partial_rotary_factor
// and Phi-3's pretrained context move in beside rope_scaling's fields ("type" becomes rope_type).
std::string as_transformers5_writes(const std::string& config_json) {
  nlohmann::json j = nlohmann::json::parse(config_json);
  nlohmann::json p = j.contains("rope_scaling") ? j["rope_scaling"] : nlohmann::json::object();
  if (p.contains("type")) p["rope_type"] = p["type"], p.erase("type");
  for (const char* key : {"rope_theta", "partial_rotary_factor", "original_max_position_embeddings"})
    if (j.contains(key)) p[key] = j[key], j.erase(key);
  j.erase("rope_scaling");
  j["rope_parameters"] = p;
  return j.dump();
}

LlamaConfig read(const std::string& config_json) { return llama_config_from_hf_json(config_json, "config.json"); }

// The message of the ConfigInvalid that reading `config_json` throws.
std::string refusal(const std::string& config_json) {
  return test::expect_error(ErrorCode::ConfigInvalid, [&] { read(config_json); });
}

constexpr const char* kSizes = R"("hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4)";

std::string llama(const std::string& fields) { return fmt::format(R"({{"model_type": "llama", {}, {}}})", kSizes, fields); }
std::string gemma2(const std::string& fields) { return fmt::format(R"({{"model_type": "gemma2", {}, {}}})", kSizes, fields); }

TEST(HfConfig, RopeParametersThetaIsRead) {
  const LlamaConfig qwen = read(llama(R"("rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"})"));
  EXPECT_DOUBLE_EQ(qwen.rope_theta, 1000000.0);
  const LlamaConfig other = read(llama(R"("rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"})"));
  EXPECT_DOUBLE_EQ(other.rope_theta, 10000.0);
  EXPECT_NE(rotary_frequencies(qwen), rotary_frequencies(other));
  EXPECT_EQ(qwen, read(llama(R"("rope_theta": 1000000.0)")));
  // Without a theta inside, the top-level one (or the default) still holds; "type" is the legacy key.
  EXPECT_DOUBLE_EQ(read(llama(R"("rope_theta": 500000.0, "rope_parameters": {"type": "default"})")).rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(read(llama(R"("rope_parameters": {})")).rope_theta, 10000.0);
}

// Each rope_scaling type of the engine, as transformers 4 and 5 write it: the same description.
TEST(HfConfig, RopeParametersEqualTheLegacyFields) {
  const std::vector<std::string> legacy{
      llama(R"("rope_theta": 500000.0, "max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
               "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})"),
      llama(R"("rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 4.0})"),
      llama(R"("max_position_embeddings": 2048, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0})"),
      llama(R"("rope_theta": 1000000.0, "max_position_embeddings": 32768,
               "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})"),
      llama(R"("max_position_embeddings": 163840, "rope_scaling": {"rope_type": "yarn", "factor": 40.0, "mscale": 0.707,
               "mscale_all_dim": 1.0, "beta_fast": 32.0, "beta_slow": 1.0, "original_max_position_embeddings": 4096})"),
      llama(R"("rope_theta": 150000.0, "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
               "truncate": false, "attention_factor": 1.2, "original_max_position_embeddings": 4096})"),
      // Phi-3: partial rotary, and the pretrained context beside max_position_embeddings.
      R"({"model_type": "phi3", "hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
          "partial_rotary_factor": 0.75, "rope_theta": 10000.0, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
          "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.01, 1.02], "long_factor": [1.5, 3.5, 5.5]}})",
  };
  for (const std::string& old : legacy) {
    SCOPED_TRACE(old);
    const LlamaConfig want = read(old);
    ASSERT_FALSE(want.rope_scaling.type.empty());
    const LlamaConfig got = read(as_transformers5_writes(old));
    EXPECT_EQ(got, want);
    EXPECT_EQ(rotary_frequencies(got, 5000), rotary_frequencies(want, 5000));
    EXPECT_EQ(rotary_attention_factor(got), rotary_attention_factor(want));
  }
}

TEST(HfConfig, Llama3InRopeParameters) {
  const LlamaConfig c = read(llama(R"("max_position_embeddings": 131072, "rope_parameters": {"rope_theta": 500000.0,
      "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})"));
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192u);
  EXPECT_EQ(c, read(llama(R"("max_position_embeddings": 131072, "rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3",
      "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})")));
}

// Phi-3 as transformers 5 writes it: partial_rotary_factor inside rope_parameters turns 6 of 8 dimensions.
TEST(HfConfig, Phi3LongropeWithPartialRotaryInRopeParameters) {
  const std::string phi3 = R"({"model_type": "phi3", "hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 2,
      "num_attention_heads": 4, "max_position_embeddings": 131072, "rope_parameters": {"rope_theta": 10000.0, "rope_type": "longrope",
      "short_factor": [1.0, 1.01, 1.02], "long_factor": [1.5, 3.5, 5.5], "partial_rotary_factor": 0.75,
      "original_max_position_embeddings": 4096}})";
  const LlamaConfig c = read(phi3);
  EXPECT_EQ(c.head_dim, 8u);
  EXPECT_EQ(c.rotary_dims(), 6u);
  EXPECT_EQ(c.rope_scaling.type, "longrope");
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 4096u);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 32.0);
  EXPECT_NEAR(c.rope_scaling.attention_factor, 1.1902380714238083, 1e-12);  // transformers' value for this configuration
  EXPECT_EQ(rotary_frequencies(c, 4097).size(), 3u);
  const LlamaConfig legacy = read(R"({"model_type": "phi3", "hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 2,
      "num_attention_heads": 4, "max_position_embeddings": 131072, "partial_rotary_factor": 0.75, "rope_theta": 10000.0,
      "original_max_position_embeddings": 4096, "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.01, 1.02],
      "long_factor": [1.5, 3.5, 5.5]}})");
  EXPECT_EQ(c, legacy);
  // transformers 5 takes a factor that rope_parameters gives over the ratio of the contexts.
  nlohmann::json j = nlohmann::json::parse(phi3);
  j["rope_parameters"]["factor"] = 4.0;
  EXPECT_DOUBLE_EQ(read(j.dump()).rope_scaling.factor, 4.0);
}

// Gemma 2 / 3 as transformers 5 writes them: each layer type its own settings. Layers 0 and 2 slide.
constexpr const char* kGemma2PerLayerType = R"({"model_type": "gemma2", "hidden_size": 32, "intermediate_size": 16,
    "num_hidden_layers": 4, "num_attention_heads": 4, "head_dim": 8, "sliding_window": 4, "rope_parameters": {
      "full_attention": {"rope_theta": 1000000.0, "rope_type": "linear", "factor": 8.0},
      "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}})";

TEST(HfConfig, RopeParametersPerLayerTypeReachTheirLayers) {
  const LlamaConfig c = read(kGemma2PerLayerType);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1000000.0);
  EXPECT_EQ(c.rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(c.sliding_rope_theta, 10000.0);
  EXPECT_TRUE(c.sliding_rope_scaling.type.empty());
  for (uint64_t l = 0; l < 4; ++l) EXPECT_EQ(c.sliding_rope_layer(l), l % 2 == 0) << "layer " << l;
  const std::vector<float> global = rotary_frequencies(c), local = rotary_frequencies(c, 0, true);
  ASSERT_EQ(global.size(), 4u);
  ASSERT_EQ(local.size(), 4u);
  EXPECT_FLOAT_EQ(global[1], float(std::pow(1000000.0, -2.0 / 8) / 8));
  EXPECT_FLOAT_EQ(local[1], float(std::pow(10000.0, -2.0 / 8)));
  // Written back (per layer type) and read again: the same description.
  EXPECT_EQ(read(c.to_hf_config_json()), c);
  // The same settings for both types: one set for every layer, as the flat form says it.
  const LlamaConfig same = read(R"({"model_type": "gemma2", "hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 4,
      "num_attention_heads": 4, "head_dim": 8, "rope_parameters": {"full_attention": {"rope_theta": 20000.0, "rope_type": "default"},
      "sliding_attention": {"rope_theta": 20000.0}}})");
  EXPECT_EQ(same.sliding_rope_theta, 0.0);
  EXPECT_FALSE(same.sliding_rope_layer(0));
  EXPECT_DOUBLE_EQ(same.rope_theta, 20000.0);
}

TEST(HfConfig, RopeParametersTheEngineCannotFollowAreRefusedByName) {
  const std::pair<std::string, const char*> cases[] = {
      {llama(R"("rope_parameters": {"rope_type": "proportional", "rope_theta": 10000.0})"), "'proportional'"},
      {llama(R"("rope_parameters": {"rope_type": "proportional"})"), "'rope_parameters'"},
      {llama(R"("rope_parameters": {"rope_type": "linear", "factor": 2.0, "mscale": 1.0})"), "'rope_parameters.mscale'"},
      {llama(R"("rope_parameters": {"rope_type": "default", "factor": 2.0})"), "'rope_parameters.factor'"},
      {llama(R"("rope_parameters": {"rope_type": "longrope", "short_factor": [1.0, 1.0]})"), "'rope_parameters.long_factor'"},
      {llama(R"("rope_parameters": {"rope_theta": 0})"), "'rope_parameters.rope_theta'"},
      {llama(R"("rope_parameters": {"partial_rotary_factor": 1.5})"), "'rope_parameters.partial_rotary_factor'"},
      {llama(R"("rope_parameters": [10000.0])"), "'rope_parameters'"},
      {llama(R"("rope_parameters": {"full_attention": {"rope_theta": 1.0}, "global": {"rope_theta": 2.0}})"), "'rope_parameters.global'"},
      {llama(R"("rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 2.0, "low_freq_factor": 1.0}})"),
       "'rope_parameters.full_attention.low_freq_factor'"},
      // Gemma 2's sliding layers need their type's settings; the engine turns the same dimensions on every layer.
      {gemma2(R"("rope_parameters": {"full_attention": {"rope_theta": 1.0}})"), "'rope_parameters.sliding_attention'"},
      {gemma2(R"("rope_parameters": {"sliding_attention": {"rope_theta": 1.0}})"), "'rope_parameters.full_attention'"},
      {fmt::format(R"({{"model_type": "phi3", {}, "sliding_window": 8, "rope_parameters": {{"full_attention": {{"partial_rotary_factor": 0.5}},
           "sliding_attention": {{}}}}}})", kSizes), "'rope_parameters.sliding_attention.partial_rotary_factor'"},
  };
  for (const auto& [json, field] : cases) {
    const std::string msg = refusal(json);
    EXPECT_NE(msg.find(field), std::string::npos) << json << " → " << msg;
    EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
  }
}

// transformers 4 reads the legacy fields and 5 rope_parameters: where both are given they must agree.
TEST(HfConfig, LegacyFieldsThatDisagreeWithRopeParametersAreRefused) {
  const std::pair<std::string, const char*> cases[] = {
      {llama(R"("rope_theta": 10000.0, "rope_parameters": {"rope_theta": 1000000.0})"), "'rope_parameters.rope_theta'"},
      {llama(R"("rope_scaling": {"type": "linear", "factor": 2.0}, "rope_parameters": {"rope_type": "linear", "factor": 4.0})"),
       "'rope_scaling'"},
      {llama(R"("rope_scaling": {"type": "linear", "factor": 2.0}, "rope_parameters": {"rope_theta": 10000.0})"), "'rope_scaling'"},
      {llama(R"("original_max_position_embeddings": 4096, "max_position_embeddings": 131072, "rope_parameters": {"rope_type": "longrope",
          "short_factor": [1, 1, 1, 1], "long_factor": [2, 2, 2, 2], "original_max_position_embeddings": 8192})"),
       "'rope_parameters.original_max_position_embeddings'"},
      {llama(R"("rope_parameters": {"type": "linear", "rope_type": "dynamic", "factor": 2.0})"), "'rope_parameters.type'"},
      {gemma2(R"("rope_theta": 10000.0, "rope_parameters": {"full_attention": {"rope_theta": 1000000.0},
          "sliding_attention": {"rope_theta": 10000.0}})"), "'rope_parameters.full_attention.rope_theta'"},
  };
  for (const auto& [json, field] : cases) {
    const std::string msg = refusal(json);
    EXPECT_NE(msg.find(field), std::string::npos) << json << " → " << msg;
  }
  // Both given and agreeing: read as either version reads it.
  const LlamaConfig both = read(llama(R"("rope_theta": 1000000, "rope_scaling": {"type": "linear", "factor": 2.0},
      "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "linear", "factor": 2.0})"));
  EXPECT_DOUBLE_EQ(both.rope_theta, 1000000.0);
  EXPECT_EQ(both.rope_scaling.type, "linear");
}

// Where config.json gives no rotary settings, each family's config class's: Mixtral's base 1e6, Gemma 3's
// 1e6 and 1e4 for its local layers (which transformers 4's rope_scaling does not reach), gpt-oss's yarn.
TEST(HfConfig, RotaryDefaultsOfEachFamily) {
  EXPECT_DOUBLE_EQ(read(fmt::format(R"({{"model_type": "mixtral", {}}})", kSizes)).rope_theta, 1e6);
  const LlamaConfig gemma3 = read(fmt::format(R"({{"model_type": "gemma3_text", {}, "sliding_window_pattern": 2,
      "rope_scaling": {{"rope_type": "linear", "factor": 8.0}}}})", kSizes));
  EXPECT_DOUBLE_EQ(gemma3.rope_theta, 1e6);
  EXPECT_EQ(gemma3.rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(gemma3.sliding_rope_theta, 1e4);
  EXPECT_TRUE(gemma3.sliding_rope_scaling.type.empty());
  const LlamaConfig gpt_oss = read(fmt::format(R"({{"model_type": "gpt_oss", {}}})", kSizes));
  EXPECT_EQ(gpt_oss.rope_scaling.type, "yarn");
  EXPECT_DOUBLE_EQ(gpt_oss.rope_scaling.factor, 32.0);
  EXPECT_FALSE(gpt_oss.rope_scaling.truncate);
}

// partial_rotary_factor as transformers 5 reads it: rope_parameters' over the top-level one (GLM-4's
// config class writes its default there beside the one given), an odd part rounded up to pairs;
// families that turn whole heads ignore it with the default rope, and refuse it with a scaled one.
TEST(HfConfig, PartialRotaryAsTransformers5ReadsIt) {
  const LlamaConfig glm = read(fmt::format(R"({{"model_type": "glm4", {}, "partial_rotary_factor": 0.5,
      "rope_parameters": {{"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}}}})", kSizes));
  EXPECT_EQ(glm.rotary_dims(), 2u);
  const LlamaConfig odd = read(fmt::format(R"({{"model_type": "phi3", {}, "head_dim": 12, "partial_rotary_factor": 0.75}})", kSizes));
  EXPECT_EQ(odd.rotary_dims(), 9u);
  EXPECT_EQ(odd.rotary_pairs(), 5u);
  const LlamaConfig whole = read(llama(R"("rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5})"));
  EXPECT_EQ(whole.rotary_dims(), whole.head_dim);
  EXPECT_NE(refusal(llama(R"("partial_rotary_factor": 0.5, "rope_scaling": {"type": "linear", "factor": 2.0})")).find("'partial_rotary_factor'"),
            std::string::npos);
}

// num_hidden_layers is untrusted until validated: reading uniform widths allocates nothing per layer
// (the config_json fuzzer's find: a vector of num_hidden_layers entries), and a list's own length decides.
TEST(HfConfig, LayerCountSizesNoMemoryBeforeValidation) {
  const LlamaConfig c = llama_config_from_hf_json(
      R"({"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1000000000000000,
          "num_attention_heads": 2})", "c");
  EXPECT_EQ(c.num_layers, 1000000000000000u);
  EXPECT_EQ(c.intermediate_size, 16u);
  EXPECT_TRUE(c.layer_widths.empty());
  const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [] {
    llama_config_from_hf_json(R"({"model_type": "deci", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1000000000000000,
                                  "num_attention_heads": 2, "num_key_value_heads_per_layer": [1, 2]})", "c.json");
  });
  EXPECT_NE(msg.find("num_key_value_heads_per_layer"), std::string::npos) << msg;
}

TEST(HfConfig, GenerationConfigEos) {
  EXPECT_EQ(eos_ids_from_generation_config(R"({"eos_token_id": [1, 107]})", "g"), (std::vector<int32_t>{1, 107}));
  EXPECT_EQ(eos_ids_from_generation_config(R"({"eos_token_id": 2})", "g"), std::vector<int32_t>{2});
  EXPECT_TRUE(eos_ids_from_generation_config(R"({"do_sample": true})", "g").empty());
  const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [] { eos_ids_from_generation_config(R"({"eos_token_id": -1})", "g.json"); });
  EXPECT_NE(msg.find("'eos_token_id'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace wl

namespace wl {
namespace {

std::string deepseek(const char* type, const std::string& fields) {
  return fmt::format(R"({{"model_type": "{}", {}, "kv_lora_rank": 8, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4, "v_head_dim": 6,
                        "n_routed_experts": 8, "moe_intermediate_size": 8, "num_experts_per_tok": 2{}}})",
                     type, kSizes, fields.empty() ? "" : ", " + fields);
}

TEST(HfConfig, Glm4BiasesRotaryAndNorms) {
  // GLM-4's defaults: q/k/v biases (o never), half of each head turning in adjacent pairs.
  const LlamaConfig glm = read(fmt::format(R"({{"model_type": "glm4", {}, "head_dim": 16}})", kSizes));
  EXPECT_TRUE(glm.qkv_bias);
  EXPECT_FALSE(glm.o_bias);
  EXPECT_EQ(glm.rotary_dims(), 8u);
  EXPECT_TRUE(glm.sandwich_norms && glm.glm_norms && glm.rope_adjacent_pairs);
  const LlamaConfig plain = read(fmt::format(R"({{"model_type": "glm4", {}, "attention_bias": false, "partial_rotary_factor": 1.0}})", kSizes));
  EXPECT_FALSE(plain.qkv_bias || plain.o_bias);
  EXPECT_EQ(plain.rotary_dims(), plain.head_dim);
  EXPECT_EQ(read(glm.to_hf_config_json()), glm);
  EXPECT_EQ(read(plain.to_hf_config_json()), plain);
  EXPECT_FALSE(read(llama("\"head_dim\": 16")).rope_adjacent_pairs);
}

TEST(HfConfig, GraniteMoeExpertsMultipliersAndSharedMlp) {
  const LlamaConfig moe = read(fmt::format(R"({{"model_type": "granitemoe", {}, "num_local_experts": 4, "num_experts_per_tok": 2,
                                                "residual_multiplier": 0.5}})", kSizes));
  EXPECT_EQ(moe.moe.num_experts, 4u);
  EXPECT_EQ(moe.moe.expert_intermediate_size, 16u);  // intermediate_size, as Mixtral's
  EXPECT_TRUE(moe.moe.norm_topk_prob);
  EXPECT_EQ(mlp_names(moe.architecture).moe, "block_sparse_moe");
  EXPECT_EQ(moe.moe.shared_expert_intermediate_size, 0u);
  EXPECT_DOUBLE_EQ(moe.residual_multiplier, 0.5);
  const LlamaConfig shared = read(fmt::format(R"({{"model_type": "granitemoeshared", {}, "shared_intermediate_size": 8}})", kSizes));
  EXPECT_EQ(shared.moe.num_experts, 8u);  // num_local_experts' default
  EXPECT_EQ(shared.moe.shared_expert_intermediate_size, 8u);
  EXPECT_FALSE(shared.moe.shared_expert_gated);
  for (const LlamaConfig& c : {moe, shared}) EXPECT_EQ(read(c.to_hf_config_json()), c) << c.architecture;
  EXPECT_EQ(mlp_names(read(llama("\"head_dim\": 8")).architecture).moe, "mlp");
}

TEST(HfConfig, Llama4LayersRoutingAndDefaults) {
  // Without the fields transformers writes, Llama4TextConfig's defaults: experts in every layer
  // (interleave_moe_layer_step 1), a NoPE layer every 4th, the others chunked (8192), q/k L2 norm,
  // temperature tuning (8192, 0.1), rope_theta 500000, rms_norm_eps 1e-5.
  const std::string sizes = R"("hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 8, "num_attention_heads": 4)";
  const LlamaConfig d = read(fmt::format(R"({{"model_type": "llama4_text", {}}})", sizes));
  EXPECT_EQ(d.moe.num_experts, 16u);
  EXPECT_EQ(d.moe.experts_per_token, 1u);
  EXPECT_EQ(d.moe.expert_intermediate_size, 16u);  // intermediate_size, and so the shared expert
  EXPECT_EQ(d.moe.shared_expert_intermediate_size, 16u);
  EXPECT_EQ(d.intermediate_size, 16384u);  // intermediate_size_mlp: the dense layers'
  EXPECT_TRUE(d.moe.stacked() && d.moe.weight_input && !d.moe.norm_topk_prob && !d.moe.shared_expert_gated);
  EXPECT_EQ(d.moe.scoring, MoeConfig::Scoring::Sigmoid);
  for (uint64_t l = 0; l < 8; ++l) {
    EXPECT_TRUE(d.moe_layer(l)) << l;
    EXPECT_EQ(d.rope_layer(l), l % 4 != 3) << l;
    EXPECT_EQ(d.chunk_layer(l), l % 4 != 3 ? 8192u : 0u) << l;
  }
  EXPECT_TRUE(d.qk_l2_norm && d.rope_adjacent_pairs);
  EXPECT_EQ(d.attn_floor_scale, 8192u);
  EXPECT_DOUBLE_EQ(d.attn_scale, 0.1);
  EXPECT_DOUBLE_EQ(d.rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(d.rms_norm_eps, 1e-5);
  EXPECT_EQ(mlp_names(d.architecture).dense, "feed_forward");
  // An empty no_rope_layers is none given (Llama4TextConfig's `if self.no_rope_layers`).
  EXPECT_EQ(read(fmt::format(R"({{"model_type": "llama4_text", {}, "no_rope_layers": []}})", sizes)).rope_layers, d.rope_layers);
  // Listed: moe_layers and layer_types as given; the temperature and the norm off.
  const LlamaConfig l = read(fmt::format(R"({{"model_type": "llama4_text", {}, "moe_layers": [1, 5], "intermediate_size_mlp": 24,
      "layer_types": ["full_attention", "chunked_attention", "full_attention", "full_attention", "full_attention", "full_attention",
                      "full_attention", "full_attention"], "attention_chunk_size": 3, "use_qk_norm": false, "attn_temperature_tuning": false}})",
                                         sizes));
  for (uint64_t i = 0; i < 8; ++i) {
    EXPECT_EQ(l.moe_layer(i), i == 1 || i == 5) << i;
    EXPECT_EQ(l.chunk_layer(i), i == 1 ? 3u : 0u) << i;
  }
  EXPECT_EQ(l.intermediate_size, 24u);
  EXPECT_FALSE(l.qk_l2_norm);
  EXPECT_EQ(l.attn_floor_scale, 0u);
  EXPECT_NE(refusal(fmt::format(R"({{"model_type": "llama4_text", {}, "attention_chunk_size": null}})", sizes)).find("attention_chunk_size"),
            std::string::npos);
  EXPECT_NE(refusal(llama(R"("use_qk_norm": true)")).find("Llama 4 field"), std::string::npos);
  EXPECT_NE(test::expect_error(ErrorCode::ConfigInvalid, [&] { d.to_hf_config_json(); }).find("llama4_text"), std::string::npos);
}

TEST(HfConfig, DeepseekLatentAttentionAndRouting) {
  const LlamaConfig v3 = read(deepseek("deepseek_v3", R"("q_lora_rank": 12, "n_group": 4, "topk_group": 2, "head_dim": 99)"));
  EXPECT_TRUE(v3.latent_attention());
  EXPECT_EQ(v3.head_dim, 4u);  // qk_rope_head_dim, whatever head_dim says (as transformers sets it)
  EXPECT_EQ(v3.mla.q_lora_rank, 12u);
  EXPECT_EQ(v3.mla.qk_head_dim(), 8u);
  EXPECT_TRUE(v3.mla.interleaved_rope);
  EXPECT_DOUBLE_EQ(v3.mla.softmax_scale, 1 / std::sqrt(8.0));
  EXPECT_EQ(v3.moe.scoring, MoeConfig::Scoring::Sigmoid);
  EXPECT_TRUE(v3.moe.score_correction_bias && v3.moe.group_by_top_two && v3.moe.norm_topk_prob && !v3.moe.shared_expert_gated);
  EXPECT_EQ(v3.moe.shared_expert_intermediate_size, 8u);  // n_shared_experts 1 of moe_intermediate_size
  EXPECT_DOUBLE_EQ(v3.moe.routed_scaling_factor, 2.5);
  EXPECT_EQ(v3.moe.first_dense_layers, 3u);  // V3's default first_k_dense_replace: every layer of 2 dense
  EXPECT_FALSE(v3.moe_layer(1));
  const LlamaConfig v2 = read(deepseek("deepseek_v2", R"("q_lora_rank": null, "first_k_dense_replace": 1, "topk_method": "group_limited_greedy",
                                                        "n_group": 2, "topk_group": 1, "rope_parameters": {"rope_type": "yarn", "factor": 4.0,
                                                        "original_max_position_embeddings": 16, "mscale": 1.0, "mscale_all_dim": 0.5})"));
  EXPECT_EQ(v2.mla.q_lora_rank, 0u);
  EXPECT_EQ(v2.moe.scoring, MoeConfig::Scoring::Softmax);
  EXPECT_FALSE(v2.moe.norm_topk_prob || v2.moe.group_by_top_two || v2.moe.score_correction_bias);
  EXPECT_EQ(v2.moe.groups, 2u);
  EXPECT_FALSE(v2.moe_layer(0));
  EXPECT_TRUE(v2.moe_layer(1));
  const double m = 0.1 * 0.5 * std::log(4.0) + 1;  // yarn_apply_mscale
  EXPECT_NEAR(v2.mla.softmax_scale, m * m / std::sqrt(8.0), 1e-12);
  EXPECT_NE(v2.features().find("latent attention (q q_proj, kv_lora_rank 8"), std::string::npos) << v2.features();
}

TEST(HfConfig, DeepseekFieldsTheEngineCannotFollowAreRefusedByName) {
  const std::pair<std::string, const char*> cases[] = {
      {deepseek("deepseek_v3", R"("n_group": 3)"), "'n_group'"},
      {deepseek("deepseek_v3", R"("n_group": 8, "topk_group": 1)"), "'n_group'"},  // groups of one: no best two
      {deepseek("deepseek_v3", R"("n_group": 4, "topk_group": 5)"), "'topk_group'"},
      {deepseek("deepseek_v3", R"("n_group": 4, "topk_group": 1, "num_experts_per_tok": 3)"), "'num_experts_per_tok'"},
      {deepseek("deepseek_v3", R"("n_group": 1, "topk_group": 1, "num_key_value_heads": 2)"), "'num_key_value_heads'"},
      {deepseek("deepseek_v2", R"("topk_method": "noaux_tc")"), "'topk_method'"},
      {deepseek("deepseek_v2", R"("q_lora_rank": 0)"), "'q_lora_rank'"},
      {deepseek("deepseek_v2", R"("kv_lora_rank": 0)"), "'kv_lora_rank'"},
      {deepseek("deepseek_v2", R"("routed_scaling_factor": 0)"), "'routed_scaling_factor'"},
      {llama(R"("kv_lora_rank": 8)"), "'kv_lora_rank'"},
  };
  for (const auto& [json, field] : cases) {
    const std::string msg = refusal(json);
    EXPECT_NE(msg.find(field), std::string::npos) << json << " → " << msg;
  }
}

}  // namespace
}  // namespace wl

namespace wl {
namespace {

std::string gpt_oss(const std::string& fields) {
  return fmt::format(R"({{"model_type": "gpt_oss", {}, "num_local_experts": 4, "num_experts_per_tok": 2{}}})", kSizes,
                     fields.empty() ? "" : ", " + fields);
}

TEST(HfConfig, GptOssDefaultsSinksAndClampedSwiglu) {
  const LlamaConfig c = read(gpt_oss(""));
  // gpt-oss's own defaults: attention_bias true, sliding_window 128 on layers 0, 2, ..., rope_theta 150000.
  EXPECT_TRUE(c.qkv_bias && c.o_bias);
  EXPECT_EQ(c.sliding_window, 128u);
  EXPECT_EQ(c.window_layer(0), 128u);
  EXPECT_EQ(c.window_layer(1), 0u);
  EXPECT_DOUBLE_EQ(c.rope_theta, 150000.0);
  EXPECT_TRUE(c.attention_sinks);
  EXPECT_EQ(c.moe.num_experts, 4u);
  EXPECT_EQ(c.moe.expert_intermediate_size, 16u);  // intermediate_size
  EXPECT_TRUE(c.moe.router_bias && c.moe.expert_bias && c.moe.norm_topk_prob && c.moe.stacks == MoeConfig::Stacks::Interleaved);
  EXPECT_DOUBLE_EQ(c.moe.swiglu_limit, 7.0);
  EXPECT_DOUBLE_EQ(c.moe.swiglu_alpha, 1.702);
  EXPECT_NE(c.features().find("attention sinks"), std::string::npos) << c.features();
  const LlamaConfig yarn = read(gpt_oss(R"("attention_bias": false, "sliding_window": 8, "swiglu_limit": 3.5,
      "rope_parameters": {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                          "truncate": false, "original_max_position_embeddings": 4096})"));
  EXPECT_FALSE(yarn.qkv_bias || yarn.o_bias);
  EXPECT_EQ(yarn.sliding_window, 8u);
  EXPECT_DOUBLE_EQ(yarn.moe.swiglu_limit, 3.5);
  EXPECT_EQ(yarn.rope_scaling.type, "yarn");
  EXPECT_FALSE(yarn.rope_scaling.truncate);
  EXPECT_FALSE(read(llama(R"("attention_bias": true)")).attention_sinks);
}

TEST(HfConfig, GptOssFieldsTheEngineCannotFollowAreRefusedByName) {
  const std::pair<std::string, const char*> cases[] = {
      {gpt_oss(R"("swiglu_limit": 0)"), "'swiglu_limit'"},
      {gpt_oss(R"("swiglu_alpha": -1)"), "'swiglu_alpha'"},
      {gpt_oss(R"("num_experts_per_tok": 5)"), "'num_experts_per_tok'"},
      {gpt_oss(R"("layer_types": ["full_attention", "chunked_attention"])"), "'layer_types[1]'"},
  };
  for (const auto& [json, field] : cases) {
    const std::string msg = refusal(json);
    EXPECT_NE(msg.find(field), std::string::npos) << json << " → " << msg;
  }
  EXPECT_THROW(read(gpt_oss("")).to_hf_config_json(), Error);
}

}  // namespace
}  // namespace wl
