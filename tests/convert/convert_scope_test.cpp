// What a conversion reads of its source (convert_scope): a multimodal checkpoint written as GGUF is
// its language model alone, and the progress and the CLI's summary count that, not the vision model.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

// hf-tiny-arch's Mistral (its window dropped) as the language model of a Mistral3ForConditionalGeneration,
// beside two vision tensors.
std::unique_ptr<WeightSource> mistral3_checkpoint(std::vector<TensorView>& held) {
  const std::string dir = (test::testdata_dir() / "hf-tiny-arch" / "mistral").string();
  const auto text = WeightLoaderRegistry::with_builtins()->create("hf")->get_weights(dir);
  nlohmann::json text_config = nlohmann::json::parse(text->metadata().at("config.json"));
  text_config["sliding_window"] = nullptr;
  const nlohmann::json config = {{"model_type", "mistral3"},
                                 {"architectures", nlohmann::json::array({"Mistral3ForConditionalGeneration"})},
                                 {"text_config", text_config},
                                 {"vision_config", {{"hidden_size", 16}}}};
  std::vector<MemoryTensor> tensors;
  for (const TensorInfo& t : text->tensors()) {
    held.push_back(text->load(t, DType::F32));
    tensors.push_back({"language_model." + t.name, DType::F32, t.shape, {}, held.back().raw(), nullptr});
  }
  for (const char* name : {"vision_tower.ln_pre.weight", "multi_modal_projector.norm.weight"}) {
    held.push_back(TensorView::empty(DType::F32, {16}));
    tensors.push_back({name, DType::F32, {16}, {}, held.back().raw(), nullptr});
  }
  return WeightSource::from_memory("<memory>", std::move(tensors), {{"config.json", config.dump()}});
}

TEST(ConvertScope, AMultimodalCheckpointAsGgufCountsItsLanguageModelAlone) {
  WL_REQUIRE_TESTDATA();
  std::vector<TensorView> held;
  held.reserve(64);
  const auto s = mistral3_checkpoint(held);
  ConvertOptions o;
  o.to = CheckpointFormat::Gguf;
  o.gguf_type = "f32";
  const ConvertScope scope = convert_scope(*s, o);
  EXPECT_EQ(scope.tensors + 2, s->tensors().size());
  EXPECT_EQ(scope.bytes + 2 * 16 * sizeof(float), s->total_bytes());
  EXPECT_EQ(scope.left_out, 2u);
  uint64_t last_done = 0, last_total = 0;
  o.progress = [&](uint64_t done, uint64_t total) {
    last_done = done, last_total = total;
    return true;
  };
  const auto out = std::filesystem::temp_directory_path() / "wl_convert_scope_test.gguf";
  convert_checkpoint(*s, out.string(), o);
  std::filesystem::remove(out);
  EXPECT_EQ(last_total, scope.bytes);  // the progress ends at what was written, not the checkpoint's bytes
  EXPECT_EQ(last_done, scope.bytes);
  o.to = CheckpointFormat::Safetensors;  // written whole
  const ConvertScope all = convert_scope(*s, o);
  EXPECT_EQ(all.tensors, s->tensors().size());
  EXPECT_EQ(all.bytes, s->total_bytes());
  EXPECT_EQ(all.left_out, 0u);
}

}  // namespace
}  // namespace wl
