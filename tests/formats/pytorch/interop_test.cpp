// Checkpoints written by torch itself (make_checkpoints.py, run once per test binary with the
// project's Python environment): every tensor must read back bit for bit, every refusal with its code.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/pytorch/pt_test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/formats/pytorch.hpp"
#include "weightloader/registry.hpp"

namespace wl::test {
namespace {

constexpr const char* kPython = WL_PYTHON;  // the project's environment (scripts/setup.sh)
constexpr int kNoTorch = 77;  // the generator's exit status when torch cannot be imported

std::string hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

class PytorchInterop : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    const std::string script = std::string(WL_SOURCE_DIR) + "/tests/formats/pytorch/make_checkpoints.py";
    const std::string log = dir_->file("generator.log");
    if (!std::filesystem::exists(kPython)) {
      skip_ = fmt::format("{} not found: cannot write checkpoints with torch", kPython);
      return;
    }
    const std::string command = fmt::format("'{}' '{}' '{}' > '{}' 2>&1", kPython, script, dir_->path().string(), log);
    const int status = std::system(command.c_str());
    if (WIFEXITED(status) && WEXITSTATUS(status) == kNoTorch) {
      skip_ = "python3-torch is not installed (" + read_bytes(log) + ")";
      return;
    }
    if (status != 0) {
      failure_ = fmt::format("{} failed (status {}):\n{}", script, status, read_bytes(log));
      return;
    }
    manifest_ = nlohmann::json::parse(read_bytes(dir_->file("manifest.json")));
  }
  static void TearDownTestSuite() { dir_.reset(); }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(failure_.empty()) << failure_;
  }

  // Checks `c` against a manifest list of {"name", "dtype", "shape", "hex"}, in order.
  static void expect_tensors(const Catalogue& c, const nlohmann::json& expected, const std::string& what) {
    ASSERT_EQ(c.tensors.size(), expected.size()) << what;
    for (size_t i = 0; i < expected.size(); ++i) {
      const nlohmann::json& e = expected[i];
      const TensorInfo& t = c.tensors[i];
      const std::string name = e["name"];
      EXPECT_EQ(t.name, name) << what;
      EXPECT_EQ(dtype_name(t.dtype), e["dtype"].get<std::string>()) << what << " " << name;
      EXPECT_EQ(t.shape, e["shape"].get<Shape>()) << what << " " << name;
      EXPECT_EQ(hex(read_tensor(c, t.name)), e["hex"].get<std::string>()) << what << " " << name;
    }
  }

  static std::unique_ptr<TempDir> dir_;
  static nlohmann::json manifest_;
  static std::string skip_, failure_;
};

std::unique_ptr<TempDir> PytorchInterop::dir_;
nlohmann::json PytorchInterop::manifest_;
std::string PytorchInterop::skip_, PytorchInterop::failure_;

TEST_F(PytorchInterop, EveryTensorReadsBackBitForBit) {
  ASSERT_GE(manifest_["reads"].size(), 8u);
  for (const nlohmann::json& r : manifest_["reads"]) {
    const std::string file = r["file"], key = r["key"];
    const std::string what = file + (key.empty() ? "" : " key=" + key);
    const Catalogue c = read_pytorch_catalogue(dir_->file(file), key);
    expect_tensors(c, r["tensors"], what);
    using Metadata = std::map<std::string, std::string>;
    EXPECT_EQ(c.metadata, r["metadata"].get<Metadata>()) << what;
  }
}

TEST_F(PytorchInterop, RefusalsCarryTheirCodes) {
  ASSERT_GE(manifest_["errors"].size(), 8u);
  for (const nlohmann::json& e : manifest_["errors"]) {
    const std::string file = e["file"], key = e["key"], code = e["code"];
    try {
      read_pytorch_catalogue(dir_->file(file), key);
      ADD_FAILURE() << file << ": expected " << code << ", but it was read";
    } catch (const Error& err) {
      EXPECT_EQ(error_code_name(err.code()), code) << file << ": " << err.what();
      for (const std::string part : e["contains"])
        EXPECT_NE(err.message().find(part), std::string::npos) << file << ": \"" << part << "\" not in " << err.what();
    }
  }
  EXPECT_FALSE(std::filesystem::exists(manifest_["marker"].get<std::string>())) << "a pickle was executed";
}

TEST_F(PytorchInterop, ShardedCheckpointThroughItsIndex) {
  const nlohmann::json& sharded = manifest_["sharded"];
  const std::string index = dir_->file(sharded["index"]);
  expect_tensors(read_sharded_catalogue(index, pytorch_format()), sharded["tensors"], "read_sharded_catalogue");

  // The local loader finds the index next to the *.bin files.
  const auto loader = WeightLoaderRegistry::with_builtins()->create("local", {{"file_pattern", std::string("*.bin")}});
  const std::unique_ptr<WeightSource> source = loader->get_weights(std::filesystem::path(index).parent_path().string());
  EXPECT_EQ(source->format(), "pytorch");
  const Catalogue& c = source->catalogue();
  expect_tensors(c, sharded["tensors"], "local loader");
}

TEST_F(PytorchInterop, DetectedAsPytorch) {
  for (const std::string file : {"all_dtypes.pt", "zip64.pt", "legacy.pt", "big_endian.pt"}) {
    const FileFormat* format = detect_file_format(dir_->file(file));
    ASSERT_NE(format, nullptr) << file;
    EXPECT_EQ(format->name, "pytorch") << file;
  }
}

}  // namespace
}  // namespace wl::test
