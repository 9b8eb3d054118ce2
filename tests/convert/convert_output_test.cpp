// The output path of a conversion: its extension chooses the format, shards follow Hugging Face's
// rules, and nothing is written over the input or left half-written under the final name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "convert/safetensors_shards.hpp"
#include "test_util.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/synth.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<WeightSource> open(const std::string& path) {
  return WeightLoaderRegistry::with_builtins()->create("local")->get_weights(path);
}

TEST(OutputFormat, FollowsTheExtension) {
  test::TempDir dir;
  EXPECT_EQ(output_format_for(dir.file("m.safetensors")), CheckpointFormat::Safetensors);
  EXPECT_EQ(output_format_for(dir.file("m.gguf")), CheckpointFormat::Gguf);
  EXPECT_EQ(output_format_for(dir.file("m.bin")), CheckpointFormat::Llama2c);
  EXPECT_EQ(output_format_for(dir.file("out")), CheckpointFormat::Safetensors);
  EXPECT_EQ(output_format_for(dir.file("out.d") + "/"), CheckpointFormat::Safetensors);
  EXPECT_EQ(output_format_for(dir.path().string()), CheckpointFormat::Safetensors);  // an existing directory
  EXPECT_EQ(output_format_for(dir.file("out"), CheckpointFormat::CustomBinary), CheckpointFormat::CustomBinary);
  EXPECT_EQ(output_format_for(dir.file("m.gguf"), CheckpointFormat::Gguf), CheckpointFormat::Gguf);
  EXPECT_EQ(output_format_for(dir.file("m.weights"), CheckpointFormat::Gguf), CheckpointFormat::Gguf);
  EXPECT_EQ(output_format_for(dir.file("llama-3.1-8b")), CheckpointFormat::Safetensors);  // a directory's name
  EXPECT_EQ(output_format_for(dir.file("m.pt"), CheckpointFormat::Llama2c), CheckpointFormat::Llama2c);
}

