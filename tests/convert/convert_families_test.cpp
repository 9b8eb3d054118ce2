// GGUF output for the families beyond Llama, as llama.cpp's converter writes them (architecture,
// keys, names, q/k layout, Gemma's norms, Mixtral's expert stacks, Phi-3's fused projections), read
// back by our GGUF reader and engine: the logits equal transformers' (../shared/testdata/hf-tiny-arch)
// at every position. What llama.cpp's GGUF would run differently is refused, naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/engine/llm.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<WeightSource> open(const std::string& path, const std::string& loader) {
  return WeightLoaderRegistry::with_builtins()->create(loader)->get_weights(path);
}

std::string arch_dir(const std::string& family) { return (test::testdata_dir() / "hf-tiny-arch" / family).string(); }

std::string to_gguf(const std::string& model_dir, const std::string& out) {
  ConvertOptions o;
  o.to = CheckpointFormat::Gguf;
  o.gguf_type = "f32";
  convert_checkpoint(*open(model_dir, "hf"), out, o);
  return out;
}

std::vector<float> values(const WeightSource& s, const std::string& name) {
  const TensorView t = s.load(s.at(name), DType::F32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

const GgufTensorRecord& record(const GgufFile& f, const std::string& name) {
  for (const GgufTensorRecord& r : f.tensors)
    if (r.name == name) return r;
  throw Error(ErrorCode::TensorNotFound, "not stored", f.path, name);
}

bool stored(const GgufFile& f, const std::string& name) {
  for (const GgufTensorRecord& r : f.tensors)
    if (r.name == name) return true;
  return false;
}

// The logits at every position of the reference's sequences.
std::vector<std::vector<std::vector<float>>> all_logits(const std::string& model, const nlohmann::json& sequences, unsigned tp = 1) {
  LLMOptions o;
  o.model = model;
  o.tensor_parallel_size = tp;
  LLM llm(o);
  std::vector<std::vector<std::vector<float>>> out;
  for (const std::vector<int32_t> ids : sequences) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = 1;
    p.return_logits = true;
    p.stop_at_eos = false;
    out.push_back(llm.generate(ids, p).logits);
  }
  return out;
}

// The largest difference from `want` over every position, relative to each row's largest |logit|
// (at least 1: a padding token's rows are zeros).
template <typename Rows>
double max_relative_error(const std::vector<std::vector<std::vector<float>>>& got, const Rows& want) {
  double worst = 0;
  EXPECT_EQ(got.size(), want.size());
  for (size_t s = 0; s < std::min<size_t>(got.size(), want.size()); ++s) {
    EXPECT_EQ(got[s].size(), want[s].size());
    for (size_t pos = 0; pos < std::min<size_t>(got[s].size(), want[s].size()); ++pos) {
      double scale = 1, err = 0;
      for (size_t v = 0; v < got[s][pos].size(); ++v) {
        const double w = want[s][pos][v];
        scale = std::max(scale, std::abs(w));
        err = std::max(err, std::abs(double(got[s][pos][v]) - w));
      }
      worst = std::max(worst, err / scale);
    }
  }
  return worst;
}

nlohmann::json reference(const std::string& family) {
  return nlohmann::json::parse(test::read_bytes(arch_dir(family) + "/reference_logits.json"));
}

TEST(ConvertFamilies, Qwen2ToGgufAsLlamaCppWritesIt) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  auto source = open(arch_dir("qwen2"), "hf");
  const GgufFile f = read_gguf(to_gguf(arch_dir("qwen2"), dir.file("q.gguf")));
  EXPECT_EQ(*f.get<std::string>("general.architecture"), "qwen2");
  EXPECT_EQ(*f.get<uint32_t>("qwen2.block_count"), 2u);
  EXPECT_EQ(*f.get<uint32_t>("qwen2.attention.head_count_kv"), 1u);
  EXPECT_EQ(*f.get<uint32_t>("qwen2.context_length"), 16u);
  EXPECT_EQ(*f.get<uint32_t>("qwen2.vocab_size"), 12u);  // llama.cpp sizes the embedding by it without a vocabulary
  EXPECT_EQ(f.get<uint32_t>("qwen2.rope.dimension_count"), nullptr);
  EXPECT_EQ(f.get<uint32_t>("llama.block_count"), nullptr);
  for (const char* name : {"blk.0.attn_q.weight", "blk.1.attn_k.bias", "blk.0.ffn_gate.weight", "output.weight"})
    EXPECT_TRUE(stored(f, name)) << name;
  // Read back under Hugging Face names, the rows as Hugging Face has them (llama.cpp's qwen2 is NEOX-style).
  auto back = open(dir.file("q.gguf"), "local");
  for (const char* hf : {"model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.k_proj.bias",
                         "model.layers.0.mlp.gate_proj.weight", "lm_head.weight"})
    EXPECT_EQ(values(*back, hf), values(*source, hf)) << hf;
}

