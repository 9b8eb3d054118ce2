// The {arch}.* keys that llama.cpp's converter writes for every architecture, and how a family's
// own keys join them.
#include <algorithm>

#include "families/family.hpp"

namespace wl {

namespace {

using Q = GgufQuantity;
using W = GgufKey::Write;

constexpr GgufKey kCommon[] = {
    {.suffix = "embedding_length", .quantity = Q::EmbeddingLength, .required = true},
    {.suffix = "block_count", .quantity = Q::BlockCount, .required = true},
    {.suffix = "feed_forward_length", .quantity = Q::FeedForwardLength, .required = true},
    {.suffix = "attention.head_count", .quantity = Q::HeadCount, .required = true},
    {.suffix = "attention.head_count_kv", .quantity = Q::HeadCountKv, .absent_as = Q::HeadCount},
    {.suffix = "attention.key_length", .quantity = Q::KeyLength, .write = W::WhenNotAbsent,
     .absent_as = Q::EmbeddingLength, .absent_per = Q::HeadCount},
    {.suffix = "attention.value_length", .quantity = Q::ValueLength, .write = W::WhenNotAbsent,
     .absent_as = Q::EmbeddingLength, .absent_per = Q::HeadCount},
    {.suffix = "rope.dimension_count", .quantity = Q::RopeDimensionCount, .write = W::Never, .absent_as = Q::KeyLength},
    {.suffix = "context_length", .quantity = Q::ContextLength, .absent = 2048},
    {.suffix = "attention.layer_norm_rms_epsilon", .quantity = Q::RmsNormEps, .absent = 1e-5},
    // llama.cpp reads rope.freq_base and vocab_size for every architecture; vocab_size sizes the
    // embedding when there is no vocabulary.
    {.suffix = "rope.freq_base", .quantity = Q::RopeFreqBase, .absent = 10000},
    {.suffix = "vocab_size", .quantity = Q::VocabSize},
};

}  // namespace

std::vector<GgufKey> gguf_keys(const GgufArchitecture& a) {
  std::vector<GgufKey> out(std::begin(kCommon), std::end(kCommon));
  for (const GgufKey& k : a.keys) {
    auto same = std::find_if(out.begin(), out.end(), [&](const GgufKey& c) { return c.suffix == k.suffix; });
    if (same != out.end()) *same = k;
    else out.push_back(k);
  }
  return out;
}

}  // namespace wl
