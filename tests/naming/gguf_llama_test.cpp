// A GGUF Llama seen through the "gguf" naming scheme: its stored names as Hugging Face's, and its
// q/k rows between the interleaved rotary layout GGUF stores and the Hugging Face layout, through
// writer -> format entry round trips.

#include "formats/gguf/gguf_test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl::test {
namespace {

constexpr uint64_t kHidden = 32, kHeads = 4, kKvHeads = 2, kLayers = 2;

TensorView filled(Shape shape, uint32_t seed) { return seeded_f32(std::move(shape), seed, 1.0f); }

// A small Llama with Hugging Face names (hidden 32, 4 heads of 8, 2 kv heads), with q/k biases
// and a tensor outside the name table.
std::vector<GgufWriteTensor> hf_llama(GgmlType matrix_type) {
  std::vector<GgufWriteTensor> t;
  uint32_t seed = 1;
  auto add = [&](std::string name, Shape shape, GgmlType type) { t.push_back({std::move(name), filled(shape, seed++), type}); };
  add("model.embed_tokens.weight", {5, kHidden}, GgmlType::F32);
  for (uint64_t l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {kHidden}, GgmlType::F32);
    add(p + "self_attn.q_proj.weight", {kHidden, kHidden}, matrix_type);
    add(p + "self_attn.q_proj.bias", {kHidden}, GgmlType::F32);
    add(p + "self_attn.k_proj.weight", {kHidden / 2, kHidden}, matrix_type);
    add(p + "self_attn.k_proj.bias", {kHidden / 2}, GgmlType::F32);
    add(p + "self_attn.v_proj.weight", {kHidden / 2, kHidden}, matrix_type);
    add(p + "self_attn.o_proj.weight", {kHidden, kHidden}, matrix_type);
    add(p + "post_attention_layernorm.weight", {kHidden}, GgmlType::F32);
    add(p + "mlp.gate_proj.weight", {64, kHidden}, matrix_type);
    add(p + "mlp.up_proj.weight", {64, kHidden}, matrix_type);
    add(p + "mlp.down_proj.weight", {kHidden, 64}, matrix_type);
  }
  add("model.norm.weight", {kHidden}, GgmlType::F32);
  add("lm_head.weight", {5, kHidden}, GgmlType::F32);
  add("rope_freqs.weight", {4}, GgmlType::F32);
  return t;
}

// As the converter writes a Hugging Face Llama: GGUF's stored names, q/k rows interleaved.
std::vector<GgufWriteTensor> stored_as_gguf(std::vector<GgufWriteTensor> tensors, uint64_t kv_heads = kKvHeads) {
  for (GgufWriteTensor& t : tensors) {
    const auto c = to_canonical("hf", t.name);
    if (c && c->rotary)
      t.row_order = rotary_row_order(t.tensor.shape()[0], c->kv ? kv_heads : kHeads, RotaryOrder::HfAsInterleaved,
                                     {ErrorCode::GgufHeadCount, "the test's heads", ""}, t.name);
    t.name = from_canonical("gguf", t.name).value_or(t.name);
  }
  return tensors;
}

GgufMetadata llama_metadata() {
  return {{"general.architecture", std::string("llama")},
          {"llama.attention.head_count", uint32_t{kHeads}},
          {"llama.attention.head_count_kv", uint32_t{kKvHeads}}};
}

// The catalogue every loader sees: the "gguf" format entry's.
Catalogue presented(const std::string& path) {
  return gguf_format().read_catalogue(*local_opener()->open(path), *local_opener());
}

// FORMATS.md's HF -> interleaved: W.reshape(heads, 2, d/2, dim).transpose(1, 2).reshape(heads*d, dim),
// spelled out as index arithmetic on rows.
std::vector<float> hf_to_interleaved(const std::vector<float>& w, uint64_t heads, uint64_t rows) {
  const uint64_t d = rows / heads, dim = w.size() / rows;
  std::vector<float> out(w.size());
  for (uint64_t h = 0; h < heads; ++h)
    for (uint64_t a = 0; a < 2; ++a)
      for (uint64_t b = 0; b < d / 2; ++b)
        for (uint64_t c = 0; c < dim; ++c)  // source [h][a][b][c] -> destination [h][b][a][c]
          out[((h * (d / 2) + b) * 2 + a) * dim + c] = w[((h * 2 + a) * (d / 2) + b) * dim + c];
  return out;
}

