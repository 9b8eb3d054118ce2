#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "loaders/builtin_loaders.hpp"
#include "test_util.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/formats/custom_binary.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

using test::expect_error;
using test::TempDir;

float value(size_t i) { return float(i) * 0.1f - 1.0f; }  // not exact in BF16: rounding shows

TensorView f32_tensor(Shape shape) {
  TensorView t = TensorView::empty(DType::F32, std::move(shape));
  for (size_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = value(i);
  return t;
}

// A registry holding only this loader, so the tests do not depend on the others.
class CustomBinaryLoader : public ::testing::Test {
 protected:
  CustomBinaryLoader() { register_custom_binary_loader(registry); }
  WeightLoaderRegistry registry;
};

TEST_F(CustomBinaryLoader, IsRegisteredWithADescription) {
  EXPECT_EQ(registry.list_available(), std::vector<std::string>{"custom_binary"});
  EXPECT_NE(registry.spec("custom_binary").description.find("meta.txt"), std::string::npos);
  EXPECT_TRUE(registry.spec("custom_binary").kwargs.empty());
  EXPECT_TRUE(WeightLoaderRegistry::with_builtins()->contains("custom_binary"));
}

TEST_F(CustomBinaryLoader, LoadsIntoAModelConvertingToBF16) {
  TempDir dir;
  write_custom_binary(dir.path().string(), {{"embed", f32_tensor({4, 3})}, {"norm", f32_tensor({3})},
                                            {"scale", f32_tensor({})}});
  auto loader = registry.create("custom_binary", {{"dtype", std::string("bf16")}});
  auto source = loader->get_weights(dir.file("meta.txt"));
  EXPECT_EQ(source->format(), "custom_binary");
  EXPECT_EQ(source->origin(), dir.file("meta.txt"));
  ASSERT_EQ(source->tensors().size(), 3u);

  Model model = loader->mirror_model(*source);
  const LoadReport report = loader->load_weights(model, *source);
  EXPECT_EQ(report.format, "custom_binary");
  EXPECT_EQ(report.loaded.size(), 3u);
  EXPECT_EQ(report.converted.size(), 3u);
  EXPECT_EQ(report.bytes_read, (12u + 3u + 1u) * 4u);
  for (const char* name : {"embed", "norm", "scale"}) {
    const Parameter* p = model.find(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->dtype(), DType::BF16);
    EXPECT_EQ(p->shape(), source->at(name).shape);
    for (size_t i = 0; i < p->data.numel(); ++i)
      EXPECT_EQ(p->data.data<uint16_t>()[i], f32_to_bf16_bits(value(i))) << name << "[" << i << "]";
  }
}

TEST_F(CustomBinaryLoader, LoadsIntoCallerDeclaredParametersWithRenames) {
  TempDir dir;
  write_custom_binary(dir.path().string(), {{"model.w", f32_tensor({2, 2})}});
  auto loader = registry.create("custom_binary", {{"strip_prefix", std::string("model.")}});
  Model model;
  model.add_parameter("w", {2, 2}, DType::F32);
  loader->load_weights(model, *loader->get_weights(dir.path().string()));
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(model.find("w")->data.data<float>()[i], value(i));
}

TEST_F(CustomBinaryLoader, ReaderErrorsReachTheCaller) {
  TempDir dir;
  test::write_bytes(dir.file("meta.txt"), "w:2\n");
  test::write_bytes(dir.file("model.bin"), std::string(4, '\0'));
  auto loader = registry.create("custom_binary");
  expect_error(ErrorCode::BinSizeMismatch, [&] { loader->get_weights(dir.path().string()); });
}

}  // namespace
}  // namespace wl
