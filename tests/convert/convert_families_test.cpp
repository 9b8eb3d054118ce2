// GGUF output for the families beyond Llama, as llama.cpp's converter writes them: Qwen2 under its
// own architecture's keys and names, its rotary halves kept; families not written yet refused.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

std::unique_ptr<WeightSource> open(const std::string& path, const std::string& loader) {
  return WeightLoaderRegistry::global().create(loader)->get_weights(path);
}

std::string arch_dir(const char* family) { return (test::testdata_dir() / "hf-tiny-arch" / family).string(); }

TEST(ConvertFamilies, Qwen2ToGgufAsLlamaCppWritesIt) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  auto source = open(arch_dir("qwen2"), "hf");
  ConvertOptions o;
  o.to = CheckpointFormat::Gguf;
  o.gguf_type = "f32";
  convert_checkpoint(*source, dir.file("q.gguf"), o);
  const GgufFile f = read_gguf(dir.file("q.gguf"));
  EXPECT_EQ(*f.get<std::string>("general.architecture"), "qwen2");
  EXPECT_EQ(*f.get<uint32_t>("qwen2.block_count"), 2u);
  EXPECT_EQ(*f.get<uint32_t>("qwen2.attention.head_count_kv"), 1u);
  EXPECT_EQ(*f.get<uint32_t>("qwen2.context_length"), 16u);
  EXPECT_EQ(*f.get<uint32_t>("qwen2.vocab_size"), 12u);  // llama.cpp sizes the embedding by it without a vocabulary
  EXPECT_EQ(f.get<uint32_t>("qwen2.rope.dimension_count"), nullptr);
  EXPECT_EQ(f.get<uint32_t>("llama.block_count"), nullptr);
  // Stored under llama.cpp's names, biases included, rows as Hugging Face has them (NEOX rotary).
  auto back = open(dir.file("q.gguf"), "local");
  for (const auto& [gguf, hf] : {std::pair{"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight"},
                                 {"blk.1.attn_k.bias", "model.layers.1.self_attn.k_proj.bias"},
                                 {"blk.0.ffn_gate.weight", "model.layers.0.mlp.gate_proj.weight"},
                                 {"output.weight", "lm_head.weight"}}) {
    const TensorInfo* t = back->find(gguf);
    ASSERT_NE(t, nullptr) << gguf;
    TensorView x = back->load(*t, DType::F32), y = source->load(*source->find(hf), DType::F32);
    ASSERT_EQ(x.nbytes(), y.nbytes()) << gguf;
    EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.nbytes()), 0) << gguf;
  }
}

TEST(ConvertFamilies, FamiliesNotWrittenYetAreRefusedByName) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  ConvertOptions o;
  o.to = CheckpointFormat::Gguf;
  for (const char* family : {"gemma", "mistral", "mixtral"}) {
    const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] {
      convert_checkpoint(*open(arch_dir(family), "hf"), dir.file("x.gguf"), o);
    });
    EXPECT_NE(msg.find(family), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace wl