// Mixtral is llama.cpp's llama with experts: its q/k rows interleaved, each projection's experts
// one 3-D stack, read back as one tensor per expert.
TEST(ConvertFamilies, MixtralExpertsAsStacks) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  auto source = open(arch_dir("mixtral"), "hf");
  const GgufFile f = read_gguf(to_gguf(arch_dir("mixtral"), dir.file("m.gguf")));
  EXPECT_EQ(*f.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(*f.get<uint32_t>("llama.expert_count"), 4u);
  EXPECT_EQ(*f.get<uint32_t>("llama.expert_used_count"), 2u);
  EXPECT_EQ(*f.get<uint32_t>("llama.rope.dimension_count"), 4u);
  EXPECT_EQ(record(f, "blk.1.ffn_gate_exps.weight").shape(), (Shape{4, 12, 8}));
  EXPECT_EQ(record(f, "blk.1.ffn_down_exps.weight").shape(), (Shape{4, 8, 12}));
  EXPECT_EQ(record(f, "blk.0.ffn_gate_inp.weight").shape(), (Shape{4, 8}));
  EXPECT_FALSE(stored(f, "blk.0.ffn_gate.weight"));
  auto back = open(dir.file("m.gguf"), "local");
  for (const char* hf : {"model.layers.1.block_sparse_moe.experts.2.w1.weight", "model.layers.0.block_sparse_moe.experts.3.w3.weight",
                         "model.layers.1.block_sparse_moe.experts.0.w2.weight", "model.layers.0.self_attn.q_proj.weight",
                         "model.layers.0.self_attn.k_proj.weight"})
    EXPECT_EQ(values(*back, hf), values(*source, hf)) << hf;
  const WeightSource raw("gguf", dir.file("m.gguf"), read_gguf_catalogue(dir.file("m.gguf")));
  EXPECT_NE(values(raw, "blk.0.attn_q.weight"), values(*source, "model.layers.0.self_attn.q_proj.weight"))
      << "stored interleaved, as llama.cpp's converter permutes a llama";
}

// llama.cpp's converter stores Gemma's norms as 1 + w and leaves out its (tied) lm_head; the
// reader gives w back.
TEST(ConvertFamilies, GemmaNormsStoredAsOnePlusW) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  auto source = open(arch_dir("gemma"), "hf");
  const GgufFile f = read_gguf(to_gguf(arch_dir("gemma"), dir.file("g.gguf")));
  EXPECT_EQ(*f.get<std::string>("general.architecture"), "gemma");
  EXPECT_EQ(*f.get<uint32_t>("gemma.attention.key_length"), 6u);
  EXPECT_EQ(*f.get<uint32_t>("gemma.attention.value_length"), 6u);
  EXPECT_FALSE(stored(f, "output.weight"));
  const WeightSource raw("gguf", dir.file("g.gguf"), read_gguf_catalogue(dir.file("g.gguf")));
  auto back = open(dir.file("g.gguf"), "local");
  for (const auto& [gguf, hf] : {std::pair{"blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"},
                                 {"blk.1.ffn_norm.weight", "model.layers.1.post_attention_layernorm.weight"},
                                 {"output_norm.weight", "model.norm.weight"}}) {
    const std::vector<float> w = values(*source, hf), plus_one = values(raw, gguf), read = values(*back, hf);
    ASSERT_EQ(plus_one.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      EXPECT_EQ(plus_one[i], w[i] + 1.0f) << gguf;
      EXPECT_NEAR(read[i], w[i], 1e-7) << hf;
    }
  }
  EXPECT_EQ(back->at("model.layers.0.input_layernorm.weight").stored_type(), "F32 stored as 1 + w");
}

