// The merge step of every BPE tokenizer here: text split into UTF-8 symbols, then the best adjacent
// pair merged, the leftmost on ties, until no pair merges. "Best" has two meanings:
// - scored (llama2.c's run.c, SentencePiece's BPE model): the pair whose concatenation is the
//   best-scoring piece;
// - ranked (GPT-2's byte-level BPE as Hugging Face's tokenizers and llama.cpp run it): the pair that
//   is the earliest rule of a merges list, whatever other pairs spell the same text.
// A priority queue makes it O(n log n) (run.c's rescanning loop is O(n^2)) with the same result.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wl::tok {

// One rule of a merges list: the pieces `left` and `right`, side by side, become `result`.
struct RankedMerge {
  int32_t left, right, result;
};

class BpeMerger {
 public:
  // Scored. `pieces` and `scores` must outlive the merger; only ids for which `mergeable` holds are
  // looked up (several ids with one text: the lowest).
  BpeMerger(const std::vector<std::string>& pieces, const std::vector<float>& scores,
            const std::function<bool(int32_t)>& mergeable);
  // Ranked: `merges` in rank order (the first merges first; a pair listed twice keeps its first rank).
  BpeMerger(const std::vector<std::string>& pieces, const std::function<bool(int32_t)>& mergeable,
            const std::vector<RankedMerge>& merges);

  // The id of a mergeable piece, or -1.
  int32_t find(std::string_view piece) const;

  // Appends the ids of `text` to `out`. A UTF-8 symbol starts at every byte that is not a
  // continuation byte (10xxxxxx) and takes up to 3 continuation bytes after it, as run.c splits.
  // A final symbol that is no piece goes to `fallback` (its bytes, the output vector).
  void encode(std::string_view text, std::vector<int32_t>& out,
              const std::function<void(std::string_view, std::vector<int32_t>&)>& fallback) const;

 private:
  struct Merge {
    float priority;  // higher merges first: a score, or minus a rank
    int32_t id;
  };
  std::optional<Merge> best(std::string_view left, std::string_view right, std::string_view both) const;

  const std::vector<float>* scores_ = nullptr;  // null when ranked
  std::unordered_map<std::string_view, int32_t> ids_;
  std::unordered_map<uint64_t, Merge> ranked_;  // (left id << 32 | right id) -> (-rank, result)
};

}  // namespace wl::tok
