// zero_copy=true: parameters whose exact bytes the file holds are backed by its mapping; the rule
// (stored_view) that decides it.
#include <gtest/gtest.h>

#include <cstring>

#include "loaders/zero_copy.hpp"
#include "test_util.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

TensorView iota(DType dtype, Shape shape) {
  TensorView f = TensorView::empty(DType::F32, shape);
  for (uint64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = float(i);
  return f.to(dtype);
}

TEST(ZeroCopy, SameDtypeTensorsAreMappedTheOthersRead) {
  test::TempDir dir;
  write_safetensors(dir.file("model.safetensors"), {{"a", iota(DType::F32, {64, 8})}, {"b", iota(DType::F16, {16})}});
  auto l = WeightLoaderRegistry::with_builtins()->create("local", {{"zero_copy", true}});
  auto src = l->get_weights(dir.path().string());
  Model m;
  m.add_parameter("a", {64, 8}, DType::F32);
  m.add_parameter("b", {16}, DType::F32);  // needs conversion: read as usual
  const LoadReport r = l->load_weights(m, *src);
  EXPECT_EQ(r.zero_copy, std::vector<std::string>{"a"});
  EXPECT_EQ(r.loaded.size(), 2u);
  EXPECT_EQ(r.bytes_read, 16 * 2u);  // only b's bytes
  EXPECT_FALSE(m.find("a")->data.storage()->writable());
  EXPECT_EQ(m.find("a")->data.data<float>()[511], 511.0f);
  EXPECT_EQ(m.find("b")->data.data<float>()[15], 15.0f);
  EXPECT_NE(r.to_string().find("zero-copy   1 (a)"), std::string::npos) << r.to_string();
}

TEST(ZeroCopy, OffByDefault) {
  test::TempDir dir;
  write_safetensors(dir.file("model.safetensors"), {{"a", iota(DType::F32, {4})}});
  auto l = WeightLoaderRegistry::with_builtins()->create("local");
  auto src = l->get_weights(dir.path().string());
  Model m = l->mirror_model(*src);
  const LoadReport r = l->load_weights(m, *src);
  EXPECT_TRUE(r.zero_copy.empty());
  EXPECT_TRUE(m.find("a")->data.storage()->writable());
}

TEST(ZeroCopy, MisalignedElementsAreReadNotMapped) {
  const std::vector<float> values = {1.5f, -2.0f, 3.25f};
  std::vector<std::byte> bytes(sizeof(float) * values.size() + 1);
  std::memcpy(bytes.data() + 1, values.data(), sizeof(float) * values.size());  // one byte off
  auto source = WeightSource::from_memory("<memory>", {MemoryTensor{"w", DType::F32, {3}, {}, bytes.data() + 1, nullptr}});
  const TensorInfo& w = source->at("w");
  EXPECT_FALSE(stored_view(w, *source, DType::F32));
  Model m;
  m.add_parameter("w", {3}, DType::F32);
  const LoadReport r = WeightLoaderRegistry::with_builtins()->create("local", {{"zero_copy", true}})->load_weights(m, *source);
  EXPECT_TRUE(r.zero_copy.empty());
  EXPECT_EQ(m.find("w")->data.data<float>()[2], 3.25f);
}

TEST(ZeroCopy, StoredViewNeedsTheStoredDtype) {
  test::TempDir dir;
  write_safetensors(dir.file("model.safetensors"), {{"a", iota(DType::F16, {4})}});
  auto src = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir.path().string());
  const TensorInfo& a = src->at("a");
  EXPECT_FALSE(stored_view(a, *src, DType::F32));
  const std::optional<TensorView> view = stored_view(a, *src, DType::F16);
  ASSERT_TRUE(view);
  EXPECT_FALSE(view->storage()->writable());
  EXPECT_EQ(view->shape(), (Shape{4}));
}

}  // namespace
}  // namespace wl
