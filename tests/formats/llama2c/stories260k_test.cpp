// The real stories260K.bin (llama2.c v0) read as Hugging Face tensors, checked against values
// taken straight from the file at offsets computed here.
#include "formats/llama2c/l2c_test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/error.hpp"

namespace wl::test {
namespace {

constexpr uint64_t kDim = 64, kHidden = 172, kLayers = 5, kHeads = 8, kKvHeads = 4, kVocab = 512, kSeq = 512;
constexpr uint64_t kHead = kDim / kHeads, kKv = kKvHeads * kHead;

// v0 byte offsets of the stacked arrays, straight from llama2.c's legacy export order.
constexpr uint64_t kEmbed = 28;
constexpr uint64_t kRmsAtt = kEmbed + 4 * kVocab * kDim;
constexpr uint64_t kWq = kRmsAtt + 4 * kLayers * kDim;
constexpr uint64_t kWk = kWq + 4 * kLayers * kDim * kDim;
constexpr uint64_t kWv = kWk + 4 * kLayers * kKv * kDim;
constexpr uint64_t kWo = kWv + 4 * kLayers * kKv * kDim;
constexpr uint64_t kRmsFfn = kWo + 4 * kLayers * kDim * kDim;
constexpr uint64_t kW1 = kRmsFfn + 4 * kLayers * kDim;
constexpr uint64_t kW2 = kW1 + 4 * kLayers * kHidden * kDim;
constexpr uint64_t kW3 = kW2 + 4 * kLayers * kDim * kHidden;
constexpr uint64_t kRmsFinal = kW3 + 4 * kLayers * kHidden * kDim;
constexpr uint64_t kRope = kRmsFinal + 4 * kDim;
constexpr uint64_t kEnd = kRope + 2 * 4 * kSeq * kHead / 2;

std::string layer(uint64_t l, const std::string& suffix) { return "model.layers." + std::to_string(l) + "." + suffix; }

// Interleaved → Hugging Face as docs/FORMATS.md writes it, literally:
// W.reshape(heads, d/2, 2, dim).transpose(1, 2).reshape(heads*d, dim).
std::vector<float> interleaved_to_hf(const std::vector<float>& w, uint64_t heads, uint64_t d, uint64_t dim) {
  std::vector<float> out(w.size());
  for (uint64_t h = 0; h < heads; ++h)
    for (uint64_t a = 0; a < d / 2; ++a)
      for (uint64_t b = 0; b < 2; ++b)
        for (uint64_t c = 0; c < dim; ++c)
          out[((h * 2 + b) * (d / 2) + a) * dim + c] = w[((h * (d / 2) + a) * 2 + b) * dim + c];
  return out;
}

std::vector<float> floats_at(const std::string& bytes, uint64_t offset, uint64_t n) {
  std::vector<float> out(n);
  std::memcpy(out.data(), bytes.data() + offset, n * sizeof(float));
  return out;
}

TEST(Llama2cStories260K, HeaderAndSniffing) {
  WL_REQUIRE_TESTDATA();
  const Llama2cHeader h = read_llama2c_header(stories_path());
  EXPECT_EQ(h.version, 0);
  EXPECT_EQ(h.dim, kDim);
  EXPECT_EQ(h.hidden_dim, kHidden);
  EXPECT_EQ(h.n_layers, kLayers);
  EXPECT_EQ(h.n_heads, kHeads);
  EXPECT_EQ(h.n_kv_heads, kKvHeads);
  EXPECT_EQ(h.vocab_size, kVocab);
  EXPECT_EQ(h.seq_len, kSeq);
  EXPECT_TRUE(h.shared_classifier);
  EXPECT_EQ(h.group_size, 0u);
  ASSERT_EQ(std::filesystem::file_size(stories_path()), kEnd);
  const FileFormat* detected = detect_file_format(stories_path());
  ASSERT_NE(detected, nullptr);
  EXPECT_EQ(detected->name, "llama2c");
}

TEST(Llama2cStories260K, CatalogueNamesShapesAndMetadata) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_llama2c_catalogue(stories_path());
  const std::map<std::string, std::string> metadata = {
      {"version", "0"},     {"dim", "64"},          {"hidden_dim", "172"},       {"n_layers", "5"},
      {"n_heads", "8"},     {"n_kv_heads", "4"},    {"vocab_size", "512"},       {"seq_len", "512"},
      {"shared_classifier", "true"}, {"tie_word_embeddings", "true"}};
  EXPECT_EQ(c.metadata, metadata);

