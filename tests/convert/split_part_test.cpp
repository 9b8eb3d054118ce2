// The parts a split tensor is stored as (src/convert/split_part.cpp), against the converter's own
// torch expressions: gpt-oss's gate_up_proj.transpose(-1, -2)[:, ::2, :] and [:, 1::2, :], its bias
// [..., ::2] and [..., 1::2], Llama 4's transpose(-1, -2).split(half, dim=-2), down_proj.transpose(-1,
// -2), and Granite-MoE-Shared's row blocks.
#include <gtest/gtest.h>

#include <numeric>
#include <span>

#include "convert/split_part.hpp"
#include "test_util.hpp"

namespace wl {
namespace {

TensorView counting(Shape shape) {
  TensorView t = TensorView::empty(DType::F32, std::move(shape));
  std::iota(t.data<float>(), t.data<float>() + t.numel(), 0.0f);
  return t;
}

std::vector<float> values(const TensorView& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

StoredParts parts(size_t n, bool columns, bool interleaved, bool transposed) {
  return {std::vector<std::string>(n, "part"), columns, interleaved, transposed};
}

// [2 experts, 2 hidden, 4 = 2 units x (gate, up)]: value 8e + 4h + c.
TEST(SplitPart, InterleavedColumnsTransposed) {
  const TensorView w = counting({2, 2, 4});
  const StoredParts how = parts(2, true, true, true);
  EXPECT_EQ(stored_part_shape(w.shape(), how, "m", "t"), (Shape{2, 2, 2}));
  // gate: expert e, unit u, hidden h = w[e, h, 2u]
  EXPECT_EQ(values(stored_part(w, how, 0)), (std::vector<float>{0, 4, 2, 6, 8, 12, 10, 14}));
  EXPECT_EQ(values(stored_part(w, how, 1)), (std::vector<float>{1, 5, 3, 7, 9, 13, 11, 15}));
  EXPECT_TRUE(splits_by_slot(w.shape(), how));
  // One slot at a time gives the same values as the whole stack.
  TensorView slot = counting({2, 4});
  for (float& v : std::span(slot.data<float>(), slot.numel())) v += 8;
  EXPECT_EQ(values(stored_part(slot, how, 1)), (std::vector<float>{9, 13, 11, 15}));
}

TEST(SplitPart, InterleavedBiasesAndHalves) {
  const TensorView bias = counting({2, 4});
  const StoredParts interleaved = parts(2, true, true, false);
  EXPECT_EQ(values(stored_part(bias, interleaved, 0)), (std::vector<float>{0, 2, 4, 6}));
  EXPECT_EQ(values(stored_part(bias, interleaved, 1)), (std::vector<float>{1, 3, 5, 7}));
  const TensorView w = counting({1, 2, 4});  // Llama 4: gate columns 0-1, up 2-3
  const StoredParts halves = parts(2, true, false, true);
  EXPECT_EQ(values(stored_part(w, halves, 0)), (std::vector<float>{0, 4, 1, 5}));
  EXPECT_EQ(values(stored_part(w, halves, 1)), (std::vector<float>{2, 6, 3, 7}));
}

TEST(SplitPart, OnePartTransposedAndRowBlocks) {
  const TensorView down = counting({2, 2, 3});
  const StoredParts whole = parts(1, false, false, true);
  EXPECT_EQ(stored_part_shape(down.shape(), whole, "m", "t"), (Shape{2, 3, 2}));
  EXPECT_EQ(values(stored_part(down, whole, 0)), (std::vector<float>{0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11}));
  const TensorView fused = counting({4, 2});  // gate rows 0-1, up rows 2-3
  const StoredParts rows = parts(2, false, false, false);
  EXPECT_FALSE(splits_by_slot(fused.shape(), rows));
  EXPECT_EQ(stored_part_shape(fused.shape(), rows, "m", "t"), (Shape{2, 2}));
  EXPECT_EQ(values(stored_part(fused, rows, 1)), (std::vector<float>{4, 5, 6, 7}));
}

TEST(SplitPart, ShapesThatDoNotSplitAreRefusedNamingTheTensor) {
  std::string msg = test::expect_error(ErrorCode::ShapeMismatch,
                                       [] { stored_part_shape({2, 3, 5}, parts(2, true, true, true), "m.safetensors", "gate_up_proj"); });
  EXPECT_NE(msg.find("gate_up_proj"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3, 5]"), std::string::npos) << msg;
  msg = test::expect_error(ErrorCode::ShapeMismatch, [] { stored_part_shape({4}, parts(1, false, false, true), "m", "down_proj"); });
  EXPECT_NE(msg.find("transpose"), std::string::npos) << msg;
}

}  // namespace
}  // namespace wl
