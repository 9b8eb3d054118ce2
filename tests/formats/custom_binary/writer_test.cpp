#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/formats/custom_binary.hpp"

namespace wl {
namespace {

using test::expect_error;
using test::TempDir;
using Tensors = std::vector<std::pair<std::string, TensorView>>;

// Values exact in F16 and BF16, so a conversion to F32 must reproduce them bit for bit.
float value(size_t i) { return (float(i) - 3.0f) * 0.375f; }

TensorView f32_tensor(Shape shape) {
  TensorView t = TensorView::empty(DType::F32, std::move(shape));
  for (size_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = value(i);
  return t;
}

TensorView half_tensor(DType dtype, Shape shape) {
  TensorView t = TensorView::empty(dtype, std::move(shape));
  for (size_t i = 0; i < t.numel(); ++i)
    t.data<uint16_t>()[i] = dtype == DType::F16 ? f32_to_f16_bits(value(i)) : f32_to_bf16_bits(value(i));
  return t;
}

std::vector<float> stored_floats(const std::string& bin, const TensorInfo& info) {
  std::vector<float> out(info.nbytes / sizeof(float));
  if (info.nbytes) std::memcpy(out.data(), bin.data() + info.offset, info.nbytes);
  return out;
}

TEST(CustomBinaryWriter, RoundTripConvertsEveryTensorToF32) {
  TempDir dir;
  const std::string root = (dir.path() / "ckpt").string();  // created by the writer
  const TensorView f32 = f32_tensor({2, 3});
  // A transposed (strided) view of f32: [3, 2] with strides [1, 3].
  const TensorView transposed(f32.storage(), DType::F32, {3, 2}, {1, 3}, 0);
  const Tensors tensors = {
      {"layers.0.w", f32},
      {"half", half_tensor(DType::F16, {4})},
      {"brain", half_tensor(DType::BF16, {1, 2, 3})},
      {"scalar", f32_tensor({})},
      {"empty", f32_tensor({0, 5})},
      {"t", transposed},
  };
  write_custom_binary(root, tensors);

  EXPECT_EQ(test::read_bytes(root + "/meta.txt"),
            "layers.0.w:2,3\nhalf:4\nbrain:1,2,3\nscalar:\nempty:0,5\nt:3,2\n");
  const Catalogue cat = read_custom_binary_catalogue(root);
  ASSERT_EQ(cat.tensors.size(), tensors.size());
  const std::string bin = test::read_bytes(root + "/model.bin");
  for (size_t k = 0; k < 5; ++k) {
    const TensorInfo& info = cat.tensors[k];
    EXPECT_EQ(info.name, tensors[k].first);
    EXPECT_EQ(info.shape, tensors[k].second.shape()) << info.name;
    EXPECT_EQ(info.dtype, DType::F32);
    const std::vector<float> got = stored_floats(bin, info);
    ASSERT_EQ(got.size(), tensors[k].second.numel()) << info.name;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], value(i)) << info.name << "[" << i << "]";
  }
  // The transposed view is written row-major in its own shape: t[r][c] = f32[c][r].
  const std::vector<float> t = stored_floats(bin, cat.tensors[5]);
  ASSERT_EQ(t.size(), 6u);
  for (size_t r = 0; r < 3; ++r)
    for (size_t c = 0; c < 2; ++c) EXPECT_EQ(t[r * 2 + c], value(c * 3 + r)) << r << "," << c;
}

TEST(CustomBinaryWriter, ReplacesAnExistingCheckpoint) {
  TempDir dir;
  write_custom_binary(dir.path().string(), {{"a", f32_tensor({8})}});
  write_custom_binary(dir.path().string(), {{"b", f32_tensor({2})}});
  const Catalogue cat = read_custom_binary_catalogue(dir.path().string());
  ASSERT_EQ(cat.tensors.size(), 1u);
  EXPECT_EQ(cat.tensors[0].name, "b");
  EXPECT_EQ(std::filesystem::file_size(dir.file("model.bin")), 8u);
}

TEST(CustomBinaryWriter, RejectsNamesMetaTxtCannotHold) {
  for (const std::string& name : {std::string("a:b"), std::string("a\nb"), std::string("a\r"), std::string()}) {
    TempDir dir;
    const std::string root = (dir.path() / "out").string();
    expect_error(ErrorCode::InvalidArgument, [&] { write_custom_binary(root, {{"ok", f32_tensor({1})}, {name, f32_tensor({1})}}); });
    // Checked before anything is written.
    EXPECT_FALSE(std::filesystem::exists(root)) << name;
  }
}

TEST(CustomBinaryWriter, RejectsRepeatedNamesAndEmptyTensors) {
  TempDir dir;
  const std::string what = expect_error(ErrorCode::InvalidArgument, [&] {
    write_custom_binary(dir.path().string(), {{"w", f32_tensor({1})}, {"w", f32_tensor({2})}});
  });
  EXPECT_NE(what.find("tensor 'w'"), std::string::npos) << what;
  expect_error(ErrorCode::InvalidArgument, [&] { write_custom_binary(dir.path().string(), {{"w", TensorView()}}); });
  EXPECT_FALSE(std::filesystem::exists(dir.file("meta.txt")));
}

}  // namespace
}  // namespace wl
