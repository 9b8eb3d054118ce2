// The planner's side reads (core/io_plan_sides.cpp): side chunks in extents that run first; an
// extent keeps a waiting decoder's blocks with side chunks only when it holds all of them.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/io_plan.hpp"

namespace wl {
namespace {

TensorInfo raw(const std::string& name, uint64_t offset, uint64_t elems) {
  TensorInfo t;
  t.name = name;
  t.dtype = DType::F32;
  t.shape = {elems};
  t.offset = offset;
  t.nbytes = elems * 4;
  return t;
}

// One block of `bytes` stored bytes; reads `side` beside it. The planner never decodes.
class Waiting final : public Decoder {
 public:
  Waiting(uint64_t bytes, std::vector<SideRead> side) : bytes_(bytes), side_(std::move(side)) {}
  std::string name() const override { return "W"; }
  uint64_t block_elems() const override { return bytes_; }
  uint64_t block_bytes() const override { return bytes_; }
  DType output_dtype() const override { return DType::F32; }
  void decode(const std::byte*, uint64_t, void*) const override { ADD_FAILURE() << "the planner decoded"; }
  std::span<const SideRead> side_reads() const override { return side_; }
  bool prepared() const override { return false; }

 private:
  uint64_t bytes_;
  std::vector<SideRead> side_;
};

TensorInfo block(const std::string& name, uint64_t offset, const std::shared_ptr<const Decoder>& d) {
  TensorInfo t;
  t.name = name;
  t.shape = {d->block_elems()};
  t.offset = offset;
  t.nbytes = d->block_bytes();
  t.decoder = d;
  return t;
}

// `requests` (side[i]: a side read) planned with one source and no request cost; `d` waits.
IoPlan plan(const std::vector<ReadRequest>& requests, std::vector<char> side, const Decoder* d) {
  PlanParams p;
  p.side = std::move(side);
  if (d) p.waiting = {d};
  return plan_reads(requests, std::vector<size_t>(requests.size(), 0), p);
}

std::vector<std::string> names_of(const IoPlan& plan, const Extent& e) {
  std::vector<std::string> names;
  for (size_t i = e.first; i < e.first + e.count; ++i) names.push_back(plan.chunks[i].tensor->name);
  return names;
}

TEST(IoPlanSides, ALayerStoredWithItsSideTensorsIsOneExtentRunFirst) {
  // scale | weight | zeros, back to back: one read, side chunks finished first.
  auto d = std::make_shared<Waiting>(64, std::vector<SideRead>{{raw("scale", 0, 4), DType::F32}, {raw("zeros", 80, 4), DType::F32}});
  const TensorInfo w = block("weight", 16, d);
  std::vector<float> a(4), b(4), out(64);
  // The data request first: the planner puts the side reads in file order around it.
  const IoPlan p = plan({ReadRequest{&w, {}, DType::F32, out.data()}, ReadRequest{&d->side_reads()[0].tensor, {}, DType::F32, a.data()},
                         ReadRequest{&d->side_reads()[1].tensor, {}, DType::F32, b.data()}},
                        {0, 1, 1}, d.get());
  ASSERT_EQ(p.extents.size(), 1u);
  EXPECT_EQ(p.side_extents, 1u);
  EXPECT_EQ(names_of(p, p.extents[0]), (std::vector<std::string>{"scale", "weight", "zeros"}));
  EXPECT_TRUE(p.extents[0].staged);
  EXPECT_EQ(p.extents[0].span, 96u);
}

TEST(IoPlanSides, BlocksWhoseSideTensorsLieElsewhereAreCutFromThem) {
  // scale | weight back to back, but the layer's zeros far away: the weight is cut from the scale,
  // and both side extents run before it.
  auto d = std::make_shared<Waiting>(64, std::vector<SideRead>{{raw("scale", 0, 4), DType::F32}, {raw("zeros", 4096, 4), DType::F32}});
  const TensorInfo w = block("weight", 16, d);
  const TensorInfo plain = raw("plain", 80, 8);  // raw data right after the weight
  std::vector<float> a(4), b(4), out(64), c(8);
  const IoPlan p = plan({ReadRequest{&d->side_reads()[0].tensor, {}, DType::F32, a.data()},
                         ReadRequest{&d->side_reads()[1].tensor, {}, DType::F32, b.data()}, ReadRequest{&w, {}, DType::F32, out.data()},
                         ReadRequest{&plain, {}, DType::F32, c.data()}},
                        {1, 1, 0, 0}, d.get());
  ASSERT_EQ(p.extents.size(), 3u);
  EXPECT_EQ(p.side_extents, 2u);
  EXPECT_EQ(names_of(p, p.extents[0]), std::vector<std::string>{"scale"});
  EXPECT_EQ(names_of(p, p.extents[1]), std::vector<std::string>{"zeros"});
  EXPECT_EQ(names_of(p, p.extents[2]), (std::vector<std::string>{"weight", "plain"}));
  EXPECT_EQ(p.extents[0].bytes, 16u);
  EXPECT_EQ(p.extents[0].span, 16u);
  EXPECT_EQ(p.extents[2].bytes, 96u);
  EXPECT_EQ(p.extents[2].span, 96u);
  EXPECT_FALSE(p.extents[0].staged);  // a raw F32 side tensor read as F32: straight into place
}

TEST(IoPlanSides, WithoutSideReadsTheExtentsStayInRequestOrder) {
  const TensorInfo x = raw("x", 64, 4), y = raw("y", 0, 4);
  std::vector<float> a(4), b(4);
  const IoPlan p = plan({ReadRequest{&x, {}, DType::F32, a.data()}, ReadRequest{&y, {}, DType::F32, b.data()}}, {}, nullptr);
  ASSERT_EQ(p.extents.size(), 2u);
  EXPECT_EQ(p.side_extents, 0u);
  EXPECT_EQ(p.chunks[p.extents[0].first].tensor, &x);  // not sorted into file order
}

}  // namespace
}  // namespace wl