TEST(GgufLlama, NameTable) {
  const std::pair<const char*, const char*> pairs[] = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
      {"blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"},
      {"blk.12.attn_q.weight", "model.layers.12.self_attn.q_proj.weight"},
      {"blk.3.attn_k.bias", "model.layers.3.self_attn.k_proj.bias"},
      {"blk.3.attn_v.weight", "model.layers.3.self_attn.v_proj.weight"},
      {"blk.3.attn_output.weight", "model.layers.3.self_attn.o_proj.weight"},
      {"blk.7.ffn_norm.weight", "model.layers.7.post_attention_layernorm.weight"},
      {"blk.7.ffn_gate.weight", "model.layers.7.mlp.gate_proj.weight"},
      {"blk.7.ffn_up.weight", "model.layers.7.mlp.up_proj.weight"},
      {"blk.7.ffn_down.weight", "model.layers.7.mlp.down_proj.weight"},
  };
  for (const auto& [gguf, hf] : pairs) {
    const auto canonical = to_canonical("gguf", gguf);
    ASSERT_TRUE(canonical) << gguf;
    EXPECT_EQ(canonical->name, hf);
    EXPECT_EQ(from_canonical("gguf", hf), gguf);
  }
  for (const char* other : {"rope_freqs.weight", "blk.x.attn_q.weight", "blk.0.attn_q", "blk..attn_q.weight",
                            "blk.0.ffn_gate_exps.weight", "output", "model.layers.0.self_attn.q_proj.weight"})
    EXPECT_EQ(to_canonical("gguf", other), std::nullopt) << other;
  EXPECT_EQ(from_canonical("gguf", "token_embd.weight"), std::nullopt);
}

