// Every family's tensor splits (Family::tensor_splits, src/families/tensor_splits.hpp): well-formed
// rows naming the family's own MLP names, every tensor of a family's checkpoint read, and what a
// tiny model of each family declares on each rank (tensor parallel at 1, 2 and 4 ranks, expert
// parallel at 2) as engine/tensor_parallel.cpp walks them: the same as before the splits were data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "engine/tensor_parallel.hpp"
#include "families/family.hpp"
#include "test_util.hpp"
#include "weightloader/engine/llama_config.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {
namespace {

constexpr const char* kSizes = R"("hidden_size": 32, "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 64)";

struct Case {
  std::string name, fields;                   // config.json's fields beyond kSizes (2 kv heads unless they say)
  std::function<void(LlamaConfig&)> tweak{};  // what the checkpoint, not config.json, decides
};

std::vector<Case> cases() {
  const std::string deepseek = R"("kv_lora_rank": 8, "qk_nope_head_dim": 4, "qk_rope_head_dim": 4, "v_head_dim": 6, "n_routed_experts": 4,
                                  "moe_intermediate_size": 8, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1, "num_key_value_heads": 4)";
  return {
      {"llama", R"("model_type": "llama")"},
      {"llama_biased_tied", R"("model_type": "llama", "attention_bias": true, "mlp_bias": true, "tie_word_embeddings": true)"},
      {"llama_k_quant_units", R"("model_type": "llama", "intermediate_size": 1024)"},
      {"llama_fused", R"("model_type": "llama")", [](LlamaConfig& c) { c.fused_checkpoint = c.fused_gate_up = true; }},
      {"mistral", R"("model_type": "mistral")"},
      {"mixtral", R"("model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2)"},
      {"qwen2", R"("model_type": "qwen2")"},
      {"qwen2_moe", R"("model_type": "qwen2_moe", "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
                       "shared_expert_intermediate_size": 16)"},
      {"qwen3", R"("model_type": "qwen3")"},
      {"qwen3_moe", R"("model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8)"},
      {"gemma", R"("model_type": "gemma", "head_dim": 8)"},
      {"gemma2", R"("model_type": "gemma2", "head_dim": 8)"},
      {"gemma3_text", R"("model_type": "gemma3_text", "head_dim": 8)"},
      {"phi3", R"("model_type": "phi3")", [](LlamaConfig& c) { c.fused_checkpoint = c.fused_gate_up = true; }},
      {"granite", R"("model_type": "granite")"},
      {"smollm3", R"("model_type": "smollm3")"},
      {"olmo2", R"("model_type": "olmo2")"},
      {"nemotron-nas", R"("model_type": "nemotron-nas", "num_hidden_layers": 3, "block_configs": [
           {"attention": {"n_heads_in_group": 2}, "ffn": {"ffn_mult": 1.0}},
           {"attention": {"no_op": true}, "ffn": {"ffn_mult": 2.0}},
           {"attention": {"n_heads_in_group": 4}, "ffn": {"no_op": true}}])"},
      {"deci", R"("model_type": "deci", "attention_bias": true, "num_key_value_heads_per_layer": [4, 1])"},
      {"deepseek_v2", R"("model_type": "deepseek_v2", "q_lora_rank": null, "attention_bias": true, )" + deepseek},
      {"deepseek_v3", R"("model_type": "deepseek_v3", "q_lora_rank": 12, "n_group": 2, "topk_group": 1, )" + deepseek},
      {"gpt_oss", R"("model_type": "gpt_oss", "num_local_experts": 4)"},
      {"gpt_oss_per_expert", R"("model_type": "gpt_oss", "num_local_experts": 4)", [](LlamaConfig& c) { c.moe.stacks = MoeConfig::Stacks::None; }},
      {"glm4", R"("model_type": "glm4")", [](LlamaConfig& c) { c.fused_gate_up = true; }},
      {"granitemoe", R"("model_type": "granitemoe", "num_local_experts": 4, "num_experts_per_tok": 2)"},
      {"granitemoeshared", R"("model_type": "granitemoeshared", "num_local_experts": 4, "num_experts_per_tok": 2, "shared_intermediate_size": 8)",
       [](LlamaConfig& c) { c.fused_shared_gate_up = true; }},
      {"llama4_text", R"("model_type": "llama4_text", "num_local_experts": 4, "intermediate_size_mlp": 24, "interleave_moe_layer_step": 2)"},
      {"llama4_text_per_expert", R"("model_type": "llama4_text", "num_local_experts": 4, "intermediate_size_mlp": 24, "interleave_moe_layer_step": 2)",
       [](LlamaConfig& c) { c.moe.stacks = MoeConfig::Stacks::None; }},
  };
}