// Phi-3's fused qkv_proj and gate_up_proj are stored as they are, its partial rotary as the
// dimension count, its window as sliding_window; its tied head is written as output.weight, which
// llama.cpp's phi3 requires.
TEST(ConvertFamilies, Phi3FusedAsStored) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  auto source = open(arch_dir("phi3"), "hf");
  const GgufFile f = read_gguf(to_gguf(arch_dir("phi3"), dir.file("p.gguf")));
  EXPECT_EQ(*f.get<std::string>("general.architecture"), "phi3");
  EXPECT_EQ(*f.get<uint32_t>("phi3.rope.dimension_count"), 6u);  // 0.75 of 8
  EXPECT_EQ(*f.get<uint32_t>("phi3.attention.sliding_window"), 4u);
  EXPECT_EQ(record(f, "blk.0.attn_qkv.weight").shape(), (Shape{64, 32}));
  EXPECT_EQ(record(f, "blk.0.ffn_up.weight").shape(), (Shape{48, 32}));
  EXPECT_FALSE(stored(f, "blk.0.ffn_gate.weight"));
  auto back = open(dir.file("p.gguf"), "local");
  EXPECT_EQ(values(*back, "model.layers.1.self_attn.qkv_proj.weight"), values(*source, "model.layers.1.self_attn.qkv_proj.weight"));
  EXPECT_EQ(values(*back, "model.layers.1.mlp.gate_up_proj.weight"), values(*source, "model.layers.1.mlp.gate_up_proj.weight"));
  EXPECT_EQ(values(*back, "lm_head.weight"), values(*source, "model.embed_tokens.weight"));
}

// Our GGUF reader and engine run each conversion to transformers' logits, at every position.
class GgufReadBack : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufReadBack, LogitsMatchTransformers) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  const std::string gguf = to_gguf(arch_dir(GetParam()), dir.file("m.gguf"));
  const nlohmann::json ref = reference(GetParam());
  for (unsigned tp : {1u, 2u}) {
    const double err = max_relative_error(all_logits(gguf, ref["sequences"], tp), ref["logits"]);
    std::printf("[ %s from GGUF, tp=%u ] max error %.3g of the row's scale\n", GetParam(), tp, err);
    EXPECT_LE(err, 1e-5) << GetParam() << " tp " << tp;
  }
}

// What the reader presents (one tensor per expert, Gemma's norms as w, q/k rows in Hugging Face's
// order) the writer stores back as it was: GGUF to GGUF is byte for byte.
TEST_P(GgufReadBack, RewritesItselfByteForByte) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  // general.name comes from the source's name: the family's, both times.
  const std::string once = to_gguf(arch_dir(GetParam()), dir.file(std::string(GetParam()) + ".gguf"));
  ConvertOptions o;
  o.to = CheckpointFormat::Gguf;
  o.gguf_type = "f32";
  convert_checkpoint(*open(once, "local"), dir.file("twice.gguf"), o);
  EXPECT_EQ(test::read_bytes(dir.file("twice.gguf")), test::read_bytes(once)) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Families, GgufReadBack, ::testing::Values("qwen2", "mixtral", "gemma", "phi3"));

// Gemma 2 as llama.cpp runs it (queries scaled by 1/sqrt(head_dim), so a config whose
// query_pre_attn_scalar is head_dim): four norms, soft-caps and alternating windows written and
// read back, the same logits as from its Hugging Face original.
TEST(ConvertFamilies, Gemma2ReadsBack) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  fs::create_directories(dir.file("hf"));
  nlohmann::json config = nlohmann::json::parse(test::read_bytes(arch_dir("gemma2") + "/config.json"));
  config["query_pre_attn_scalar"] = config["head_dim"];
  test::write_bytes(dir.file("hf/config.json"), config.dump());
  fs::create_symlink(fs::absolute(arch_dir("gemma2") + "/model.safetensors"), dir.file("hf/model.safetensors"));
  const GgufFile f = read_gguf(to_gguf(dir.file("hf"), dir.file("g2.gguf")));
  EXPECT_EQ(*f.get<float>("gemma2.attn_logit_softcapping"), 5.0f);
  EXPECT_EQ(*f.get<float>("gemma2.final_logit_softcapping"), 0.5f);
  EXPECT_EQ(*f.get<uint32_t>("gemma2.attention.sliding_window"), 4u);
  for (const char* name : {"blk.1.post_attention_norm.weight", "blk.1.ffn_norm.weight", "blk.1.post_ffw_norm.weight"})
    EXPECT_TRUE(stored(f, name)) << name;
  const nlohmann::json sequences = reference("gemma2")["sequences"];
  const auto want = all_logits(dir.file("hf"), sequences);
  const double err = max_relative_error(all_logits(dir.file("g2.gguf"), sequences), want);
  std::printf("[ gemma2 from GGUF ] max difference %.3g of the row's scale from its original\n", err);
  EXPECT_LE(err, 1e-6);
}

