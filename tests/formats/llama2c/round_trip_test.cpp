// Hugging Face tensors → writer → reader gives the same tensors, for every version; the files
// the writer makes are laid out as llama2.c's export lays them out.
#include <algorithm>
#include <cmath>
#include <functional>

#include "formats/llama2c/l2c_test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/error.hpp"

namespace wl::test {
namespace {

std::vector<float> as_vector(const TensorView& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

// Arbitrary values in [-1, 1), different in every tensor (a splitmix64 step of name and index).
float noise(const std::string& name, uint64_t i) {
  uint64_t z = std::hash<std::string>{}(name) + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / static_cast<float>(1 << 23) - 1.0f;
}

// Values that int8 groups of 8 hold exactly: k * 2^-6 with |k| <= 127, each group reaching 127.
float exact_in_groups_of_8(const std::string& name, uint64_t i) {
  const int k = i % 8 == 3 ? 127 : static_cast<int>(std::hash<std::string>{}(name) % 200 + i * 37) % 255 - 127;
  return std::ldexp(static_cast<float>(i % 16 == 11 ? -k : k), -6);
}

void expect_round_trip(const Llama2cHeader& h, float (*fill)(const std::string&, uint64_t)) {
  SCOPED_TRACE("version " + std::to_string(h.version) + (h.shared_classifier ? ", shared" : ", unshared"));
  TempDir dir;
  const std::string path = dir.file("model.bin");
  const auto tensors = hf_tensors(h, fill);
  write_llama2c(path, h, tensors);

  EXPECT_EQ(read_llama2c_header(path), h);
  const FileFormat* detected = detect_file_format(path);
  ASSERT_NE(detected, nullptr);
  EXPECT_EQ(detected->name, "llama2c");
  const Catalogue c = read_llama2c_catalogue(path);
  EXPECT_EQ(c.metadata.at("tie_word_embeddings"), h.shared_classifier ? "true" : "false");
  ASSERT_EQ(c.tensors.size(), tensors.size());
  const auto values = load_all(c);
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(values.contains(name));
    EXPECT_EQ(values.at(name), as_vector(tensor));
  }
}

TEST(Llama2cRoundTrip, V0SharedAndUnshared) {
  expect_round_trip(tiny_header(0, true), noise);
  expect_round_trip(tiny_header(0, false), noise);
}

TEST(Llama2cRoundTrip, V1SharedAndUnshared) {
  expect_round_trip(tiny_header(1, true), noise);
  expect_round_trip(tiny_header(1, false), noise);
}

TEST(Llama2cRoundTrip, V2ExactlyRepresentableValues) {
  expect_round_trip(tiny_header(2, true), exact_in_groups_of_8);
  expect_round_trip(tiny_header(2, false), exact_in_groups_of_8);
}

TEST(Llama2cRoundTrip, V2QuantisesAsLlama2cExport) {
  const Llama2cHeader h = tiny_header(2, false);
  TempDir dir;
  const std::string path = dir.file("q.bin");
  const auto tensors = hf_tensors(h, noise);
  write_llama2c(path, h, tensors);
  const Catalogue c = read_llama2c_catalogue(path);
  const auto values = load_all(c);
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    const std::vector<float> x = as_vector(tensor), got = values.at(name);
    const bool norm = name.ends_with("norm.weight");
    if (norm) {
      EXPECT_EQ(got, x);
      continue;
    }
    // Quantisation groups run along each stored row (q/k rows are permuted whole, so a group of
    // a row of 16 values stays within one row); dequantise group by group here.
    const uint64_t row = tensor.shape()[1];
    const auto& info =
        *std::find_if(c.tensors.begin(), c.tensors.end(), [&, &name = name](const TensorInfo& t) { return t.name == name; });
    EXPECT_EQ(info.stored_type(), "Q8_0/g8");
    for (uint64_t r = 0; r < tensor.shape()[0]; ++r)
      for (uint64_t g = 0; g < row; g += 8) {
        float max_abs = 0;
        for (uint64_t i = 0; i < 8; ++i) max_abs = std::max(max_abs, std::fabs(x[r * row + g + i]));
        const float scale = max_abs / 127.0f;
        for (uint64_t i = 0; i < 8; ++i) {
          const uint64_t at = r * row + g + i;
          EXPECT_EQ(got[at], std::nearbyint(x[at] / scale) * scale) << at;
          EXPECT_LE(std::fabs(got[at] - x[at]), scale / 2 * 1.0001f) << at;
        }
      }
  }
}

TEST(Llama2cRoundTrip, V1AndV2BytesFollowExportPy) {
  const Llama2cHeader h1 = tiny_header(1, false);
  const Fields fields = {16, 24, 2, 4, 2, 10, 6};
  TempDir dir;
  const auto tensors = hf_tensors(h1, exact_in_groups_of_8);
  write_llama2c(dir.file("v1.bin"), h1, tensors);
  const std::string v1 = read_bytes(dir.file("v1.bin"));
  EXPECT_EQ(v1.substr(0, 256), magic_header(1, fields, 0));
  EXPECT_EQ(v1.size(), 256 + 4 * f32_body_floats(fields, false, false));
  // Norms first: input_layernorm of both layers, post_attention of both, final; then the embedding.
  const uint64_t embed = 256 + 4 * (2 * 16 + 2 * 16 + 16);
  EXPECT_EQ(float_at(v1, 256 + 4 * 16), tensors[2 + 9].second.data<float>()[0]);  // layer 1 input_layernorm
  EXPECT_EQ(float_at(v1, embed + 4 * 7), tensors[0].second.data<float>()[7]);
  EXPECT_EQ(float_at(v1, v1.size() - 4), tensors.back().second.data<float>()[10 * 16 - 1]);  // lm_head last

  Llama2cHeader h2 = h1;
  h2.version = 2;
  h2.group_size = 8;
  write_llama2c(dir.file("v2.bin"), h2, tensors);
  const std::string v2 = read_bytes(dir.file("v2.bin"));
  EXPECT_EQ(v2.substr(0, 256), magic_header(2, fields, 0, 8));
  // The embedding: 160 int8 values, then its 20 scales; each value is int8 * scale.
  const float* e = tensors[0].second.data<float>();
  for (uint64_t i : {0u, 9u, 100u, 159u}) {
    const float scale = float_at(v2, embed + 160 + 4 * (i / 8));
    EXPECT_EQ(static_cast<float>(static_cast<int8_t>(v2[embed + i])) * scale, e[i]) << i;
  }
  // Then layer 0's q_proj, its rows back in the interleaved layout: stored row 1 is HF row 2.
  const uint64_t q0 = embed + 160 + 4 * 20;
  const float* q = tensors[3].second.data<float>();
  ASSERT_EQ(tensors[3].first, "model.layers.0.self_attn.q_proj.weight");
  const float q_scale = float_at(v2, q0 + 256 + 4 * 2);  // group 2 = stored row 1, first half
  for (uint64_t i = 0; i < 8; ++i)
    EXPECT_EQ(static_cast<float>(static_cast<int8_t>(v2[q0 + 16 + i])) * q_scale, q[2 * 16 + i]) << i;
  uint64_t body = 4 * (2 * 16 + 2 * 16 + 16);
  for (uint64_t n : {160u, 2 * 256u, 2 * 128u, 2 * 128u, 2 * 256u, 2 * 384u, 2 * 384u, 2 * 384u, 160u})
    body += n + 4 * n / 8;
  EXPECT_EQ(v2.size(), 256 + body);
}

// The real model through the writer: v0 gives back the very same file (the rotary tables are
// recomputed, to within float32 rounding); v1 and v2 read back as the same tensors.
TEST(Llama2cRoundTrip, Stories260KThroughEveryVersion) {
  WL_REQUIRE_TESTDATA();
  const Catalogue c = read_llama2c_catalogue(stories_path());
  const WeightSource source("llama2c", stories_path(), c);
  std::vector<std::pair<std::string, TensorView>> tensors;
  for (const TensorInfo& t : source.tensors()) tensors.emplace_back(t.name, source.load(t));
  Llama2cHeader h = read_llama2c_header(stories_path());
  TempDir dir;

  write_llama2c(dir.file("v0.bin"), h, tensors);
  const std::string original = read_bytes(stories_path()), v0 = read_bytes(dir.file("v0.bin"));
  ASSERT_EQ(v0.size(), original.size());
  const uint64_t rope = original.size() - 2 * 4 * 512 * 4;  // the tables close a shared-classifier file
  EXPECT_TRUE(v0.compare(0, rope, original, 0, rope) == 0);
  for (uint64_t at = rope; at < original.size(); at += 4)
    ASSERT_NEAR(float_at(v0, at), float_at(original, at), 1e-6) << at;

  h.version = 1;
  write_llama2c(dir.file("v1.bin"), h, tensors);
  const auto v1 = load_all(read_llama2c_catalogue(dir.file("v1.bin")));
  for (const auto& [name, tensor] : tensors) EXPECT_EQ(v1.at(name), as_vector(tensor)) << name;

  // Group 32: the down_proj rows (172 values) straddle groups, as export.py allows.
  h.version = 2;
  h.group_size = 32;
  write_llama2c(dir.file("v2.bin"), h, tensors);
  const Catalogue c2 = read_llama2c_catalogue(dir.file("v2.bin"));
  const auto v2 = load_all(c2);
  for (const auto& [name, tensor] : tensors) {
    const std::vector<float> x = as_vector(tensor);
    float max_abs = 0, max_err = 0;
    for (uint64_t i = 0; i < x.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(x[i]));
      max_err = std::max(max_err, std::fabs(v2.at(name)[i] - x[i]));
    }
    EXPECT_LE(max_err, max_abs / 127.0f / 2 * 1.0001f) << name;
  }
  // Slices of a split, row-permuted tensor read the same values as the whole tensor.
  const WeightSource s2("llama2c", dir.file("v2.bin"), c2);
  const TensorInfo& q = s2.at("model.layers.3.self_attn.q_proj.weight");
  std::vector<float> rows(10 * 64);
  s2.read(q, DType::F32, rows.data(), {0, 21, 31});
  const auto& whole = v2.at(q.name);
  EXPECT_EQ(rows, std::vector<float>(whole.begin() + 21 * 64, whole.begin() + 31 * 64));
}

