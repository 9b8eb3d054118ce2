#include "model/tokenizer/bpe_merge.hpp"

#include <queue>

namespace wl::tok {

namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

BpeMerger::BpeMerger(const std::vector<std::string>& pieces, const std::vector<float>& scores,
                     const std::function<bool(int32_t)>& mergeable)
    : scores_(&scores) {
  ids_.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i)
    if (mergeable(static_cast<int32_t>(i))) ids_.emplace(pieces[i], static_cast<int32_t>(i));  // keeps the lowest
}

BpeMerger::BpeMerger(const std::vector<std::string>& pieces, const std::function<bool(int32_t)>& mergeable,
                     const std::vector<RankedMerge>& merges) {
  ids_.reserve(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i)
    if (mergeable(static_cast<int32_t>(i))) ids_.emplace(pieces[i], static_cast<int32_t>(i));
  ranked_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank)  // ranks up to 2^24 are exact as floats
    ranked_.emplace(pair_key(merges[rank].left, merges[rank].right), Merge{-static_cast<float>(rank), merges[rank].result});
}

std::optional<BpeMerger::Merge> BpeMerger::best(std::string_view left, std::string_view right, std::string_view both) const {
  if (scores_) {
    const int32_t id = find(both);
    if (id < 0) return std::nullopt;
    return Merge{(*scores_)[id], id};
  }
  const int32_t l = find(left), r = l < 0 ? -1 : find(right);
  if (r < 0) return std::nullopt;
  auto it = ranked_.find(pair_key(l, r));
  if (it == ranked_.end()) return std::nullopt;
  return it->second;
}

int32_t BpeMerger::find(std::string_view piece) const {
  auto it = ids_.find(piece);
  return it == ids_.end() ? -1 : it->second;
}

void BpeMerger::encode(std::string_view text, std::vector<int32_t>& out,
                       const std::function<void(std::string_view, std::vector<int32_t>&)>& fallback) const {
  // Symbols are byte ranges of `text` in a doubly linked list; a merged symbol keeps its left
  // neighbour's index, so indices stay in text order and "leftmost" is "smallest index".
  struct Symbol {
    size_t begin, size;
    int prev, next;
  };
  std::vector<Symbol> sym;
  for (size_t i = 0; i < text.size();) {
    size_t n = 1;
    while (n < 4 && i + n < text.size() && (static_cast<uint8_t>(text[i + n]) & 0xC0) == 0x80) ++n;
    sym.push_back({i, n, static_cast<int>(sym.size()) - 1, static_cast<int>(sym.size()) + 1});
    i += n;
  }
  if (sym.empty()) return;
  sym.back().next = -1;

  struct Pair {
    float priority;
    int left;
    size_t size;  // bytes of the merged piece: a stale pair no longer matches its symbols
    int32_t id;
  };
  auto worse = [](const Pair& a, const Pair& b) { return a.priority < b.priority || (a.priority == b.priority && a.left > b.left); };
  std::priority_queue<Pair, std::vector<Pair>, decltype(worse)> agenda(worse);
  auto try_pair = [&](int left) {
    if (left < 0 || sym[left].next < 0) return;
    const Symbol& l = sym[left];
    const Symbol& r = sym[l.next];
    const size_t size = l.size + r.size;
    const auto m = best(text.substr(l.begin, l.size), text.substr(r.begin, r.size), text.substr(l.begin, size));
    if (m) agenda.push({m->priority, left, size, m->id});
  };
  for (int i = 0; i + 1 < static_cast<int>(sym.size()); ++i) try_pair(i);

  while (!agenda.empty()) {
    const Pair p = agenda.top();
    agenda.pop();
    Symbol& l = sym[p.left];
    if (l.size == 0 || l.next < 0 || l.size + sym[l.next].size != p.size) continue;  // stale
    Symbol& r = sym[l.next];
    l.size += r.size;
    r.size = 0;
    l.next = r.next;
    if (l.next >= 0) sym[l.next].prev = p.left;
    try_pair(l.prev);
    try_pair(p.left);
  }

  for (int i = 0; i >= 0; i = sym[i].next) {
    const std::string_view s = text.substr(sym[i].begin, sym[i].size);
    const int32_t id = find(s);
    if (id >= 0)
      out.push_back(id);
    else
      fallback(s, out);
  }
}

}  // namespace wl::tok
