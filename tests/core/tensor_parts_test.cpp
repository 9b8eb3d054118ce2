// Tensors assembled from pieces (TensorInfo::parts): whole reads, slices along and across the
// pieces' dim (a slice spanning two pieces), row orders within pieces, and refusals.
#include <gtest/gtest.h>

#include "core/tensor_parts.hpp"
#include "test_util.hpp"

namespace wl {
namespace {

// A 6 x 4 matrix of 0..23, as pieces along `dim` of the given extents, in memory.
struct Assembled {
  std::unique_ptr<WeightSource> pieces;  // keeps the pieces' memory
  TensorInfo whole;
};

Assembled assembled(size_t dim, std::vector<uint64_t> extents) {
  const uint64_t rows = 6, cols = 4;
  auto values = std::make_shared<std::vector<std::vector<float>>>();
  std::vector<MemoryTensor> tensors;
  uint64_t at = 0;
  values->reserve(extents.size());
  for (size_t i = 0; i < extents.size(); ++i) {
    const Shape shape = dim == 0 ? Shape{extents[i], cols} : Shape{rows, extents[i]};
    std::vector<float> v;
    for (uint64_t r = 0; r < shape[0]; ++r)
      for (uint64_t c = 0; c < shape[1]; ++c) v.push_back(float(dim == 0 ? (at + r) * cols + c : r * cols + at + c));
    values->push_back(std::move(v));
    tensors.push_back({"piece" + std::to_string(i), DType::F32, shape, {}, values->back().data(), values});
    at += extents[i];
  }
  Assembled a{WeightSource::from_memory("<pieces>", std::move(tensors)), {}};
  a.whole.name = "whole";
  a.whole.shape = {rows, cols};
  a.whole.parts = a.pieces->tensors();
  a.whole.parts_dim = dim;
  return a;
}

std::vector<float> read(const Assembled& a, Slice slice = {}) {
  const Shape shape = a.pieces->slice_shape(a.whole, slice);
  std::vector<float> out(shape_numel(shape), -1.0f);
  a.pieces->read(a.whole, DType::F32, out.data(), slice);
  return out;
}

std::vector<float> iota(uint64_t rows_begin, uint64_t rows_end, uint64_t col_begin, uint64_t col_end) {
  std::vector<float> out;
  for (uint64_t r = rows_begin; r < rows_end; ++r)
    for (uint64_t c = col_begin; c < col_end; ++c) out.push_back(float(r * 4 + c));
  return out;
}

TEST(TensorParts, RowPiecesReadWholeAndSliced) {
  const Assembled a = assembled(0, {2, 3, 1});
  EXPECT_EQ(read(a), iota(0, 6, 0, 4));
  EXPECT_EQ(read(a, Slice{0, 1, 4}), iota(1, 4, 0, 4));  // spans the first two pieces
  EXPECT_EQ(read(a, Slice{1, 1, 3}), iota(0, 6, 1, 3));  // across every piece
}

TEST(TensorParts, ColumnPiecesLandInTheirColumnBlocks) {
  const Assembled a = assembled(1, {1, 2, 1});
  EXPECT_EQ(read(a), iota(0, 6, 0, 4));
  EXPECT_EQ(read(a, Slice{1, 1, 4}), iota(0, 6, 1, 4));
  EXPECT_EQ(read(a, Slice{0, 2, 5}), iota(2, 5, 0, 4));  // rows of column pieces
}

TEST(TensorParts, ARowOrderWithinPiecesIsApplied) {
  Assembled a = assembled(0, {2, 4});
  a.whole.row_order = {1, 0, 5, 4, 3, 2};
  std::vector<float> want;
  for (uint64_t r : a.whole.row_order)
    for (uint64_t c = 0; c < 4; ++c) want.push_back(float(r * 4 + c));
  EXPECT_EQ(read(a), want);
  a.whole.row_order = {2, 0, 1, 3, 4, 5};  // row 0 from the second piece
  test::expect_error(ErrorCode::InvalidArgument, [&] { read(a); });
}

TEST(TensorParts, PiecesThatDoNotFitAreRefused) {
  Assembled a = assembled(0, {2, 3});
  const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] { check_parts(a.whole, a.pieces->files()); });
  EXPECT_NE(msg.find("sum to 5"), std::string::npos) << msg;
  Assembled b = assembled(1, {2, 2});
  b.whole.parts_dim = 0;
  test::expect_error(ErrorCode::InvalidArgument, [&] { check_parts(b.whole, b.pieces->files()); });
}

}  // namespace
}  // namespace wl
