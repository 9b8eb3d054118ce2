// Which files of a hub repository a load needs (choose_hf_files), the model id → cache folder
// rule, and the seam that routes downloads to the given downloader.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "test_util.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/hf_cache.hpp"

namespace wl {
namespace {

using Files = std::vector<std::string>;

TEST(HfFileChoice, SafetensorsWinOverPytorchAndLeftoversAndSubfoldersAreSkipped) {
  const HfFileChoice c = choose_hf_files({"README.md", "config.json", "model.safetensors", "pytorch_model.bin",
                                          "optimizer.pt", "tokenizer.json", "tokenizer_config.json", "onnx/model.safetensors",
                                          "generation_config.json", "special.txt"});
  EXPECT_EQ(c.files, (Files{"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                            "model.safetensors"}));
  EXPECT_EQ(c.index, "");
}

TEST(HfFileChoice, AnIndexIsChosenAloneSoThatOnlyItsShardsFollow) {
  const HfFileChoice c = choose_hf_files({"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                                          "model-00002-of-00002.safetensors", "consolidated.safetensors"});
  EXPECT_EQ(c.files, (Files{"config.json", "model.safetensors.index.json"}));
  EXPECT_EQ(c.index, "model.safetensors.index.json");
}

TEST(HfFileChoice, PytorchWeightsWhenThereAreNoSafetensors) {
  EXPECT_EQ(choose_hf_files({"pytorch_model.bin", "training_args.bin", "tokenizer.model"}).files,
            (Files{"tokenizer.model", "pytorch_model.bin"}));
  const HfFileChoice c = choose_hf_files({"pytorch_model.bin.index.json", "pytorch_model-00001-of-00002.bin"});
  EXPECT_EQ(c.index, "pytorch_model.bin.index.json");
  EXPECT_EQ(c.files, (Files{"pytorch_model.bin.index.json"}));
}

TEST(HfFileChoice, AnIndexListsEachShardOnceAndRefusesPathsOutsideTheSnapshot) {
  EXPECT_EQ(sharded_index_files(R"({"weight_map": {"a": "s2.safetensors", "b": "s1.safetensors", "c": "s2.safetensors"}})",
                                "model.safetensors.index.json"),
            (Files{"s1.safetensors", "s2.safetensors"}));
  test::expect_error(ErrorCode::IndexInvalid,
                     [] { sharded_index_files(R"({"weight_map": {"a": "../../x"}})", "model.safetensors.index.json"); });
}

TEST(HfCacheLayout, ModelIdsNameTheirCacheFolder) {
  EXPECT_EQ(hf_repo_folder("org/name"), "models--org--name");
  EXPECT_EQ(hf_repo_folder("gpt2"), "models--gpt2");
  test::expect_error(ErrorCode::FileNotFound, [] { hf_repo_folder("org/../x"); });
  test::expect_error(ErrorCode::InvalidArgument, [] { check_hf_revision("../main"); });
}

TEST(HfCacheLayout, AMissingModelGoesToTheGivenDownloaderUnlessOffline) {
  test::TempDir cache;
  HfDownload request;
  request.model_id = "org/missing";
  request.cache_dir = cache.path().string();
  std::string asked;
  const HfDownloader downloader = [&](const HfDownload& r) {
    asked = r.model_id + "@" + r.revision;
    return HfSnapshot{"/snapshot", nullptr};
  };
  ::unsetenv("HF_HUB_OFFLINE");
  EXPECT_EQ(find_or_download_hf_snapshot(request, downloader).directory, "/snapshot");
  EXPECT_EQ(asked, "org/missing@main");
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  asked.clear();
  const std::string message = test::expect_error(ErrorCode::FileNotFound, [&] { find_or_download_hf_snapshot(request, downloader); });
  ::unsetenv("HF_HUB_OFFLINE");
  EXPECT_EQ(asked, "");
  EXPECT_NE(message.find("HF_HUB_OFFLINE"), std::string::npos) << message;
  EXPECT_NE(message.find("models--org--missing/refs/main"), std::string::npos) << message;
  test::expect_error(ErrorCode::InvalidArgument, [&] { download_hf_snapshot(request, nullptr); });
  // Without a downloader, a missing model is where the cache was looked in.
  test::expect_error(ErrorCode::FileNotFound, [&] { find_or_download_hf_snapshot(request, nullptr); });
}

TEST(HfCacheLayout, ASnapshotMissingAShardItsIndexListsIsCompletedByTheDownloader) {
  test::TempDir cache;
  const std::string commit(40, 'a');
  const auto repo = cache.path() / "models--org--sharded";
  const auto snapshot = repo / "snapshots" / commit;
  std::filesystem::create_directories(repo / "refs");
  std::filesystem::create_directories(snapshot);
  test::write_bytes((repo / "refs" / "main").string(), commit);
  test::write_bytes((snapshot / "model.safetensors.index.json").string(),
                   R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
  test::write_bytes((snapshot / "model-00001-of-00002.safetensors").string(), "shard");
  HfDownload request;
  request.model_id = "org/sharded";
  request.cache_dir = cache.path().string();
  int asked = 0;
  const HfDownloader downloader = [&](const HfDownload&) {
    ++asked;
    return HfSnapshot{snapshot.string(), nullptr};
  };
  ::unsetenv("HF_HUB_OFFLINE");
  EXPECT_EQ(find_or_download_hf_snapshot(request, downloader).directory, snapshot.string());
  EXPECT_EQ(asked, 1);
  test::write_bytes((snapshot / "model-00002-of-00002.safetensors").string(), "shard");
  find_or_download_hf_snapshot(request, downloader);
  EXPECT_EQ(asked, 1);  // whole now: read from the cache
}

}  // namespace
}  // namespace wl
