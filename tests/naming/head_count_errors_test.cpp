// Head counts that do not split a q/k projection's rows are reported with the code of the
// checkpoint's own format, naming the file and the field the count came from.
#include <fmt/format.h>

#include "formats/gguf/gguf_test_util.hpp"
#include "formats/pytorch/pt_test_util.hpp"
#include "weightloader/name_schemes.hpp"
#include "weightloader/registry.hpp"

namespace wl::test {
namespace {

// A Meta checkpoint of one q and one k projection of 4 columns: q has 6 rows, k 4.
std::string meta_checkpoint(const TempDir& dir, const std::string& params) {
  const TensorSpec wq{"FloatStorage", "0", 24, 0, {6, 4}, {4, 1}}, wk{"FloatStorage", "1", 16, 0, {4, 4}, {4, 1}};
  const std::string pickle = state_dict_pickle({{"layers.0.attention.wq.weight", wq}, {"layers.0.attention.wk.weight", wk}});
  write_bytes(dir.file("consolidated.00.pth"),
              checkpoint_bytes(pickle, {{"0", le_bytes(std::vector<float>(24))}, {"1", le_bytes(std::vector<float>(16))}}));
  write_bytes(dir.file("params.json"), params);
  return dir.path().string();
}

TEST(HeadCountErrors, MetaNamesParamsJsonAndItsField) {
  TempDir dir;
  auto meta = WeightLoaderRegistry::with_builtins()->create("meta");
  const std::string q = expect_error(ErrorCode::ConfigInvalid, [&] {
    meta->get_weights(meta_checkpoint(dir, R"({"dim": 4, "n_heads": 4, "n_kv_heads": 2})"));
  });
  expect_contains(q, dir.file("params.json"));
  expect_contains(q, "layers.0.attention.wq.weight");
  expect_contains(q, "6 rows do not split into 4 heads of an even size (params.json field 'n_heads')");

  const std::string k = expect_error(ErrorCode::ConfigInvalid, [&] {
    meta->get_weights(meta_checkpoint(dir, R"({"dim": 4, "n_heads": 3, "n_kv_heads": 3})"));
  });
  expect_contains(k, "4 rows do not split into 3 heads of an even size (params.json field 'n_kv_heads')");
  // Without n_kv_heads, k's heads are n_heads, and the message says so.
  const std::string k_default = expect_error(ErrorCode::ConfigInvalid, [&] {
    meta->get_weights(meta_checkpoint(dir, R"({"dim": 4, "n_heads": 3})"));
  });
  expect_contains(k_default, "(params.json field 'n_heads')");
}

// A Meta-named checkpoint in memory loaded into a Hugging Face-named model with name_map=auto:
// the q rows change layout with the head count `metadata` gives.
std::string auto_map_error(ErrorCode code, std::map<std::string, std::string> metadata) {
  auto values = std::make_shared<std::vector<float>>(24);
  std::vector<MemoryTensor> tensors{{"layers.0.attention.wq.weight", DType::F32, {6, 4}, {}, values->data(), values}};
  auto source = WeightSource::from_memory("<memory>", std::move(tensors), std::move(metadata));
  Model model;
  model.add_parameter("model.layers.0.self_attn.q_proj.weight", {6, 4}, DType::F32);
  Kwargs kwargs;
  kwargs["name_map"] = std::string("auto");
  auto loader = WeightLoaderRegistry::with_builtins()->create("local", kwargs);
  return expect_error(code, [&] { loader->load_weights(model, *source); });
}

TEST(HeadCountErrors, AutoNameMapNamesWhereTheCountCameFrom) {
  const std::string config = auto_map_error(ErrorCode::ConfigInvalid, {{"config.json", R"({"num_attention_heads": 4})"}});
  expect_contains(config, "6 rows do not split into 4 heads of an even size (config.json field 'num_attention_heads')");
  expect_contains(config, "layers.0.attention.wq.weight");
  const std::string params = auto_map_error(ErrorCode::ConfigInvalid, {{"params.json", R"({"n_heads": 4})"}});
  expect_contains(params, "(params.json field 'n_heads')");
  const std::string gguf = auto_map_error(ErrorCode::GgufHeadCount, {{"llama.attention.head_count", "4"}});
  expect_contains(gguf, "(llama.attention.head_count)");
}

TEST(HeadCountErrors, RotaryRowOrderThrowsTheCallersCode) {
  const HeadCountOrigin origin{ErrorCode::Llama2cInconsistentHeads, "the header's n_heads", "m.bin"};
  const std::string message = expect_error(ErrorCode::Llama2cInconsistentHeads, [&] {
    rotary_row_order(6, 2, RotaryOrder::InterleavedAsHf, origin, "q");
  });
  expect_contains(message, "m.bin: tensor 'q': 6 rows do not split into 2 heads of an even size (the header's n_heads)");
  expect_error(ErrorCode::Llama2cInconsistentHeads, [&] { rotary_row_order(8, 0, RotaryOrder::HfAsInterleaved, origin, "q"); });
  // A head count near 2^64 is refused, not wrapped around into a division by zero.
  expect_error(ErrorCode::Llama2cInconsistentHeads,
               [&] { rotary_row_order(8, uint64_t{1} << 63, RotaryOrder::InterleavedAsHf, origin, "q"); });
}

}  // namespace
}  // namespace wl::test