LlamaConfig config_of(const Case& k) {
  const bool kv_given = k.fields.find("num_key_value_heads") != std::string::npos;
  LlamaConfig c = llama_config_from_hf_json(fmt::format("{{{}, {}{}}}", kSizes, k.fields, kv_given ? "" : R"(, "num_key_value_heads": 2)"), k.name);
  if (k.tweak) k.tweak(c);
  return c;
}

// One rank's declaration as text: each parameter's name, shape, dtype and shards.
std::string described(const Model& m) {
  std::string out;
  for (const Parameter& p : m.parameters()) {
    out += fmt::format("{} [{}] {}", p.name, fmt::join(p.shape(), ","), dtype_name(p.dtype()));
    for (const ParameterShard& s : p.shards) out += fmt::format(" <{}:{}[{},{})@{}", s.from, s.slice.dim, s.slice.begin, s.slice.end, s.row_offset);
    out += "\n";
  }
  return out;
}

// Every rank's declaration of `c` at each split this test exercises.
std::string declarations(const LlamaConfig& c) {
  std::string out;
  for (const auto& [size, experts] : std::vector<std::pair<unsigned, bool>>{{1, false}, {2, false}, {4, false}, {2, true}}) {
    if (experts && !c.moe.num_experts) continue;
    for (unsigned rank = 0; rank < size; ++rank) {
      out += fmt::format("== tp {}{} rank {}\n", size, experts ? " expert parallel" : "", rank);
      try {
        out += described(declare_rank_parameters(c, partition_rank(c, rank, size, experts), DType::BF16));
      } catch (const Error& e) {
        out += fmt::format("refused: {}\n", e.what());
      }
    }
  }
  return out;
}

// Declarations as text, each rank's lines sorted (the order parameters are declared in is not
// compared), then FNV-1a: a fingerprint to compare.
uint64_t fingerprint(const std::string& text) {
  std::vector<std::string> lines, block;
  std::istringstream in(text);
  auto flush = [&] {
    std::sort(block.begin(), block.end());
    lines.insert(lines.end(), block.begin(), block.end());
    block.clear();
  };
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("==")) {
      flush();
      lines.push_back(line);
    } else {
      block.push_back(line);
    }
  }
  flush();
  uint64_t h = 14695981039346656037ull;
  for (const std::string& line : lines)
    for (char ch : line + "\n") h = (h ^ uint8_t(ch)) * 1099511628211ull;
  return h;
}

TEST(TensorSplits, EveryFamilyNamesWellFormedRows) {
  for (const Family* f : families()) {
    ASSERT_FALSE(f->tensor_splits.empty()) << f->model_type << " names no tensor splits";
    for (const SplitTable& table : f->tensor_splits)
      for (const TensorSplit& row : table.rows) {
        const std::string what = fmt::format("{}'s {}", f->model_type, row.name);
        const size_t dims = size_t(std::find(row.dims.begin(), row.dims.end(), Extent::None) - row.dims.begin());
        EXPECT_GE(dims, 1u) << what;
        EXPECT_TRUE(std::all_of(row.dims.begin() + dims, row.dims.end(), [](Extent e) { return e == Extent::None; })) << what;
        EXPECT_LT(row.split, dims) << what << ": its split dimension does not exist";
        const bool parts = row.parts[0].rows != Extent::None;
        for (size_t d = 0; d < dims; ++d) EXPECT_EQ(row.dims[d] == Extent::Parts, parts && d == row.split) << what << " dim " << d;
        EXPECT_FALSE(row.placement == Placement::Whole && parts) << what << ": whole on every rank, it reads no parts";
        EXPECT_FALSE(row.fused != When::Never && !parts) << what << ": a fused tensor holds parts";
        EXPECT_TRUE(split_name(row.name, f->mlp)) << what;
        EXPECT_TRUE(split_name(row.fused_from, f->mlp)) << what;
        for (const SplitPart& part : row.parts)
          EXPECT_TRUE(part.rows == Extent::None || split_name(part.from, f->mlp)) << what << " reads " << part.from;
      }
  }
}