TEST(OutputFormat, RefusesWhatContradictsTheExtension) {
  test::TempDir dir;
  std::string msg = test::expect_error(ErrorCode::InvalidArgument,
                                       [&] { output_format_for(dir.file("m.gguf"), CheckpointFormat::Safetensors); });
  EXPECT_NE(msg.find("safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gguf"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::InvalidArgument,
                           [&] { output_format_for(dir.path().string(), CheckpointFormat::Llama2c); });
  EXPECT_NE(msg.find("directory"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::InvalidArgument, [&] { output_format_for(dir.file("m.pt")); });
  EXPECT_NE(msg.find("--to"), std::string::npos) << msg;
}

TEST(ByteSize, DecimalAndBinaryUnits) {
  EXPECT_EQ(parse_byte_size("5GB"), 5'000'000'000ull);
  EXPECT_EQ(parse_byte_size("500MB"), 500'000'000ull);
  EXPECT_EQ(parse_byte_size("2GiB"), 2ull << 30);
  EXPECT_EQ(parse_byte_size("3mib"), 3ull << 20);
  EXPECT_EQ(parse_byte_size("1024"), 1024u);
  for (const char* bad : {"", "GB", "0", "5XB", "-1", "5 GB", "99999999999999999999"})
    test::expect_error(ErrorCode::InvalidArgument, [&] { parse_byte_size(bad); });
}

TEST(ShardPlan, FollowsHuggingFacesRule) {
  // huggingface_hub's own example: [6, 6, 2, 6, 2, 2] with a 10-byte limit -> [6], [6+2], [6+2+2].
  std::vector<SafetensorsEntry> e;
  for (uint64_t n : {6, 6, 2, 6, 2, 2}) e.push_back({"t" + std::to_string(e.size()), DType::U8, {n}});
  ShardPlan p = plan_safetensors_shards(e, 10);
  EXPECT_EQ(p.shards, (std::vector<std::vector<size_t>>{{0}, {1, 2}, {3, 4, 5}}));
  EXPECT_EQ(p.total_size, 24u);
  // A tensor above the limit gets its own shard, before the one being filled.
  e = {{"a", DType::U8, {4}}, {"big", DType::U8, {30}}, {"b", DType::U8, {4}}};
  p = plan_safetensors_shards(e, 10);
  EXPECT_EQ(p.shards, (std::vector<std::vector<size_t>>{{1}, {0, 2}}));
  EXPECT_EQ(safetensors_shard_name(1, 2), "model-00002-of-00002.safetensors");
  EXPECT_EQ(safetensors_shard_name(0, 1), "model.safetensors");
  const auto index = nlohmann::json::parse(safetensors_index_json(e, p));
  EXPECT_EQ(index["metadata"]["total_size"], 38);
  EXPECT_EQ(index["weight_map"]["big"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["a"], "model-00002-of-00002.safetensors");
}

class ConvertOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    SynthOptions o;
    o.shape = LlamaShape::preset("tiny");
    write_synthetic_llama(dir.file("src"), o);
    source = open(dir.file("src"));
  }
  std::vector<std::string> entries_of(const std::string& d) const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  test::TempDir dir;
  std::unique_ptr<WeightSource> source;
};

TEST_F(ConvertOutput, OneSafetensorsFile) {
  convert_checkpoint(*source, dir.file("one.safetensors"), {});
  ASSERT_TRUE(fs::is_regular_file(dir.file("one.safetensors")));
  auto back = open(dir.file("one.safetensors"));
  EXPECT_EQ(back->tensors().size(), source->tensors().size());
  EXPECT_EQ(entries_of(dir.path().string()), (std::vector<std::string>{"one.safetensors", "src"}));  // no temporary left
}

TEST_F(ConvertOutput, ShardedDirectoryReadsBack) {
  ConvertOptions o;
  o.shard_bytes = 100'000;
  convert_checkpoint(*source, dir.file("sharded"), o);
  const auto names = entries_of(dir.file("sharded"));
  EXPECT_EQ(names.front(), "config.json");
  EXPECT_EQ(names.back(), "model.safetensors.index.json");
  EXPECT_EQ(names[1], "model-00001-of-00006.safetensors");
  auto back = open(dir.file("sharded"));
  ASSERT_EQ(back->tensors().size(), source->tensors().size());
  for (const TensorInfo& t : source->tensors()) {
    TensorView a = source->load(t), b = back->load(back->at(t.name));
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << t.name;
  }
  std::ifstream f(dir.file("sharded/model.safetensors.index.json"));
  const auto index = nlohmann::json::parse(f);
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>(), source->total_bytes());
  EXPECT_EQ(index["weight_map"].size(), source->tensors().size());
  std::map<std::string, int> tensors_per_file;
  for (const auto& [name, file] : index["weight_map"].items()) ++tensors_per_file[file.get<std::string>()];
  for (const auto& [file, n] : tensors_per_file)  // only a tensor above the limit makes a larger file
    if (n > 1) {
      EXPECT_LE(fs::file_size(dir.file("sharded/" + file)), 100'000u + 4096) << file;
    }
}

TEST_F(ConvertOutput, IntoAnExistingDirectory) {
  fs::create_directories(dir.file("existing"));
  test::write_bytes(dir.file("existing/README"), "keep me");
  convert_checkpoint(*source, dir.file("existing"), {});
  EXPECT_EQ(entries_of(dir.file("existing")), (std::vector<std::string>{"README", "config.json", "model.safetensors"}));
  EXPECT_EQ(open(dir.file("existing"))->tensors().size(), source->tensors().size());
}

TEST_F(ConvertOutput, NeverOverTheInput) {
  const std::string input = dir.file("src/model.safetensors");
  const auto before = fs::file_size(input);
  auto single = open(input);
  test::expect_error(ErrorCode::InvalidArgument, [&] { convert_checkpoint(*single, input, {}); });
  test::expect_error(ErrorCode::InvalidArgument, [&] { convert_checkpoint(*source, dir.file("src"), {}); });
  fs::create_hard_link(input, dir.file("same-inode.safetensors"));
  const std::string msg = test::expect_error(
      ErrorCode::InvalidArgument, [&] { convert_checkpoint(*single, dir.file("same-inode.safetensors"), {}); });
  EXPECT_NE(msg.find("is the input"), std::string::npos) << msg;
  fs::create_symlink(dir.file("src"), dir.file("link"));
  test::expect_error(ErrorCode::InvalidArgument, [&] { convert_checkpoint(*source, dir.file("link") + "/", {}); });
  EXPECT_EQ(fs::file_size(input), before);
  EXPECT_EQ(open(input)->tensors().size(), source->tensors().size());

  ConvertOptions gguf;
  gguf.to = CheckpointFormat::Gguf;
  gguf.heads = {4, 0, 0};
  convert_checkpoint(*source, dir.file("m.gguf"), gguf);
  const auto gguf_size = fs::file_size(dir.file("m.gguf"));
  test::expect_error(ErrorCode::InvalidArgument, [&] { convert_checkpoint(*open(dir.file("m.gguf")), dir.file("m.gguf"), gguf); });
  EXPECT_EQ(fs::file_size(dir.file("m.gguf")), gguf_size);
}

TEST_F(ConvertOutput, AFailedConversionLeavesNothing) {
  ConvertOptions o;
  o.to = CheckpointFormat::Safetensors;
  const std::string input = dir.file("src/model.safetensors");
  fs::resize_file(input, fs::file_size(input) / 2);  // the reads of the second half fail
  EXPECT_THROW(convert_checkpoint(*source, dir.file("out"), o), Error);
  EXPECT_EQ(entries_of(dir.path().string()), (std::vector<std::string>{"src"}));
  test::expect_error(ErrorCode::InvalidArgument, [&] {
    ConvertOptions gg;
    gg.to = CheckpointFormat::Gguf;
    gg.shard_bytes = 10;
    convert_checkpoint(*source, dir.file("x.gguf"), gg);
  });
}

}  // namespace
}  // namespace wl

namespace wl {
namespace {

TEST(ConvertProgress, ReportsEveryByteAndCancels) {
  test::TempDir dir;
  SynthOptions so;
  so.shape = LlamaShape::preset("tiny");
  write_synthetic_llama(dir.file("src"), so);
  auto source = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir.file("src"));
  uint64_t last = 0, total = 0;
  ConvertOptions o;
  o.progress = [&](uint64_t done, uint64_t all) {
    EXPECT_GE(done, last);
    last = done;
    total = all;
    return true;
  };
  convert_checkpoint(*source, dir.file("out"), o);
  EXPECT_EQ(last, source->total_bytes());
  EXPECT_EQ(total, source->total_bytes());
  o.progress = [](uint64_t done, uint64_t) { return done == 0; };  // cancel after the first tensor
  test::expect_error(ErrorCode::Cancelled, [&] { convert_checkpoint(*source, dir.file("cancelled"), o); });
  EXPECT_FALSE(std::filesystem::exists(dir.file("cancelled")));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 2u);  // src and out: the temporary directory is gone
}

}  // namespace
}  // namespace wl
