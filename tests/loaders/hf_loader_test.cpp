// The `hf` loader: model directories and the local Hugging Face cache (built here as huggingface_hub
// lays it out: snapshot files are relative links into blobs/), by model id and by snapshot path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "test_util.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/hf_cache.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

const std::string kCommit = "3579d71fd57e04f5a364d824d3a2ec3e913dbb67";
const std::string kOldCommit = "0123456789abcdef0123456789abcdef01234567";

TensorView filled(float v, Shape shape) {
  TensorView t = TensorView::empty(DType::F32, shape);
  for (uint64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}

// A cache with models--org--tiny: refs/main → kCommit, refs/v1 (a tag) → kOldCommit, snapshot
// files are relative symlinks into blobs/, as huggingface_hub lays them out.
class HfCache : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("HF_HUB_CACHE");
    saved_ = old ? old : "";
    had_ = old != nullptr;
    ::setenv("HF_HUB_CACHE", cache.path().c_str(), 1);
    repo = cache.path() / "models--org--tiny";
    fs::create_directories(repo / "refs");
    fs::create_directories(repo / "blobs");
    test::write_bytes((repo / "refs" / "main").string(), kCommit);
    test::write_bytes((repo / "refs" / "v1").string(), kOldCommit + "\n");
    add_snapshot(kCommit, 2.0f);
    add_snapshot(kOldCommit, 1.0f);
  }
  void TearDown() override {
    if (had_)
      ::setenv("HF_HUB_CACHE", saved_.c_str(), 1);
    else
      ::unsetenv("HF_HUB_CACHE");
  }
  void add_snapshot(const std::string& commit, float value) {
    const fs::path snap = repo / "snapshots" / commit;
    fs::create_directories(snap);
    const std::string blob = "blob-" + commit.substr(0, 8);
    write_safetensors((repo / "blobs" / blob).string(), {{"w", filled(value, {2})}});
    fs::create_symlink(fs::path("../../blobs") / blob, snap / "model.safetensors");
    test::write_bytes((repo / "blobs" / ("cfg-" + blob)).string(), R"({"architectures": ["LlamaForCausalLM"]})");
    fs::create_symlink(fs::path("../../blobs") / ("cfg-" + blob), snap / "config.json");
  }
  float load_w(const std::string& id, Kwargs kw = {}) {
    auto loader = WeightLoaderRegistry::with_builtins()->create("hf", kw);
    auto source = loader->get_weights(id);
    return source->load(source->at("w")).data<float>()[0];
  }
  test::TempDir cache;
  fs::path repo;
  std::string saved_;
  bool had_ = false;
};

TEST_F(HfCache, ResolvesBranchTagAndCommit) {
  EXPECT_EQ(load_w("org/tiny"), 2.0f);
  EXPECT_EQ(load_w("org/tiny", {{"revision", std::string("v1")}}), 1.0f);
  EXPECT_EQ(load_w("org/tiny", {{"revision", kOldCommit}}), 1.0f);
  auto source = WeightLoaderRegistry::with_builtins()->create("hf")->get_weights("org/tiny");
  EXPECT_NE(source->metadata().at("config.json").find("LlamaForCausalLM"), std::string::npos);
}

TEST_F(HfCache, MissingModelSaysWhereItLooked) {
  const std::string msg = test::expect_error(ErrorCode::FileNotFound, [&] { load_w("org/absent"); });
  EXPECT_NE(msg.find((cache.path() / "models--org--absent" / "refs" / "main").string()), std::string::npos) << msg;
  test::expect_error(ErrorCode::FileNotFound, [&] { load_w("org/tiny", {{"revision", std::string("nobranch")}}); });
}

// The path huggingface_hub.snapshot_download() returns (and `weightloader download` prints): its
// files are links into blobs/, which lie outside the snapshot folder, and are read through them.
TEST_F(HfCache, SnapshotPathLoadsThroughItsLinks) {
  for (const auto& [commit, value] : {std::pair{kCommit, 2.0f}, {kOldCommit, 1.0f}}) {
    const std::string snap = (repo / "snapshots" / commit).string();
    EXPECT_EQ(load_w(snap), value);
    EXPECT_EQ(load_w(snap + "/"), value);
    EXPECT_EQ(load_w(snap + "/model.safetensors"), value);
    auto local = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(snap);
    EXPECT_EQ(local->load(local->at("w")).data<float>()[0], value);
    auto source = WeightLoaderRegistry::with_builtins()->create("hf")->get_weights(snap);
    EXPECT_NE(source->metadata().at("config.json").find("LlamaForCausalLM"), std::string::npos);
  }
}

