// stream_tensors: every value of every group exactly once, in element order, within the window.
#include "checks/tensor_stream.hpp"

#include <gtest/gtest.h>

#include "test_util.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

TEST(TensorStream, EveryValueOnceInOrderWithinTheWindow) {
  test::TempDir dir;
  std::vector<std::pair<std::string, TensorView>> tensors;
  float next = 0;
  for (Shape shape : {Shape{7, 5}, Shape{}, Shape{0, 4}, Shape{33}, Shape{3, 2, 4}}) {
    TensorView t = TensorView::empty(DType::F16, shape);
    TensorView f = TensorView::empty(DType::F32, shape);
    for (uint64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = next++;
    tensors.emplace_back("t" + std::to_string(tensors.size()), f.to(DType::F16));
  }
  write_safetensors(dir.file("m.safetensors"), tensors);
  auto a = WeightLoaderRegistry::with_builtins()->create("local")->get_weights(dir.file("m.safetensors"));
  std::vector<StreamGroup> groups;
  for (const TensorInfo& t : a->tensors())
    groups.push_back({{{a.get(), &t}, {a.get(), &t}}, groups.size() == 3 ? DType::F64 : DType::F32});
  StreamOptions o;
  o.window_bytes = 6 * sizeof(float);  // smaller than some rows: those are read alone
  std::vector<uint64_t> seen(groups.size(), 0);
  std::vector<bool> visited(groups.size(), false);
  float expect = 0;
  uint64_t progress_done = 0, progress_total = 0;
  o.io.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_GE(done, progress_done);
    progress_done = done;
    progress_total = total;
    return true;
  };
  stream_tensors(groups, o, [&](const StreamPiece& p) {
    visited[p.group] = true;
    EXPECT_EQ(p.first, seen[p.group]);
    EXPECT_LE(p.count * dtype_size(p.dtype), 8 * sizeof(float));  // the window grows to the largest row ([3, 2, 4])
    EXPECT_EQ(p.dtype, p.group == 3 ? DType::F64 : DType::F32);
    for (uint64_t i = 0; i < p.count; ++i) {
      for (const void* side : p.data)
        EXPECT_EQ(p.dtype == DType::F64 ? static_cast<const double*>(side)[i] : static_cast<const float*>(side)[i], expect);
      ++expect;
    }
    seen[p.group] += p.count;
  });
  for (size_t g = 0; g < groups.size(); ++g) {
    EXPECT_TRUE(visited[g]) << g;  // the empty tensor too
    EXPECT_EQ(seen[g], groups[g].sides.front().tensor->numel()) << g;
  }
  EXPECT_EQ(expect, next);
  EXPECT_EQ(progress_done, progress_total);
  EXPECT_EQ(progress_total, 2 * a->total_bytes());
}

}  // namespace
}  // namespace wl
