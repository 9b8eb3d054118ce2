// Model configuration from config.json, GGUF keys and the llama2.c header.
#include <gtest/gtest.h>

#include "model/gguf_config.hpp"
#include "engine/tensor_parallel.hpp"
#include "test_util.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

const char* kTinyLlama = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 16,
  "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_theta": 500000.0, "max_position_embeddings": 128, "vocab_size": 100,
  "tie_word_embeddings": true, "hidden_act": "silu", "rope_scaling": null})";

TEST(LlamaConfig, ReadsHuggingFaceFields) {
  const LlamaConfig c = llama_config_from_hf_json(kTinyLlama, "config.json");
  EXPECT_EQ(c.hidden_size, 16u);
  EXPECT_EQ(c.intermediate_size, 64u);
  EXPECT_EQ(c.num_layers, 2u);
  EXPECT_EQ(c.num_heads, 4u);
  EXPECT_EQ(c.num_kv_heads, 2u);
  EXPECT_EQ(c.head_dim, 4u);
  EXPECT_EQ(c.vocab_size, 100u);
  EXPECT_EQ(c.max_position_embeddings, 128u);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.qkv_bias);
  // Written back and read again, it is the same configuration.
  LlamaConfig again = llama_config_from_hf_json(c.to_hf_config_json(), "x");
  again.origin = c.origin;
  EXPECT_EQ(again, c);
}

TEST(LlamaConfig, Qwen2HasQkvBiasAndMistralsWindowIsNotItsContext) {
  const LlamaConfig q = llama_config_from_hf_json(
      R"({"model_type": "qwen2", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
          "num_attention_heads": 2, "vocab_size": 10, "sliding_window": 32, "use_sliding_window": false})", "q");
  EXPECT_TRUE(q.qkv_bias);
  EXPECT_FALSE(q.o_bias);
  EXPECT_EQ(q.max_position_embeddings, 2048u);
  const LlamaConfig m = llama_config_from_hf_json(
      R"({"model_type": "mistral", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
          "num_attention_heads": 2, "vocab_size": 10, "sliding_window": 32, "max_position_embeddings": 4096})", "m");
  EXPECT_EQ(m.max_position_embeddings, 4096u);
  EXPECT_EQ(m.window_layer(0), 32u);
  EXPECT_EQ(q.window_layer(0), 0u);
}

TEST(LlamaConfig, ErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* field;
  };
  const Case cases[] = {
      {R"({"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2})", "intermediate_size"},
      {R"({"model_type": "gpt2", "hidden_size": 8})", "model_type"},
      {R"({"architectures": ["BertModel"]})", "architectures"},
      {R"({"hidden_act": "relu"})", "hidden_act"},
      {R"({"rope_scaling": {"type": "su", "factor": 2.0}})", "rope_scaling"},
      {R"({"rope_scaling": {"rope_type": "yarn", "factor": 2.0, "low_freq_factor": 1.0}})", "rope_scaling.low_freq_factor"},
      {R"({"rope_scaling": {"rope_type": "yarn", "factor": 2.0, "beta_fast": -1}})", "rope_scaling"},
      {R"({"rope_scaling": {"rope_type": "dynamic", "factor": 2.0, "mscale": 1}})", "rope_scaling.mscale"},
      {R"({"rope_scaling": {"rope_type": "longrope", "short_factor": [1]}})", "rope_scaling.long_factor"},
      {R"({"rope_scaling": {"rope_type": "longrope", "short_factor": [1, -2], "long_factor": [1]}})", "rope_scaling.short_factor"},
      {R"({"rope_scaling": {"rope_type": "linear", "factor": 0.5}})", "rope_scaling.factor"},
      {R"({"model_type": "gemma2", "hidden_activation": "relu"})", "hidden_activation"},
      {R"({"model_type": "llama", "sliding_window": 4096})", "sliding_window"},
      {R"({"model_type": "llama", "attn_logit_softcapping": 50.0})", "attn_logit_softcapping"},
      {R"({"model_type": "mistral", "num_local_experts": 8})", "num_local_experts"},
      {R"({"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 5, "hidden_size": 8})", "num_experts_per_tok"},
      {R"({"model_type": "phi3", "partial_rotary_factor": 1.5})", "partial_rotary_factor"},
      {R"({"model_type": "qwen2", "eos_token_id": "end"})", "eos_token_id"},
      {R"({"hidden_size": -8, "intermediate_size": 16})", "hidden_size"},
      {R"({"hidden_size": "8"})", "hidden_size"},
  };
  for (const Case& c : cases) {
    const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_hf_json(c.json, "cfg.json"); });
    EXPECT_NE(msg.find(std::string("'") + c.field + "'"), std::string::npos) << c.json << " → " << msg;
    EXPECT_NE(msg.find("cfg.json"), std::string::npos) << msg;
  }
  test::expect_error(ErrorCode::ConfigInvalid, [] { llama_config_from_hf_json("[1, 2]", "cfg.json"); });
}