TEST_F(HfCache, ShardedSnapshotPathLoadsThroughItsLinks) {
  const fs::path snap = repo / "snapshots" / kCommit;
  fs::remove(snap / "model.safetensors");
  for (const auto& [name, value] : {std::pair{"a", 3.0f}, {"b", 4.0f}}) {
    const std::string blob = std::string("shard-") + name;
    write_safetensors((repo / "blobs" / blob).string(), {{name, filled(value, {2})}});
    fs::create_symlink(fs::path("../../blobs") / blob,
                       snap / fmt::format("model-0000{}-of-00002.safetensors", name[0] == 'a' ? 1 : 2));
  }
  test::write_bytes((repo / "blobs" / "index").string(),
                    R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
  fs::create_symlink("../../blobs/index", snap / "model.safetensors.index.json");
  auto source = WeightLoaderRegistry::with_builtins()->create("hf")->get_weights(snap.string());
  EXPECT_EQ(source->load(source->at("a")).data<float>()[0], 3.0f);
  EXPECT_EQ(source->load(source->at("b")).data<float>()[0], 4.0f);
}

// Links are the user's: a snapshot file linked into a store elsewhere (a --local-dir tree, a shared
// volume) is followed, by model id and by path.
TEST_F(HfCache, LinkIntoASharedStoreIsFollowed) {
  test::TempDir store;
  write_safetensors(store.file("shared.safetensors"), {{"w", filled(9.0f, {2})}});
  const fs::path snap = repo / "snapshots" / kCommit;
  fs::remove(snap / "model.safetensors");
  fs::create_symlink(store.file("shared.safetensors"), snap / "model.safetensors");
  EXPECT_EQ(load_w("org/tiny"), 9.0f);
  EXPECT_EQ(load_w(snap.string()), 9.0f);
}

// Names are the checkpoint's: an index naming a file outside its folder is refused, even when the
// name reaches an existing blob of the same cache.
TEST_F(HfCache, IndexNameOutsideTheSnapshotIsRefused) {
  const fs::path snap = repo / "snapshots" / kCommit;
  const std::string blob = "blob-" + kCommit.substr(0, 8);
  test::write_bytes((snap / "model.safetensors.index.json").string(),
                    R"({"weight_map": {"w": "../../blobs/)" + blob + R"("}})");
  const std::string msg = test::expect_error(ErrorCode::IndexInvalid, [&] { load_w("org/tiny"); });
  EXPECT_NE(msg.find("\"..\""), std::string::npos) << msg;
  test::expect_error(ErrorCode::IndexInvalid, [&] { load_w(snap.string()); });
}

TEST_F(HfCache, CacheLocationFollowsTheEnvironment) {
  EXPECT_EQ(hf_hub_cache_dir(), cache.path().string());
  ::unsetenv("HF_HUB_CACHE");
  const char* home = std::getenv("HF_HOME");
  const std::string saved_home = home ? home : "";
  ::setenv("HF_HOME", "/x/hf", 1);
  EXPECT_EQ(hf_hub_cache_dir(), "/x/hf/hub");
  if (home)
    ::setenv("HF_HOME", saved_home.c_str(), 1);
  else
    ::unsetenv("HF_HOME");
}

TEST(HfDirectory, PrefersSafetensorsAndIgnoresTrainingLeftovers) {
  test::TempDir dir;
  write_safetensors(dir.file("model.safetensors"), {{"w", filled(3.0f, {2})}});
  test::write_bytes(dir.file("optimizer.pt"), "not weights");
  test::write_bytes(dir.file("training_args.bin"), "not weights");
  auto source = WeightLoaderRegistry::with_builtins()->create("hf")->get_weights(dir.path().string());
  EXPECT_EQ(source->format(), "safetensors");
  ASSERT_EQ(source->tensors().size(), 1u);
  EXPECT_EQ(source->file_of(source->tensors()[0]), dir.file("model.safetensors"));
}

TEST(HfDirectory, IndexRestrictsTheFilesRead) {
  test::TempDir dir;
  write_safetensors(dir.file("model-00001-of-00002.safetensors"), {{"a", filled(1.0f, {2})}});
  write_safetensors(dir.file("model-00002-of-00002.safetensors"), {{"b", filled(2.0f, {2})}});
  write_safetensors(dir.file("model.safetensors"), {{"a", filled(5.0f, {2})}, {"b", filled(5.0f, {2})}});  // consolidated
  test::write_bytes(dir.file("model.safetensors.index.json"),
                    R"({"metadata": {"total_size": 16}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                        "b": "model-00002-of-00002.safetensors"}})");
  auto source = WeightLoaderRegistry::with_builtins()->create("hf")->get_weights(dir.path().string());
  ASSERT_EQ(source->tensors().size(), 2u);
  EXPECT_EQ(source->load(source->at("b")).data<float>()[1], 2.0f);
}

TEST(HfDirectory, NoWeightsSaysWhatItLookedFor) {
  test::TempDir dir;
  test::write_bytes(dir.file("config.json"), "{}");
  const std::string msg = test::expect_error(
      ErrorCode::NoMatchingFiles, [&] { WeightLoaderRegistry::with_builtins()->create("hf")->get_weights(dir.path().string()); });
  EXPECT_NE(msg.find("pytorch_model.bin.index.json"), std::string::npos);
}

TEST(HfDirectory, ReferenceTinyLlamaLoadsIntoBf16AndF32) {
  WL_REQUIRE_TESTDATA();
  const std::string dir = (test::testdata_dir() / "hf-tiny-random-llama-2").string();
  auto loader = WeightLoaderRegistry::with_builtins()->create("hf", {{"dtype", std::string("f32")}});
  auto source = loader->get_weights(dir);
  EXPECT_EQ(source->tensors().size(), 21u);  // 2 layers x 9 + embed + norm + lm_head
  const TensorInfo& q = source->at("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(q.dtype, DType::BF16);
  EXPECT_EQ(q.shape, (Shape{16, 16}));
  Model model = loader->mirror_model(*source);
  LoadReport report = loader->load_weights(model, *source);
  EXPECT_EQ(report.converted.size(), 21u);
  // BF16 -> F32 is exact: every loaded value has zero low mantissa bits.
  const TensorView& w = model.find("lm_head.weight")->data;
  for (uint64_t i = 0; i < w.numel(); ++i) ASSERT_EQ(w.data<uint32_t>()[i] & 0xffffu, 0u);
  EXPECT_NE(source->metadata().at("config.json").find("LlamaForCausalLM"), std::string::npos);
}

}  // namespace
}  // namespace wl
