// A file that shrinks between get_weights (catalogue read) and load_weights (data read), with the
// default positioned-read path: a Truncated error naming the file, for every format.
#include <gtest/gtest.h>

#include <filesystem>

#include "formats/llama2c/l2c_test_util.hpp"
#include "formats/pytorch/pt_test_util.hpp"
#include "hostile/hostile_util.hpp"
#include "weightloader/formats/custom_binary.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/formats/llama2c.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl::test {
namespace {

// Opens `path` as `--loader auto` does, cuts `data_file` to half its size, loads.
void expect_shrink_is_truncated(const std::string& path, const std::string& data_file) {
  Opened o = open_auto(path);
  Model model = o.loader->mirror_model(*o.source);
  std::filesystem::resize_file(data_file, std::filesystem::file_size(data_file) / 2);
  const std::string message = expect_error(ErrorCode::Truncated, [&] { o.loader->load_weights(model, *o.source); });
  EXPECT_NE(message.find(data_file), std::string::npos) << message;
}

TensorView ramp(Shape shape) {
  TensorView t = TensorView::empty(DType::F32, std::move(shape));
  for (uint64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = float(i);
  return t;
}

TEST(HostileShrink, Safetensors) {
  TempDir dir;
  write_safetensors(dir.file("model.safetensors"), {{"a", ramp({64, 64})}, {"b", ramp({64, 64})}});
  expect_shrink_is_truncated(dir.file("model.safetensors"), dir.file("model.safetensors"));
}

TEST(HostileShrink, Gguf) {
  TempDir dir;
  write_gguf(dir.file("model.gguf"), {{"a", ramp({64, 64}), GgmlType::F32}, {"b", ramp({64, 64}), GgmlType::Q8_0}});
  expect_shrink_is_truncated(dir.file("model.gguf"), dir.file("model.gguf"));
}

TEST(HostileShrink, Llama2c) {
  TempDir dir;
  const Llama2cHeader h = tiny_header(2, false);
  write_llama2c(dir.file("model.bin"), h, hf_tensors(h, [](const std::string&, uint64_t i) { return float(i % 9); }));
  expect_shrink_is_truncated(dir.file("model.bin"), dir.file("model.bin"));
}

TEST(HostileShrink, Pytorch) {
  TempDir dir;
  const TensorSpec t{.numel = 4096, .size = {64, 64}, .stride = {64, 1}};
  write_bytes(dir.file("model.pt"),
              checkpoint_bytes(state_dict_pickle({{"w", t}}), {{"0", le_bytes(std::vector<float>(4096, 1.5f))}}));
  expect_shrink_is_truncated(dir.file("model.pt"), dir.file("model.pt"));
}

TEST(HostileShrink, CustomBinary) {
  TempDir dir;
  write_custom_binary(dir.path().string(), {{"a", ramp({64, 64})}, {"b", ramp({64})}});
  expect_shrink_is_truncated(dir.path().string(), dir.file("model.bin"));
}

}  // namespace
}  // namespace wl::test