TEST(GgufLlama, RotaryRowOrder) {
  const HeadCountOrigin origin{ErrorCode::GgufHeadCount, "llama.attention.head_count", "m.gguf"};
  // One head of 6: HF rows are interleaved rows 0, 2, 4 (first halves), then 1, 3, 5.
  EXPECT_EQ(rotary_row_order(6, 1, RotaryOrder::InterleavedAsHf, origin, "q"), (std::vector<uint64_t>{0, 2, 4, 1, 3, 5}));
  EXPECT_EQ(rotary_row_order(6, 1, RotaryOrder::HfAsInterleaved, origin, "q"), (std::vector<uint64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(rotary_row_order(8, 2, RotaryOrder::InterleavedAsHf, origin, "q"), (std::vector<uint64_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  expect_error(ErrorCode::GgufHeadCount, [&] { rotary_row_order(6, 2, RotaryOrder::InterleavedAsHf, origin, "q"); });  // heads of 3
  expect_error(ErrorCode::GgufHeadCount, [&] { rotary_row_order(8, 0, RotaryOrder::InterleavedAsHf, origin, "q"); });
}

// HF names -> GGUF writer (GGUF names, interleaved rows) -> format entry (HF) gives back every tensor.
TEST(GgufLlama, HuggingFaceRoundTripIsExact) {
  const std::vector<GgufWriteTensor> tensors = hf_llama(GgmlType::F32);
  TempDir dir;
  const std::string path = dir.file("llama.gguf");
  write_gguf(path, stored_as_gguf(tensors), llama_metadata());
  const Catalogue hf = presented(path);
  ASSERT_EQ(hf.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(hf.tensors[i].name, tensors[i].name);
    EXPECT_EQ(hf.tensors[i].shape, tensors[i].tensor.shape());
    EXPECT_EQ(gguf_values<float>(hf, tensors[i].name, DType::F32), values_of(tensors[i].tensor)) << tensors[i].name;
  }
  EXPECT_EQ(hf.metadata.at("llama.attention.head_count"), "4");
}

// What the file holds, and what the reader returns: GGUF names, and q/k rows in the interleaved
// layout FORMATS.md describes.
TEST(GgufLlama, StoredLayoutIsInterleaved) {
  const std::vector<GgufWriteTensor> tensors = hf_llama(GgmlType::F32);
  TempDir dir;
  const std::string path = dir.file("llama.gguf");
  write_gguf(path, stored_as_gguf(tensors), llama_metadata());
  const Catalogue raw = read_gguf_catalogue(path);
  for (const GgufWriteTensor& t : tensors) {
    const std::string stored = from_canonical("gguf", t.name).value_or(t.name);
    const TensorInfo* info = nullptr;
    for (const TensorInfo& r : raw.tensors)
      if (r.name == stored) info = &r;
    ASSERT_NE(info, nullptr) << stored;
    EXPECT_TRUE(info->row_order.empty());
    std::vector<float> expected = values_of(t.tensor);
    const uint64_t rows = t.tensor.shape()[0];
    if (t.name.find("q_proj") != std::string::npos) expected = hf_to_interleaved(expected, kHeads, rows);
    if (t.name.find("k_proj") != std::string::npos) expected = hf_to_interleaved(expected, kKvHeads, rows);
    EXPECT_EQ(gguf_values<float>(raw, stored, DType::F32), expected) << stored;
  }
}

// Q8_0 matrices: each stored row is quantised on its own, so the HF view of the interleaved file
// equals the same tensors quantised without any reordering.
TEST(GgufLlama, QuantisedRoundTripKeepsRowsTogether) {
  const std::vector<GgufWriteTensor> q8 = hf_llama(GgmlType::Q8_0);
  TempDir dir;
  write_gguf(dir.file("q8.gguf"), stored_as_gguf(q8), llama_metadata());
  write_gguf(dir.file("plain.gguf"), q8, {});  // the same tensors and types, HF names and rows
  const Catalogue a = presented(dir.file("q8.gguf")), b = presented(dir.file("plain.gguf"));
  for (const GgufWriteTensor& t : q8)
    EXPECT_EQ(gguf_values<float>(a, t.name, DType::F32), gguf_values<float>(b, t.name, DType::F32)) << t.name;
  for (const TensorInfo& info : a.tensors) {
    if (info.name.ends_with("proj.weight")) {
      EXPECT_EQ(info.stored_type(), "Q8_0") << info.name;
    }
  }
  // A row slice of a permuted, quantised tensor reads the right rows.
  const WeightSource source("gguf", "t", a);
  const TensorInfo& q = source.at("model.layers.1.self_attn.q_proj.weight");
  EXPECT_FALSE(q.row_order.empty());
  std::vector<float> rows(3 * kHidden);
  source.read(q, DType::F32, rows.data(), Slice{0, 5, 8});
  const std::vector<float> all = gguf_values<float>(b, q.name, DType::F32);
  EXPECT_EQ(rows, std::vector<float>(all.begin() + 5 * kHidden, all.begin() + 8 * kHidden));
}

TEST(GgufLlama, HeadCountKvDefaultsToHeadCount) {
  GgufMetadata metadata = llama_metadata();
  metadata.erase("llama.attention.head_count_kv");
  std::vector<GgufWriteTensor> tensors = {{"model.layers.0.self_attn.k_proj.weight", filled({16, 4}, 1)}};
  TempDir dir;
  write_gguf(dir.file("m.gguf"), stored_as_gguf(tensors, kHeads), metadata);
  const Catalogue raw = read_gguf_catalogue(dir.file("m.gguf"));
  EXPECT_EQ(gguf_values<float>(raw, "blk.0.attn_k.weight", DType::F32),
            hf_to_interleaved(values_of(tensors[0].tensor), kHeads, 16));
  const Catalogue hf = presented(dir.file("m.gguf"));
  EXPECT_EQ(gguf_values<float>(hf, tensors[0].name, DType::F32), values_of(tensors[0].tensor));
}

TEST(GgufLlama, MissingOrBadHeadCounts) {
  TempDir dir;
  GgufBytes missing;
  missing.header(1, 1).kv_str("general.architecture", "llama").tensor("blk.0.attn_q.weight", {2, 4}, 0, 0).pad();
  missing.raw(std::string(32, '\0'));
  const std::string path = make_gguf(dir, missing);
  const std::string message = expect_error(ErrorCode::GgufHeadCount, [&] { presented(path); });
  expect_contains(message, "llama.attention.head_count is missing");
  expect_contains(message, "blk.0.attn_q.weight");
  EXPECT_EQ(read_gguf_catalogue(path).tensors[0].name, "blk.0.attn_q.weight");

  GgufBytes uneven;  // 4 rows cannot be 3 heads
  uneven.header(1, 2).kv_str("general.architecture", "llama").kv_u32("llama.attention.head_count", 3);
  uneven.tensor("blk.0.attn_q.weight", {2, 4}, 0, 0).pad().raw(std::string(32, '\0'));
  expect_contains(expect_error(ErrorCode::GgufHeadCount, [&] { presented(make_gguf(dir, uneven, "u.gguf")); }),
                  "4 rows do not split into 3 heads of an even size (llama.attention.head_count)");

  GgufBytes text;
  text.header(1, 2).kv_str("general.architecture", "llama").kv_str("llama.attention.head_count", "four");
  text.tensor("blk.0.attn_q.weight", {2, 4}, 0, 0).pad().raw(std::string(32, '\0'));
  expect_contains(expect_error(ErrorCode::GgufHeadCount, [&] { presented(make_gguf(dir, text, "s.gguf")); }),
                  "llama.attention.head_count is four");
}

// A quantised tensor whose rows are not whole blocks cannot be reordered row by row.
TEST(GgufLlama, QuantisedRowsMustBeWholeBlocksToBeReordered) {
  GgufBytes b;
  b.header(1, 2).kv_str("general.architecture", "llama").kv_u32("llama.attention.head_count", 2);
  b.tensor("blk.0.attn_q.bias", {64}, 8, 0).pad().raw(std::string(68, '\0'));
  TempDir dir;
  const std::string path = make_gguf(dir, b);
  expect_contains(expect_error(ErrorCode::GgufUnsupportedTensorType, [&] { presented(path); }),
                  "Q8_0 rows of 1 elements are not whole blocks");
  EXPECT_EQ(read_gguf_catalogue(path).tensors.size(), 1u);
}

// An empty q projection claiming 2^40 rows holds no bytes: no row order is made for it (fuzz_gguf
// found the reorder table sized by that row count: an 8 TiB allocation).
TEST(GgufLlama, AnEmptyProjectionWithHugeRowsAllocatesNothing) {
  GgufBytes b;
  b.header(1, 2).kv_str("general.architecture", "llama").kv_u32("llama.attention.head_count", 2);
  b.tensor("blk.0.attn_q.weight", {0, uint64_t{1} << 40}, 0, 0).pad();
  TempDir dir;
  const Catalogue c = presented(make_gguf(dir, b));
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_EQ(c.tensors[0].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_TRUE(c.tensors[0].row_order.empty());
}

// Other architectures keep their names and rows.
TEST(GgufLlama, OtherArchitecturesAreNotRenamed) {
  GgufBytes b;
  b.header(1, 1).kv_str("general.architecture", "gpt2").tensor("blk.0.attn_q.weight", {1}, 0, 0).pad().le<float>(1);
  TempDir dir;
  const Catalogue c = presented(make_gguf(dir, b));
  EXPECT_EQ(c.tensors[0].name, "blk.0.attn_q.weight");
  EXPECT_TRUE(c.tensors[0].row_order.empty());
}

TEST(GgufLlama, MappedNameCollision) {
  GgufBytes b;
  b.header(2, 1).kv_str("general.architecture", "llama");
  b.tensor("lm_head.weight", {1}, 0, 0).tensor("output.weight", {1}, 0, 32).pad().le<float>(1).pad().le<float>(2);
  TempDir dir;
  const std::string path = make_gguf(dir, b);
  expect_contains(expect_error(ErrorCode::DuplicateTensorName, [&] { presented(path); }),
                  "stored tensor 'output.weight' is presented as 'lm_head.weight'");
  EXPECT_EQ(read_gguf_catalogue(path).tensors.size(), 2u);  // as stored, the names differ
}

}  // namespace
}  // namespace wl::test