TEST(Llama2cWriter, RejectsTensorsThatDoNotFitTheHeader) {
  TempDir dir;
  const std::string path = dir.file("bad.bin");
  const Llama2cHeader h = tiny_header(0, true);
  auto tensors = hf_tensors(h, noise);

  auto missing = tensors;
  missing.erase(missing.begin() + 3);
  expect_error(ErrorCode::TensorNotFound, [&] { write_llama2c(path, h, missing); });

  auto extra = tensors;
  extra.emplace_back("lm_head.weight", TensorView::empty(DType::F32, {10, 16}));
  EXPECT_NE(expect_error(ErrorCode::InvalidArgument, [&] { write_llama2c(path, h, extra); }).find("shared"),
            std::string::npos);

  auto twice = tensors;
  twice.push_back(tensors[1]);
  expect_error(ErrorCode::DuplicateTensorName, [&] { write_llama2c(path, h, twice); });

  auto wrong = tensors;
  wrong[4].second = TensorView::empty(DType::F32, {16, 16});  // k_proj is [8, 16]
  expect_error(ErrorCode::ShapeMismatch, [&] { write_llama2c(path, h, wrong); });

  Llama2cHeader bad = h;
  bad.n_kv_heads = 3;
  expect_error(ErrorCode::Llama2cInconsistentHeads, [&] { write_llama2c(path, bad, tensors); });
  bad = tiny_header(2, true);
  bad.group_size = 5;
  expect_error(ErrorCode::Llama2cInvalidGroupSize, [&] { write_llama2c(path, bad, tensors); });
  bad.version = 3;
  expect_error(ErrorCode::Llama2cUnsupportedVersion, [&] { write_llama2c(path, bad, tensors); });

  auto nan = tensors;
  nan[0].second = TensorView::empty(DType::F32, {10, 16});
  std::fill_n(nan[0].second.data<float>(), 160, 0.0f);
  nan[0].second.data<float>()[17] = NAN;
  expect_error(ErrorCode::InvalidArgument, [&] { write_llama2c(path, tiny_header(2, true), nan); });
  EXPECT_TRUE(fs::is_empty(dir.path()));  // nothing half-written is left
}

TEST(Llama2cWriter, ConvertsOtherDTypes) {
  TempDir dir;
  const Llama2cHeader h = tiny_header(1, true);
  auto tensors = hf_tensors(h, exact_in_groups_of_8);
  std::vector<std::pair<std::string, TensorView>> bf16;
  for (const auto& [name, t] : tensors) bf16.emplace_back(name, t.to(DType::BF16));
  write_llama2c(dir.file("m.bin"), h, bf16);
  const auto values = load_all(read_llama2c_catalogue(dir.file("m.bin")));
  for (const auto& [name, t] : tensors) EXPECT_EQ(values.at(name), as_vector(t)) << name;  // exact in bf16
}

}  // namespace
}  // namespace wl::test