  std::map<std::string, std::pair<Shape, uint64_t>> expected = {  // shape, offset
      {"model.embed_tokens.weight", {{kVocab, kDim}, kEmbed}},
      {"model.norm.weight", {{kDim}, kRmsFinal}}};
  for (uint64_t l = 0; l < kLayers; ++l) {
    expected[layer(l, "input_layernorm.weight")] = {{kDim}, kRmsAtt + 4 * l * kDim};
    expected[layer(l, "self_attn.q_proj.weight")] = {{kDim, kDim}, kWq + 4 * l * kDim * kDim};
    expected[layer(l, "self_attn.k_proj.weight")] = {{kKv, kDim}, kWk + 4 * l * kKv * kDim};
    expected[layer(l, "self_attn.v_proj.weight")] = {{kKv, kDim}, kWv + 4 * l * kKv * kDim};
    expected[layer(l, "self_attn.o_proj.weight")] = {{kDim, kDim}, kWo + 4 * l * kDim * kDim};
    expected[layer(l, "post_attention_layernorm.weight")] = {{kDim}, kRmsFfn + 4 * l * kDim};
    expected[layer(l, "mlp.gate_proj.weight")] = {{kHidden, kDim}, kW1 + 4 * l * kHidden * kDim};
    expected[layer(l, "mlp.down_proj.weight")] = {{kDim, kHidden}, kW2 + 4 * l * kDim * kHidden};
    expected[layer(l, "mlp.up_proj.weight")] = {{kHidden, kDim}, kW3 + 4 * l * kHidden * kDim};
  }
  ASSERT_EQ(c.tensors.size(), expected.size());
  uint64_t previous_offset = 0;
  for (const TensorInfo& t : c.tensors) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE(expected.contains(t.name));
    EXPECT_EQ(t.shape, expected[t.name].first);
    EXPECT_EQ(t.offset, expected[t.name].second);
    EXPECT_EQ(t.nbytes, 4 * t.numel());
    EXPECT_EQ(t.dtype, DType::F32);
    EXPECT_EQ(t.decoder, nullptr);
    EXPECT_EQ(c.file_of(t), stories_path());
    EXPECT_GT(t.offset, previous_offset);  // file order
    previous_offset = t.offset;
    const bool rotary = t.name.ends_with("q_proj.weight") || t.name.ends_with("k_proj.weight");
    EXPECT_EQ(t.row_order.empty(), !rotary);
  }
  EXPECT_EQ(c.tensors.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(c.tensors.back().name, "model.norm.weight");
}

TEST(Llama2cStories260K, ValuesMatchTheFileAtComputedOffsets) {
  WL_REQUIRE_TESTDATA();
  const std::string bytes = read_bytes(stories_path());
  const auto values = load_all(read_llama2c_catalogue(stories_path()));

  EXPECT_EQ(values.at("model.embed_tokens.weight")[3 * kDim + 5], float_at(bytes, kEmbed + 4 * (3 * kDim + 5)));
  EXPECT_EQ(values.at(layer(2, "input_layernorm.weight"))[7], float_at(bytes, kRmsAtt + 4 * (2 * kDim + 7)));
  EXPECT_EQ(values.at(layer(4, "self_attn.v_proj.weight"))[kKv * kDim - 1],
            float_at(bytes, kWv + 4 * (5 * kKv * kDim - 1)));
  EXPECT_EQ(values.at(layer(1, "self_attn.o_proj.weight"))[9 * kDim + 2],
            float_at(bytes, kWo + 4 * (kDim * kDim + 9 * kDim + 2)));
  EXPECT_EQ(values.at(layer(3, "post_attention_layernorm.weight"))[0], float_at(bytes, kRmsFfn + 4 * 3 * kDim));
  EXPECT_EQ(values.at(layer(0, "mlp.gate_proj.weight"))[171 * kDim + 63], float_at(bytes, kW1 + 4 * (171 * kDim + 63)));
  EXPECT_EQ(values.at(layer(4, "mlp.down_proj.weight"))[5 * kHidden + 100],
            float_at(bytes, kW2 + 4 * (4 * kDim * kHidden + 5 * kHidden + 100)));
  EXPECT_EQ(values.at(layer(2, "mlp.up_proj.weight"))[1], float_at(bytes, kW3 + 4 * (2 * kHidden * kDim + 1)));
  EXPECT_EQ(values.at("model.norm.weight"), floats_at(bytes, kRmsFinal, kDim));
  // The rotary tables after the final norm are llama2.c's cos/sin of pos * 10000^(-2j/d).
  EXPECT_EQ(float_at(bytes, kRope), 1.0f);
  EXPECT_NEAR(float_at(bytes, kRope + 4 * (kHead / 2)), std::cos(1.0f), 1e-6);

  // q/k: every row is the permuted stored row, for every layer.
  for (uint64_t l = 0; l < kLayers; ++l) {
    SCOPED_TRACE(l);
    const auto q_stored = floats_at(bytes, kWq + 4 * l * kDim * kDim, kDim * kDim);
    const auto k_stored = floats_at(bytes, kWk + 4 * l * kKv * kDim, kKv * kDim);
    EXPECT_EQ(values.at(layer(l, "self_attn.q_proj.weight")), interleaved_to_hf(q_stored, kHeads, kHead, kDim));
    EXPECT_EQ(values.at(layer(l, "self_attn.k_proj.weight")), interleaved_to_hf(k_stored, kKvHeads, kHead, kDim));
  }
  // One row spelled out: HF row 13 of head 1 is its second half's j = 1, stored row 8 + 2*1 + 1.
  const auto& q1 = values.at(layer(1, "self_attn.q_proj.weight"));
  const auto stored_row = floats_at(bytes, kWq + 4 * (kDim * kDim + 11 * kDim), kDim);
  EXPECT_EQ(std::vector<float>(q1.begin() + 13 * kDim, q1.begin() + 14 * kDim), stored_row);
  EXPECT_NE(stored_row, floats_at(bytes, kWq + 4 * (kDim * kDim + 13 * kDim), kDim));
}

TEST(Llama2cStories260K, RowSlicesOfPermutedTensors) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_llama2c_catalogue(stories_path());
  const WeightSource source("llama2c", stories_path(), c);
  const TensorInfo& k = source.at(layer(2, "self_attn.k_proj.weight"));
  std::vector<float> whole(k.numel()), rows(5 * kDim), cols(kKv * 3);
  source.read(k, DType::F32, whole.data());
  source.read(k, DType::F32, rows.data(), {0, 9, 14});
  EXPECT_EQ(rows, std::vector<float>(whole.begin() + 9 * kDim, whole.begin() + 14 * kDim));
  source.read(k, DType::F32, cols.data(), {1, 10, 13});
  for (uint64_t r = 0; r < kKv; ++r)
    for (uint64_t j = 0; j < 3; ++j) EXPECT_EQ(cols[r * 3 + j], whole[r * kDim + 10 + j]);
}

}  // namespace
}  // namespace wl::test
