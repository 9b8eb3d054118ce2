// config.json of each family into the model description: what each family's fields mean.
#include <gtest/gtest.h>

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