// The checkpoints transformers wrote (../shared/testdata/hf-tiny-arch): rank 0 of 1 reads every
// tensor each has that the engine takes, and none it lacks.
TEST(TensorSplits, RowsCoverEveryTensorOfACheckpoint) {
  WL_REQUIRE_TESTDATA();
  for (const char* name : {"gemma", "gemma2", "mistral", "mixtral", "phi3", "qwen2"}) {
    const std::string dir = (test::testdata_dir() / "hf-tiny-arch" / name).string();
    std::set<std::string> stored;
    const Catalogue catalogue = read_safetensors_catalogue(dir + "/model.safetensors");  // named: a range-for over a temporary's member dangles
    for (const TensorInfo& t : catalogue.tensors) stored.insert(t.name);
    LlamaConfig c = llama_config_from_hf_json(test::read_bytes(dir + "/config.json"), name);
    c.fused_checkpoint = stored.count("model.layers.0.self_attn.qkv_proj.weight") > 0;
    c.fused_gate_up = stored.count("model.layers.0.mlp.gate_up_proj.weight") > 0;
    if (c.tie_word_embeddings) stored.erase("lm_head.weight");  // a tied head is never read (rank_load_options.hpp)
    std::set<std::string> read;
    const Model model = declare_rank_parameters(c, partition_rank(c, 0, 1), DType::F32);
    for (const Parameter& p : model.parameters()) {
      if (p.shards.empty()) read.insert(p.name);
      for (const ParameterShard& s : p.shards) read.insert(s.from);
    }
    EXPECT_EQ(read, stored) << name;
  }
}

// Every registered family has a tiny model here, and each declares what the per-kind code before
// the split tables declared (fingerprints of its text; WL_SPLITS_DUMP=<dir> writes each case's).
TEST(TensorSplits, TinyModelsDeclareTheSameParametersShapesAndShards) {
  static const std::map<std::string, uint64_t> kBefore = {
      {"llama", 0xab5a7b51eae5b799ull},
      {"llama_biased_tied", 0x2e31fead888e8b10ull},
      {"llama_k_quant_units", 0x596ca6da32e50d57ull},
      {"llama_fused", 0xca45c0136b74d5d5ull},
      {"mistral", 0xab5a7b51eae5b799ull},
      {"mixtral", 0xc6f60f69d8bda32aull},
      {"qwen2", 0x92f57c0ae8996739ull},
      {"qwen2_moe", 0xc389edf4e7f45658ull},
      {"qwen3", 0xd4d47825dcdfd5d7ull},
      {"qwen3_moe", 0xb43f2ec4a4bd3570ull},
      {"gemma", 0x0668ab4abda8c667ull},
      {"gemma2", 0xeae0d71e69bf3707ull},
      {"gemma3_text", 0xc58f513321fd9cd5ull},
      {"phi3", 0xca45c0136b74d5d5ull},
      {"granite", 0xab5a7b51eae5b799ull},
      {"smollm3", 0x0668ab4abda8c667ull},
      {"olmo2", 0x00cbea038f2f3737ull},
      {"nemotron-nas", 0xecde1dc127ddbdd6ull},
      {"deci", 0x0b3e137a258b43a4ull},
      {"deepseek_v2", 0x254c47465fb86f6eull},
      {"deepseek_v3", 0x26f23d08eb8f04a5ull},
      {"gpt_oss", 0x193ebf7ee8fee326ull},
      {"gpt_oss_per_expert", 0x5c3117773b2e98dfull},
      {"glm4", 0x7df9944f6afbb0b1ull},
      {"granitemoe", 0xc6f60f69d8bda32aull},
      {"granitemoeshared", 0x692687e3dec8d98bull},
      {"llama4_text", 0xe6b0437dc5540868ull},
      {"llama4_text_per_expert", 0x37e5a7c23d8fb630ull},
  };
  std::set<std::string> covered;
  const char* dump = std::getenv("WL_SPLITS_DUMP");
  for (const Case& k : cases()) {
    const LlamaConfig c = config_of(k);
    covered.insert(c.architecture);
    const std::string text = declarations(c);
    if (dump) std::ofstream(fmt::format("{}/{}.txt", dump, k.name)) << text;
    EXPECT_EQ(fmt::format("{:#018x}", fingerprint(text)), fmt::format("{:#018x}", kBefore.at(k.name))) << k.name;
  }
  for (const Family* f : families()) EXPECT_TRUE(covered.count(std::string(f->model_type))) << f->model_type << " has no tiny model here";
}

}  // namespace
}  // namespace wl
