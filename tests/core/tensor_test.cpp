#include "weightloader/byte_source.hpp"
#include "weightloader/tensor.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "test_util.hpp"

namespace wl {
namespace {

TEST(Tensor, ShapeNumelAndOverflow) {
  EXPECT_EQ(shape_numel({}), 1u);
  EXPECT_EQ(shape_numel({2, 3, 4}), 24u);
  EXPECT_EQ(shape_numel({2, 0, 4}), 0u);
  test::expect_error(ErrorCode::ValidationOverflow, [] { shape_numel({1ull << 40, 1ull << 40}); });
  EXPECT_EQ(shape_to_string({2, 3}), "[2, 3]");
}

TEST(Tensor, EmptyIsContiguousAndWritable) {
  TensorView t = TensorView::empty(DType::BF16, {3, 5});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.nbytes(), 30u);
  EXPECT_TRUE(t.storage()->writable());
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{5, 1}));
}

TEST(Tensor, LargeAllocationUsesItsOwnMapping) {
  TensorView t = TensorView::empty(DType::F32, {1 << 20});  // 4 MiB
  std::memset(t.raw(), 1, t.nbytes());
  EXPECT_EQ(t.data<uint8_t>()[t.nbytes() - 1], 1);
}

TEST(Tensor, RowsShareStorage) {
  TensorView t = TensorView::empty(DType::I32, {4, 2});
  for (int i = 0; i < 8; ++i) t.data<int32_t>()[i] = i;
  TensorView r = t.rows(1, 3);
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(r.storage(), t.storage());
  EXPECT_EQ(r.data<int32_t>()[0], 2);
  test::expect_error(ErrorCode::SliceOutOfBounds, [&] { t.rows(3, 5); });
}

TEST(Tensor, ViewKeepsStorageAlive) {
  TensorView r;
  {
    TensorView t = TensorView::empty(DType::F32, {4});
    t.data<float>()[3] = 7.5f;
    r = t.rows(2, 4);
  }
  EXPECT_EQ(r.data<float>()[1], 7.5f);
}

TEST(Tensor, ReshapeChecksElementCount) {
  TensorView t = TensorView::empty(DType::F32, {2, 6});
  EXPECT_EQ(t.reshaped({3, 4}).shape(), (Shape{3, 4}));
  test::expect_error(ErrorCode::ShapeMismatch, [&] { t.reshaped({5}); });
}

TEST(Tensor, StridedViewMaterialisesInRowMajorOrder) {
  // A 2x3 column-major view of 0..5: logical [[0,2,4],[1,3,5]].
  auto storage = allocate_storage(6 * sizeof(float));
  for (int i = 0; i < 6; ++i) reinterpret_cast<float*>(storage->data())[i] = float(i);
  TensorView t(storage, DType::F32, {2, 3}, {1, 2}, 0);
  EXPECT_FALSE(t.is_contiguous());
  TensorView c = t.to(DType::F64);
  const double want[] = {0, 2, 4, 1, 3, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c.data<double>()[i], want[i]);
}

TEST(Tensor, ViewOutsideStorageIsRejected) {
  auto storage = allocate_storage(16);
  test::expect_error(ErrorCode::SliceOutOfBounds, [&] { TensorView(storage, DType::F32, {5}, 0); });
  test::expect_error(ErrorCode::SliceOutOfBounds, [&] { TensorView(storage, DType::F32, {4}, 4); });
}

TEST(Tensor, MapSourceRegionIsReadOnlyAndExact) {
  test::TempDir dir;
  std::string bytes(10000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i % 251);
  test::write_bytes(dir.file("f"), bytes);
  for (std::shared_ptr<ByteSource> source : {local_opener()->open(dir.file("f")), memory_source("<memory>", MemoryRegion::of_string(bytes))}) {
    auto s = map_source_region(source, 4099, 100);  // not page aligned
    EXPECT_FALSE(s->writable());
    ASSERT_EQ(s->size(), 100u);
    EXPECT_EQ(std::memcmp(s->data(), bytes.data() + 4099, 100), 0);
    test::expect_error(ErrorCode::Truncated, [&] { map_source_region(source, 9990, 100); });
  }
}

TEST(Tensor, MapSourceRegionKeepsTheSourceAlive) {
  std::weak_ptr<const void> owner;
  std::shared_ptr<Storage> storage;
  {
    MemoryRegion region = MemoryRegion::of_string("0123456789");
    owner = region.keep_alive;
    storage = map_source_region(memory_source("<memory>", std::move(region)), 2, 3);
  }
  EXPECT_FALSE(owner.expired());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(storage->data()), 3), "234");
  storage.reset();
  EXPECT_TRUE(owner.expired());
}

}  // namespace
}  // namespace wl
