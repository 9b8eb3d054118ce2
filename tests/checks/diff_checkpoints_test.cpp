// diff_checkpoints: equal files, one value changed, NaN, shapes, names on one side, and a GGUF
// file against the checkpoint it was written from.
#include "weightloader/diff_checkpoints.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/formats/safetensors.hpp"
#include "weightloader/name_schemes.hpp"
#include "weightloader/registry.hpp"

namespace wl {
namespace {

std::unique_ptr<WeightSource> open(const std::string& path) {
  return WeightLoaderRegistry::with_builtins()->create("local")->get_weights(path);
}

TensorView values(Shape shape, float start, DType dtype = DType::F32) {
  TensorView t = TensorView::empty(DType::F32, shape);
  for (uint64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + 0.25f * float(i % 97);
  return dtype == DType::F32 ? t : t.to(dtype);
}

using Tensors = std::vector<std::pair<std::string, TensorView>>;

class Diff : public ::testing::Test {
 protected:
  Tensors base() const {
    return {{"a", values({64, 48}, 1.0f)}, {"b", values({300}, -2.0f)}, {"c", values({8, 8}, 0.5f, DType::BF16)},
            {"wide", values({5}, 3.0f, DType::F64)}};
  }
  std::string write(const std::string& name, const Tensors& t) {
    write_safetensors(dir.file(name), t);
    return dir.file(name);
  }
  DiffReport diff(const std::string& x, const std::string& y, DiffOptions o = {}) {
    o.window_bytes = 1024;  // many windows, rows of several tensors in one
    return diff_checkpoints(*open(x), *open(y), o);
  }
  static const TensorDiff& find(const DiffReport& r, const std::string& name) {
    for (const TensorDiff& t : r.tensors)
      if (t.name == name) return t;
    throw std::runtime_error("no " + name);
  }
  test::TempDir dir;
};

TEST_F(Diff, EqualCheckpointsMatchBitForBit) {
  const DiffReport r = diff(write("x.safetensors", base()), write("y.safetensors", base()));
  EXPECT_TRUE(r.matches());
  ASSERT_EQ(r.tensors.size(), 4u);
  for (const TensorDiff& t : r.tensors) {
    EXPECT_TRUE(t.equal_bits) << t.name;
    EXPECT_EQ(t.max_abs_diff, 0.0);
  }
  EXPECT_GT(r.bytes_read, 0u);
  const auto j = nlohmann::json::parse(r.to_json());
  EXPECT_TRUE(j["matches"].get<bool>());
  EXPECT_EQ(j["summary"]["equal_bits"], 4);
}

TEST_F(Diff, OneValueChangedIsFoundAndToleranceDecides) {
  Tensors changed = base();
  changed[0].second.data<float>()[64 * 48 - 1] += 0.5f;  // the last value: in the last window of "a"
  const std::string x = write("x.safetensors", base()), y = write("y.safetensors", changed);
  DiffReport r = diff(x, y);
  EXPECT_FALSE(r.matches());
  const TensorDiff& a = find(r, "a");
  EXPECT_FALSE(a.equal_bits);
  EXPECT_EQ(a.beyond_tolerance, 1u);
  EXPECT_DOUBLE_EQ(a.max_abs_diff, 0.5);
  const double b_value = changed[0].second.data<float>()[64 * 48 - 1];
  EXPECT_DOUBLE_EQ(a.max_rel_diff, 0.5 / b_value);
  EXPECT_TRUE(find(r, "b").equal_bits);
  EXPECT_NE(r.to_string().find("DIFFERS"), std::string::npos);

  DiffOptions loose;
  loose.atol = 0.5;  // |a - b| <= atol: within
  EXPECT_TRUE(diff(x, y, loose).matches());
  DiffOptions relative;
  relative.rtol = 0.5 / b_value * 0.99;  // just short
  EXPECT_FALSE(diff(x, y, relative).matches());
  relative.rtol = 0.5 / b_value * 1.01;
  EXPECT_TRUE(diff(x, y, relative).matches());
}

TEST_F(Diff, NanAgreesOnlyWithNan) {
  Tensors nan = base();
  nan[1].second.data<float>()[7] = std::nanf("");
  const std::string x = write("x.safetensors", base()), y = write("y.safetensors", nan), z = write("z.safetensors", nan);
  DiffOptions loose;
  loose.atol = 1e9;
  const DiffReport r = diff(x, y, loose);
  EXPECT_FALSE(r.matches());
  EXPECT_EQ(find(r, "b").beyond_tolerance, 1u);
  EXPECT_TRUE(diff(y, z).matches());  // NaN in the same place on both sides
}

TEST_F(Diff, ShapeChangeAndNamesOnOneSide) {
  Tensors other = base();
  other[0].second = values({48, 64}, 1.0f);  // same elements, other shape
  other.erase(other.begin() + 1);            // "b" only in the first
  other.emplace_back("extra", values({3}, 0.0f));
  const DiffReport r = diff(write("x.safetensors", base()), write("y.safetensors", other));
  EXPECT_FALSE(r.matches());
  const TensorDiff& a = find(r, "a");
  EXPECT_TRUE(a.shape_differs());
  EXPECT_FALSE(a.matches());
  EXPECT_EQ(r.only_in_a, std::vector<std::string>{"b"});
  EXPECT_EQ(r.only_in_b, std::vector<std::string>{"extra"});
  const auto j = nlohmann::json::parse(r.to_json());
  EXPECT_EQ(j["summary"]["shape_differs"], 1);
  EXPECT_EQ(j["only_in_b"][0], "extra");
}

TEST_F(Diff, DtypeDifferenceIsReportedAndValuesCompared) {
  Tensors half = base();
  half[0].second = half[0].second.to(DType::F16);  // these values are exact in F16
  const DiffReport r = diff(write("x.safetensors", base()), write("y.safetensors", half));
  EXPECT_TRUE(r.matches());
  const TensorDiff& a = find(r, "a");
  EXPECT_TRUE(a.dtype_differs());
  EXPECT_FALSE(a.equal_bits);
  EXPECT_EQ(a.max_abs_diff, 0.0);
}

// A Llama checkpoint written by our GGUF writer (GGUF names, interleaved q/k rows) compares
// equal to its source once names and row order are normalised; Q8_0 is within its error.
TEST(DiffGguf, AgainstItsHuggingFaceOriginal) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  const std::string hf = (test::testdata_dir() / "hf-tiny-random-llama-2").string();
  auto original = open(hf);
  ConvertOptions o;
  o.to = CheckpointFormat::Gguf;
  o.gguf_type = "bf16";  // the original is BF16: lossless
  convert_checkpoint(*original, dir.file("m.gguf"), o);
  const DiffReport exact = diff_checkpoints(*open(dir.file("m.gguf")), *original);
  EXPECT_TRUE(exact.matches()) << exact.to_string();
  EXPECT_EQ(exact.tensors.size(), original->tensors().size());

  o.gguf_type = "q8_0";
  convert_checkpoint(*original, dir.file("q8.gguf"), o);
  const DiffReport q8 = diff_checkpoints(*open(dir.file("q8.gguf")), *original);
  EXPECT_FALSE(q8.matches());  // quantisation error, reported
  DiffOptions tol;
  tol.atol = 1e-2;
  tol.rtol = 1e-2;
  EXPECT_TRUE(diff_checkpoints(*open(dir.file("q8.gguf")), *original, tol).matches());

  // The stored tensors renamed through the "gguf" scheme but with their rows left interleaved: q/k differ.
  Catalogue stored = read_gguf_catalogue(dir.file("m.gguf"));
  ASSERT_NE(std::find_if(stored.tensors.begin(), stored.tensors.end(),
                         [](const TensorInfo& t) { return t.name == "blk.0.attn_q.weight"; }),
            stored.tensors.end());
  for (TensorInfo& t : stored.tensors)
    if (auto hf = to_canonical("gguf", t.name)) t.name = hf->name;
  const WeightSource raw("gguf", dir.file("m.gguf"), std::move(stored));
  const DiffReport rows = diff_checkpoints(raw, *original);
  EXPECT_TRUE(rows.only_in_a.empty() && rows.only_in_b.empty()) << rows.to_string();
  for (const TensorDiff& t : rows.tensors) {
    const bool rotary = t.name.find("q_proj") != std::string::npos || t.name.find("k_proj") != std::string::npos;
    EXPECT_EQ(t.matches(), !rotary) << t.name;
  }
}

TEST(DiffGguf, Stories260kLlama2cAgainstItsGguf) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  auto original = open((test::testdata_dir() / "llama2c-stories260K" / "stories260K.bin").string());
  ConvertOptions o;
  o.to = CheckpointFormat::Gguf;
  o.gguf_type = "f32";
  convert_checkpoint(*original, dir.file("s.gguf"), o);
  const DiffReport r = diff_checkpoints(*original, *open(dir.file("s.gguf")));
  EXPECT_TRUE(r.matches()) << r.to_string();
  for (const TensorDiff& t : r.tensors) EXPECT_TRUE(t.equal_bits) << t.name;
}

}  // namespace
}  // namespace wl
