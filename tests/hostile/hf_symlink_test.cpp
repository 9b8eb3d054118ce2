// Symlinks in a Hugging Face cache that point outside the model's cache folder are refused before
// the file they point to is opened: a shard listed by an index, and config.json.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "formats/safetensors/st_test_util.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl::test {
namespace {

namespace fs = std::filesystem;

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

// A cache holding models--org--evil at kCommit, HF_HUB_CACHE pointing at it while the test runs.
class HostileHfCache : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* old = std::getenv("HF_HUB_CACHE")) saved_ = old;
    ::setenv("HF_HUB_CACHE", cache.path().c_str(), 1);
    fs::create_directories(cache.path() / "models--org--evil" / "refs");
    write_bytes((cache.path() / "models--org--evil" / "refs" / "main").string(), kCommit);
    fs::create_directories(snapshot);
    // Outside the model's folder: bytes no reader accepts, so reading them would give another error.
    write_bytes(elsewhere.file("secret"), "not for the loader");
  }
  void TearDown() override {
    if (saved_)
      ::setenv("HF_HUB_CACHE", saved_->c_str(), 1);
    else
      ::unsetenv("HF_HUB_CACHE");
  }
  std::string expect_refused(const std::string& link) {
    const std::string message = expect_error(ErrorCode::InvalidArgument, [&] {
      WeightLoaderRegistry::global().create("hf", {})->get_weights("org/evil");
    });
    EXPECT_NE(message.find(link), std::string::npos) << message;
    EXPECT_NE(message.find("outside the model's folder"), std::string::npos) << message;
    return message;
  }
  TempDir cache, elsewhere;
  const fs::path snapshot = cache.path() / "models--org--evil" / "snapshots" / kCommit;
  std::optional<std::string> saved_;
};

TEST_F(HostileHfCache, ShardOfAnIndexLinkedOutsideIsRefusedBeforeItIsRead) {
  write_bytes((snapshot / "model.safetensors.index.json").string(),
              R"({"weight_map": {"w": "model-00001-of-00001.safetensors"}})");
  fs::create_symlink(elsewhere.file("secret"), snapshot / "model-00001-of-00001.safetensors");
  expect_refused((snapshot / "model-00001-of-00001.safetensors").string());
}

TEST_F(HostileHfCache, ConfigJsonLinkedOutsideIsRefused) {
  write_safetensors((snapshot / "model.safetensors").string(), {{"w", TensorView::empty(DType::F32, {2})}});
  fs::create_symlink(elsewhere.file("secret"), snapshot / "config.json");
  expect_refused((snapshot / "config.json").string());
}

}  // namespace
}  // namespace wl::test
