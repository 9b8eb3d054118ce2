// The merge step llama2.c's run.c and SentencePiece's BPE model share: text split into UTF-8
// symbols, then the adjacent pair whose concatenation is the best-scoring piece merged, the leftmost
// pair on equal scores, until no pair is a piece. A priority queue makes it O(n log n) (run.c's
// rescanning loop is O(n^2)) with the same result.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace wl::tok {

class BpeMerger {
 public:
  // `pieces` must outlive the merger; only ids for which `mergeable` holds are looked up (several
  // ids with one text: the lowest).
  BpeMerger(const std::vector<std::string>& pieces, const std::vector<float>& scores,
            const std::function<bool(int32_t)>& mergeable);

  // The id of a mergeable piece, or -1.
  int32_t find(std::string_view piece) const;

  // Appends the ids of `text` to `out`. A UTF-8 symbol starts at every byte that is not a
  // continuation byte (10xxxxxx) and takes up to 3 continuation bytes after it, as run.c splits.
  // A final symbol that is no piece goes to `fallback` (its bytes, the output vector).
  void encode(std::string_view text, std::vector<int32_t>& out,
              const std::function<void(std::string_view, std::vector<int32_t>&)>& fallback) const;

 private:
  const std::vector<float>& scores_;
  std::unordered_map<std::string_view, int32_t> ids_;
};

}  // namespace wl::tok
