// The planner's side reads (PlanParams::side): the extents that hold a decoder's side tensors run
// before the blocks that need them, and an extent holds both only when it holds all that decoder's
// side chunks, so that no reader ever waits on another inside the side extents.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/io_plan.hpp"

namespace wl {

namespace {

// Chunks [first, first + count) of `plan` as one extent (they lie in order in one source).
Extent extent_of(const IoPlan& plan, const PlanParams& p, size_t first, size_t count) {
  Extent e{first, count, 0, false, 0};
  for (size_t i = first; i < first + count; ++i) {
    const Chunk& c = plan.chunks[i];
    e.bytes += c.src_bytes + c.aux_bytes;
    e.staged = e.staged || staged_chunk(c, p);
  }
  const Chunk &a = plan.chunks[first], &z = plan.chunks[first + count - 1];
  e.span = count == 1 ? a.src_bytes + a.aux_bytes : z.src_offset + z.src_bytes - a.src_offset;
  return e;
}

}  // namespace

void order_side_extents(const PlanParams& p, IoPlan& plan) {
  if (std::none_of(plan.chunks.begin(), plan.chunks.end(), [](const Chunk& c) { return c.side; })) return;
  const std::unordered_set<const Decoder*> waiting(p.waiting.begin(), p.waiting.end());
  auto waits = [&](const Chunk& c) { return !c.side && c.tensor->decoder && waiting.count(c.tensor->decoder.get()); };
  std::unordered_map<const TensorInfo*, size_t> side_chunks;  // per side tensor, in the whole plan
  for (const Chunk& c : plan.chunks)
    if (c.side) ++side_chunks[c.tensor];
  // Whether extent `e` holds every side chunk of each waiting decoder whose blocks it holds.
  auto self_contained = [&](const Extent& e) {
    std::unordered_map<const TensorInfo*, size_t> here;
    for (size_t i = e.first; i < e.first + e.count; ++i)
      if (plan.chunks[i].side) ++here[plan.chunks[i].tensor];
    for (size_t i = e.first; i < e.first + e.count; ++i) {
      if (!waits(plan.chunks[i])) continue;
      for (const SideRead& s : plan.chunks[i].tensor->decoder->side_reads()) {
        const auto total = side_chunks.find(&s.tensor);
        if (total == side_chunks.end() || here[&s.tensor] != total->second) return false;
      }
    }
    return true;
  };
  std::vector<Extent> sides, rest;
  for (const Extent& e : plan.extents) {
    const Chunk* c = &plan.chunks[e.first];
    const bool any_side = std::any_of(c, c + e.count, [](const Chunk& x) { return x.side; });
    if (!any_side) {
      rest.push_back(e);
      continue;
    }
    if (self_contained(e)) {
      sides.push_back(e);
      continue;
    }
    // Cut between side chunks and the others: runs of each, in order.
    for (size_t at = e.first, end = e.first + e.count; at < end;) {
      size_t run = at + 1;
      while (run < end && plan.chunks[run].side == plan.chunks[at].side) ++run;
      (plan.chunks[at].side ? sides : rest).push_back(extent_of(plan, p, at, run - at));
      at = run;
    }
  }
  plan.side_extents = sides.size();
  sides.insert(sides.end(), rest.begin(), rest.end());
  plan.extents = std::move(sides);
}

}  // namespace wl