// Newer llama.cpp turns Gemma 2's sliding layers with rope.freq_base_swa: the engine does not read
// it from GGUF, so one that differs from rope.freq_base is refused, not ignored.
TEST(LlamaConfig, GgufSlidingLayersOwnRopeBaseIsRefused) {
  std::map<std::string, std::string> m{{"general.architecture", "gemma2"}, {"gemma2.embedding_length", "8"},
                                       {"gemma2.feed_forward_length", "16"}, {"gemma2.block_count", "2"},
                                       {"gemma2.attention.head_count", "2"}, {"gemma2.rope.freq_base", "10000"},
                                       {"gemma2.rope.freq_base_swa", "10000"}};
  EXPECT_DOUBLE_EQ(llama_config_from_gguf(m, "m.gguf").rope_theta, 10000.0);
  m["gemma2.rope.freq_base_swa"] = "1000000";
  const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_gguf(m, "m.gguf"); });
  EXPECT_NE(msg.find("'gemma2.rope.freq_base_swa'"), std::string::npos) << msg;
}

TEST(LlamaConfig, FromTheLlama2cHeaderAndCheckedAgainstTheTensors) {
  WL_REQUIRE_TESTDATA();
  auto loader = WeightLoaderRegistry::with_builtins()->create("llama2c");
  auto source = loader->get_weights((test::testdata_dir() / "llama2c-stories260K/stories260K.bin").string());
  const LlamaConfig c = llama_config_from_source(*source);
  EXPECT_EQ(c.origin, "llama2c");
  EXPECT_EQ(c.hidden_size, 64u);
  EXPECT_EQ(c.intermediate_size, 172u);
  EXPECT_EQ(c.num_layers, 5u);
  EXPECT_EQ(c.num_heads, 8u);
  EXPECT_EQ(c.num_kv_heads, 4u);
  EXPECT_EQ(c.vocab_size, 512u);
  EXPECT_EQ(c.max_position_embeddings, 512u);
  EXPECT_TRUE(c.tie_word_embeddings);
}

TEST(LlamaConfig, ADirectoryWithoutConfigurationIsConfigMissing) {
  test::TempDir dir;
  TensorView t = TensorView::empty(DType::F32, {2, 2});
  write_safetensors(dir.file("model.safetensors"), {{"model.embed_tokens.weight", t}});
  auto source = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir.file("model.safetensors"));
  test::expect_error(ErrorCode::ConfigMissing, [&] { llama_config_from_source(*source); });
}

TEST(LlamaConfig, AConfigurationThatDisagreesWithTheTensorsIsRefusedBeforeAllocating) {
  test::TempDir dir;
  write_safetensors(dir.file("model.safetensors"), {{"model.embed_tokens.weight", TensorView::empty(DType::F32, {10, 8})}});
  test::write_bytes(dir.file("config.json"),
                    R"({"hidden_size": 1048576, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 10})");
  auto source = WeightLoaderRegistry::with_builtins()->create("hf")->get_weights(dir.path().string());
  const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { llama_config_from_source(*source); });
  EXPECT_NE(msg.find("model.embed_tokens.weight"), std::string::npos) << msg;
}

TEST(TensorParallel, PartitionsHeadsUnitsAndVocabulary) {
  LlamaConfig c = llama_config_from_hf_json(kTinyLlama, "c");  // 4 heads, 2 kv heads, 64 units, vocab 100
  const RankPartition p = partition_rank(c, 1, 2);
  EXPECT_EQ(p.q_head0, 2u);
  EXPECT_EQ(p.q_heads, 2u);
  EXPECT_EQ(p.layers.at(1).kv_head0, 1u);
  EXPECT_EQ(p.layers.at(1).kv_heads, 1u);
  EXPECT_EQ(p.layers.at(1).ff0, 32u);
  EXPECT_EQ(p.vocab0, 50u);
  // Four ranks over two kv heads: each kv head is replicated on two ranks.
  EXPECT_EQ(partition_rank(c, 3, 4).layers.at(0).kv_head0, 1u);
  EXPECT_EQ(partition_rank(c, 1, 4).layers.at(0).kv_head0, 0u);
  const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] { partition_rank(c, 0, 3); });
  EXPECT_NE(msg.find("tensor_parallel_size"), std::string::npos) << msg;
  // Expert parallelism: whole experts per rank; refused without experts or when ranks do not divide them.
  EXPECT_NE(test::expect_error(ErrorCode::ConfigInvalid, [&] { partition_rank(c, 0, 2, true); }).find("needs a model with experts"),
            std::string::npos);
  c.moe.num_experts = 6, c.moe.experts_per_token = 2, c.moe.expert_intermediate_size = 16;
  const RankPartition ep = partition_rank(c, 1, 2, true);
  EXPECT_EQ(ep.expert0, 3u);
  EXPECT_EQ(ep.experts, 3u);
  EXPECT_EQ(ep.expert_ff, 16u);  // whole
  EXPECT_EQ(partition_rank(c, 1, 2).experts, 6u);
  EXPECT_EQ(partition_rank(c, 1, 2).expert_ff, 8u);  // a slice of each
  EXPECT_NE(test::expect_error(ErrorCode::ConfigInvalid, [&] { partition_rank(c, 0, 4, true); }).find("does not divide num_experts 6"),
            std::string::npos);
}

}  // namespace
}  // namespace wl
