// Conversions between formats give back the same tensors (exactly, for lossless targets).
#include "weightloader/convert_checkpoint.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "test_util.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/synth.hpp"

namespace wl {
namespace {

std::unique_ptr<WeightSource> open(const std::string& path, const std::string& loader = "local", Kwargs kw = {}) {
  return WeightLoaderRegistry::with_builtins()->create(loader, kw)->get_weights(path);
}

void expect_same_tensors(const WeightSource& a, const WeightSource& b) {
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (const TensorInfo& t : a.tensors()) {
    const TensorInfo* u = b.find(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    ASSERT_EQ(t.shape, u->shape) << t.name;
    TensorView x = a.load(t, DType::F32), y = b.load(*u, DType::F32);
    ASSERT_EQ(std::memcmp(x.raw(), y.raw(), x.nbytes()), 0) << t.name;
  }
}

class ConvertCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    SynthOptions o;
    o.shape = LlamaShape::preset("tiny");
    write_synthetic_llama(dir.file("src"), o);
    source = open(dir.file("src"), "hf");
  }
  test::TempDir dir;
  std::unique_ptr<WeightSource> source;
};

TEST_F(ConvertCheckpoint, AHostMemoryBudgetBelowThePeakIsRefusedBeforeAnythingIsWritten) {
  ConvertOptions streamed, whole;
  whole.to = CheckpointFormat::CustomBinary;
  uint64_t largest = 0, model = 0;
  for (const TensorInfo& t : source->tensors()) {
    largest = std::max(largest, 2 * t.nbytes);  // as read and as written, the same dtype
    model += t.numel() * 4;
  }
  EXPECT_EQ(convert_peak_bytes(*source, streamed), largest);
  EXPECT_GT(convert_peak_bytes(*source, whole), model);  // llama2.c and the custom format hold the model
  streamed.max_host_memory = largest - 1;
  const std::string message =
      test::expect_error(ErrorCode::OverBudget, [&] { convert_checkpoint(*source, dir.file("out.safetensors"), streamed); });
  EXPECT_NE(message.find("the largest tensor"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.safetensors")));
  whole.max_host_memory = largest;
  test::expect_error(ErrorCode::OverBudget, [&] { convert_checkpoint(*source, dir.file("custom"), whole); });
  EXPECT_FALSE(std::filesystem::exists(dir.file("custom")));
  streamed.max_host_memory = largest;
  convert_checkpoint(*source, dir.file("out.safetensors"), streamed);
  expect_same_tensors(*source, *open(dir.file("out.safetensors")));
}

TEST_F(ConvertCheckpoint, ToGgufF32AndBackIsExact) {
  ConvertOptions o;
  o.to = CheckpointFormat::Gguf;
  o.gguf_type = "f32";
  convert_checkpoint(*source, dir.file("m.gguf"), o);
  auto back = open(dir.file("m.gguf"));
  EXPECT_EQ(back->format(), "gguf");
  expect_same_tensors(*source, *back);
  // What llama.cpp's loader reads beside the tensors, as its own converter writes it.
  const GgufFile f = read_gguf(dir.file("m.gguf"));
  EXPECT_EQ(*f.get<std::string>("tokenizer.ggml.model"), "none");  // no tokenizer beside the source
  EXPECT_EQ(*f.get<std::string>("general.name"), "src");
  EXPECT_EQ(*f.get<uint32_t>("general.alignment"), 32u);
  EXPECT_EQ(*f.get<uint32_t>("general.file_type"), 0u);  // LLAMA_FTYPE_ALL_F32
  const uint32_t heads = *f.get<uint32_t>("llama.attention.head_count");
  EXPECT_EQ(*f.get<uint32_t>("llama.rope.dimension_count"), *f.get<uint32_t>("llama.embedding_length") / heads);
}

TEST_F(ConvertCheckpoint, ToLlama2cAndBackIsExact) {
  for (int version : {0, 1}) {
    ConvertOptions o;
    o.to = CheckpointFormat::Llama2c;
    o.llama2c_version = version;
    const std::string out = dir.file("m" + std::to_string(version) + ".bin");
    convert_checkpoint(*source, out, o);
    auto back = open(out);
    EXPECT_EQ(back->format(), "llama2c");
    expect_same_tensors(*source, *back);
  }
}

TEST_F(ConvertCheckpoint, ToCustomBinaryAndSafetensorsAndBack) {
  ConvertOptions cb;
  cb.to = CheckpointFormat::CustomBinary;
  convert_checkpoint(*source, dir.file("cb"), cb);
  expect_same_tensors(*source, *open(dir.file("cb"), "custom_binary"));
  ConvertOptions st;
  convert_checkpoint(*source, dir.file("st"), st);
  expect_same_tensors(*source, *open(dir.file("st"), "hf"));
}

// Every format we write, read back and written in every other, without a flag: each output keeps
// the configuration its successor needs (a single .safetensors file in its __metadata__).
TEST_F(ConvertCheckpoint, EveryPairOfWrittenFormatsRoundTripsWithoutFlags) {
  struct Target {
    const char* out;
    CheckpointFormat to;
  };
  const Target targets[] = {{"one.safetensors", CheckpointFormat::Safetensors},
                            {"dir", CheckpointFormat::Safetensors},
                            {"m.gguf", CheckpointFormat::Gguf},
                            {"m.bin", CheckpointFormat::Llama2c},
                            {"cb", CheckpointFormat::CustomBinary}};
  const auto convert = [&](const WeightSource& from, const Target& target, const std::string& out) {
    ConvertOptions o;
    o.to = target.to;
    o.gguf_type = "f32";
    convert_checkpoint(from, out, o);
    const LoaderChoice choice = detect_loader(out);
    return open(out, choice.name, choice.kwargs);
  };
  for (const Target& a : targets) {
    const std::unique_ptr<WeightSource> first = convert(*source, a, dir.file(a.out));
    for (const Target& b : targets) {
      if (&a == &b) continue;
      SCOPED_TRACE(std::string(a.out) + " -> " + b.out);
      std::filesystem::create_directories(dir.file(std::string("from-") + a.out));
      const std::unique_ptr<WeightSource> second = convert(*first, b, dir.file(std::string("from-") + a.out + "/" + b.out));
      expect_same_tensors(*source, *second);
      EXPECT_EQ(llama_heads_from_metadata(*second).heads, llama_heads_from_metadata(*source).heads);
    }
  }
}

TEST_F(ConvertCheckpoint, UnknownHeadsIsAClearError) {
  ConvertOptions cb;
  cb.to = CheckpointFormat::CustomBinary;
  convert_checkpoint(*source, dir.file("cb"), cb);
  std::filesystem::remove(dir.file("cb") + "/config.json");  // the custom format has no config of its own
  ConvertOptions o;
  o.to = CheckpointFormat::Gguf;
  const std::string msg =
      test::expect_error(ErrorCode::InvalidArgument, [&] { convert_checkpoint(*open(dir.file("cb"), "custom_binary"), dir.file("x.gguf"), o); });
  EXPECT_NE(msg.find("--heads"), std::string::npos);
  test::expect_error(ErrorCode::InvalidArgument, [] { parse_checkpoint_format("onnx"); });
}

TEST(ConvertReference, Stories260kThroughEveryFormatKeepsItsTensors) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  auto original = open((test::testdata_dir() / "llama2c-stories260K" / "stories260K.bin").string());
  ConvertOptions st;
  convert_checkpoint(*original, dir.file("st"), st);
  auto as_st = open(dir.file("st"));
  expect_same_tensors(*original, *as_st);
  ConvertOptions gg;
  gg.to = CheckpointFormat::Gguf;
  gg.gguf_type = "f32";
  convert_checkpoint(*original, dir.file("m.gguf"), gg);  // heads from the llama2.c header
  expect_same_tensors(*original, *open(dir.file("m.gguf")));
}

}  // namespace
}  // namespace wl
