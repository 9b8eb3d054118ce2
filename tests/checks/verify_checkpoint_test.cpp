// verify_checkpoint on clean and damaged checkpoints: NaN, Inf, a zeroed tensor, a cache blob
// whose content is not its name, an index whose total_size is wrong.
#include "weightloader/content_digest.hpp"
#include "weightloader/verify_checkpoint.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/file.hpp"
#include "test_util.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<WeightSource> open(const std::string& path) {
  return WeightLoaderRegistry::with_builtins()->create("local")->get_weights(path);
}

TensorView ramp(Shape shape, DType dtype = DType::F32) {
  TensorView t = TensorView::empty(DType::F32, shape);
  for (uint64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 1.0f + float(i % 13);
  return dtype == DType::F32 ? t : t.to(dtype);
}

std::vector<std::pair<std::string, TensorView>> clean() {
  return {{"w", ramp({40, 30})}, {"h", ramp({100}, DType::F16)}, {"d", ramp({4, 4}, DType::F64)},
          {"steps", ramp({6}, DType::I64)}};
}

VerifyReport verify(const std::string& path) {
  VerifyOptions o;
  o.window_bytes = 512;  // many windows
  return verify_checkpoint(*open(path), o);
}

TEST(Sha256, KnownVector) {
  EXPECT_EQ(content_digest(*memory_source("abc", MemoryRegion::of_string("abc")), DigestKind::Sha256), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Verify, CleanCheckpointHasNoFindings) {
  test::TempDir dir;
  write_safetensors(dir.file("m.safetensors"), clean());
  const VerifyReport r = verify(dir.file("m.safetensors"));
  EXPECT_TRUE(r.ok()) << r.to_string();
  ASSERT_EQ(r.tensors.size(), 4u);
  EXPECT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].size, fs::file_size(dir.file("m.safetensors")));
  EXPECT_FALSE(r.files[0].sha256.has_value());  // not a cache blob: nothing claims a checksum
  EXPECT_GT(r.bytes_read, 0u);
  EXPECT_TRUE(nlohmann::json::parse(r.to_json())["ok"].get<bool>());
}

TEST(Verify, NanInfAndZeroedTensorsAreFindings) {
  test::TempDir dir;
  auto t = clean();
  t[0].second.data<float>()[1199] = std::nanf("");        // the very last value
  t[0].second.data<float>()[3] = -INFINITY;
  t[2].second.data<double>()[0] = std::nan("");            // in the F64 pass
  std::memset(t[1].second.raw(), 0, t[1].second.nbytes());  // all zero
  write_safetensors(dir.file("m.safetensors"), t);
  const VerifyReport r = verify(dir.file("m.safetensors"));
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.tensors[0].nan, 1u);
  EXPECT_EQ(r.tensors[0].inf, 1u);
  EXPECT_TRUE(r.tensors[1].all_zero);
  EXPECT_EQ(r.tensors[2].nan, 1u);
  EXPECT_FALSE(r.tensors[3].all_zero);
  EXPECT_EQ(r.findings.size(), 4u) << r.to_string();
  EXPECT_NE(r.to_string().find("tensor 'h': all 100 values are zero"), std::string::npos) << r.to_string();
}

// A Hugging Face cache: snapshots/<rev>/model.safetensors links to blobs/<sha256 of the content>.
TEST(Verify, CacheBlobIsCheckedAgainstItsName) {
  test::TempDir dir;
  fs::create_directories(dir.file("blobs"));
  fs::create_directories(dir.file("snapshots/rev"));
  write_safetensors(dir.file("blobs/tmp"), clean());
  const std::string sha = content_digest(File(dir.file("blobs/tmp")), DigestKind::Sha256);
  fs::rename(dir.file("blobs/tmp"), dir.file("blobs/" + sha));
  fs::create_symlink("../../blobs/" + sha, dir.file("snapshots/rev/model.safetensors"));
  VerifyReport r = verify(dir.file("snapshots/rev/model.safetensors"));
  EXPECT_TRUE(r.ok()) << r.to_string();
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].expected_sha256, sha);
  EXPECT_EQ(r.files[0].sha256, sha);

  // Same size, one byte different inside a tensor: still loads, the checksum tells.
  std::string bytes = test::read_bytes(dir.file("blobs/" + sha));
  bytes[bytes.size() - 1] ^= 1;
  fs::remove(dir.file("blobs/" + sha));
  test::write_bytes(dir.file("blobs/" + sha), bytes);
  r = verify(dir.file("snapshots/rev/model.safetensors"));
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.findings.size(), 1u) << r.to_string();
  EXPECT_NE(r.findings[0].find("sha256"), std::string::npos);
}

TEST(Verify, IndexTotalSizeIsChecked) {
  test::TempDir dir;
  write_safetensors(dir.file("m.safetensors"), clean());
  auto source = open(dir.file("m.safetensors"));
  ConvertOptions o;
  o.shard_bytes = 1000;
  convert_checkpoint(*source, dir.file("sharded"), o);
  EXPECT_TRUE(verify(dir.file("sharded")).ok());
  const std::string index_path = dir.file("sharded/model.safetensors.index.json");
  auto index = nlohmann::json::parse(test::read_bytes(index_path));
  index["metadata"]["total_size"] = index["metadata"]["total_size"].get<uint64_t>() + 8;
  test::write_bytes(index_path, index.dump(2));
  const VerifyReport r = verify(dir.file("sharded"));
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.findings.size(), 1u) << r.to_string();
  EXPECT_NE(r.findings[0].find("total_size"), std::string::npos);
  EXPECT_EQ(r.index_total_size, source->total_bytes() + 8);
}

TEST(Verify, ReferenceFilesAreSound) {
  WL_REQUIRE_TESTDATA();
  for (const char* path : {"llama2c-stories260K/stories260K.bin", "hf-tiny-random-llama-2"}) {
    const VerifyReport r = verify((test::testdata_dir() / path).string());
    EXPECT_TRUE(r.ok()) << path << "\n" << r.to_string();
  }
}

}  // namespace
}  // namespace wl