TEST(ConvertFamilies, WhatLlamaCppWouldRunOtherwiseIsRefusedByName) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  for (const auto& [family, field] : {std::pair{"mistral", "sliding_window none instead of 4 on every layer"},
                                      {"gemma2", "query_pre_attn_scalar 6 instead of 12"}}) {
    const std::string path = arch_dir(family);  // a lambda may not capture a structured binding under clang 14
    const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] { to_gguf(path, dir.file("x.gguf")); });
    EXPECT_NE(msg.find(family), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
    EXPECT_FALSE(fs::exists(dir.file("x.gguf")));
  }
}

// transformers 5's rope_parameters per layer type: GGUF (one rope.freq_base) cannot say that
// Gemma 2's sliding layers turn with their own theta, so it is refused rather than written.
TEST(ConvertFamilies, PerLayerTypeRopeThetaIsRefusedWhereGgufCannotSayIt) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  fs::create_directories(dir.file("hf"));
  nlohmann::json config = nlohmann::json::parse(test::read_bytes(arch_dir("gemma2") + "/config.json"));
  config["query_pre_attn_scalar"] = config["head_dim"];
  config.erase("rope_theta");
  config["rope_parameters"] = {{"full_attention", {{"rope_theta", 1000000.0}}}, {"sliding_attention", {{"rope_theta", 10000.0}}}};
  test::write_bytes(dir.file("hf/config.json"), config.dump());
  fs::create_symlink(fs::absolute(arch_dir("gemma2") + "/model.safetensors"), dir.file("hf/model.safetensors"));
  const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] { to_gguf(dir.file("hf"), dir.file("x.gguf")); });
  EXPECT_NE(msg.find("sliding layers' rope_theta/rope_scaling those of every layer instead of 10000/none"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(dir.file("x.gguf")));
}

// A configuration that is there but wrong is reported, never replaced by a guess from the shapes
// (which would write this Gemma as a Llama).
TEST(ConvertFamilies, AWrongConfigurationIsReportedNotGuessedAround) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  fs::create_directories(dir.file("hf"));
  nlohmann::json config = nlohmann::json::parse(test::read_bytes(arch_dir("gemma") + "/config.json"));
  config["num_key_value_heads"] = 3;
  test::write_bytes(dir.file("hf/config.json"), config.dump());
  fs::create_symlink(fs::absolute(arch_dir("gemma") + "/model.safetensors"), dir.file("hf/model.safetensors"));
  for (CheckpointFormat to : {CheckpointFormat::Gguf, CheckpointFormat::Llama2c}) {
    ConvertOptions o;
    o.to = to;
    const std::string msg = test::expect_error(ErrorCode::ConfigInvalid, [&] {
      convert_checkpoint(*open(dir.file("hf"), "hf"), dir.file("x.out"), o);
    });
    EXPECT_NE(msg.find("num_key_value_heads"), std::string::npos) << msg;
  }
}

// llama2.c's header says only sizes: run.c computes a plain Llama, so the other families are
// refused, naming what it would compute otherwise (Qwen2's biases have no place in the file).
TEST(ConvertFamilies, Llama2cOutputRefusesWhatRunCWouldComputeOtherwise) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  ConvertOptions o;
  o.to = CheckpointFormat::Llama2c;
  for (const auto& [family, field] : {std::pair{"mistral", "sliding_window none instead of 4"},
                                      {"mixtral", "experts none instead of 4"},
                                      {"gemma", "head_dim 4 instead of 6"},
                                      {"phi3", "rotary dimensions 8 instead of 6"}}) {
    const std::string path = arch_dir(family);  // a lambda may not capture a structured binding under clang 14
    const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] {
      convert_checkpoint(*open(path, "hf"), dir.file("x.bin"), o);
    });
    EXPECT_NE(msg.find(std::string("this ") + family + " cannot be written as llama2.c"), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
    EXPECT_FALSE(fs::exists(dir.file("x.bin")));
  }
}

}  // namespace
}  // namespace wl
