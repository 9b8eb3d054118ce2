// Writer -> reader round trips, the exact bytes of a small file, Q8_0 quantisation, and misuse.
#include <cmath>
#include <cstring>

#include "formats/gguf/gguf_test_util.hpp"
#include "formats/gguf/ggml_types.hpp"
#include "formats/gguf/quants.hpp"
#include "weightloader/dtype_convert.hpp"

namespace wl::test {
namespace {

TensorView f32_tensor(Shape shape, uint32_t seed) { return seeded_f32(std::move(shape), seed, 2.0f); }

// Q8_0 as ggml's quantize_row_q8_0_ref then dequantize_row_q8_0 define it, computed here.
std::vector<float> q8_0_round_trip(const std::vector<float>& x) {
  std::vector<float> out;
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b + j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    const float stored_d = f16_bits_to_f32(f32_to_f16_bits(d));
    for (size_t j = 0; j < 32; ++j) out.push_back(std::round(x[b + j] * id) * stored_d);
  }
  return out;
}

TEST(GgufWriter, RoundTripsEveryWritableType) {
  const TensorView a = f32_tensor({3, 64}, 1), b = f32_tensor({5}, 2), c = f32_tensor({2, 2, 32}, 3);
  TempDir dir;
  const std::string path = dir.file("out.gguf");
  write_gguf(path,
             {{"a.f32", a, GgmlType::F32}, {"a.f16", a, GgmlType::F16}, {"a.bf16", a, GgmlType::BF16},
              {"a.q8", a, GgmlType::Q8_0}, {"b", b, GgmlType::F32}, {"c.q8", c, GgmlType::Q8_0}},
             {{"general.architecture", std::string("test")}});
  const Catalogue cat = read_gguf_catalogue(path);
  ASSERT_EQ(cat.tensors.size(), 6u);
  EXPECT_EQ(cat.tensors[0].shape, (Shape{3, 64}));
  EXPECT_EQ(cat.tensors[3].stored_type(), "Q8_0");
  EXPECT_EQ(cat.tensors[3].nbytes, 6u * 34);
  EXPECT_EQ(gguf_values<float>(cat, "a.f32", DType::F32), values_of(a));
  EXPECT_EQ(gguf_values<float>(cat, "b", DType::F32), values_of(b));
  std::vector<uint16_t> f16(a.numel()), bf16(a.numel());
  convert(DType::F32, a.raw(), DType::F16, f16.data(), a.numel());
  convert(DType::F32, a.raw(), DType::BF16, bf16.data(), a.numel());
  EXPECT_EQ(gguf_values<uint16_t>(cat, "a.f16", DType::F16), f16);
  EXPECT_EQ(gguf_values<uint16_t>(cat, "a.bf16", DType::BF16), bf16);
  EXPECT_EQ(gguf_values<float>(cat, "a.q8", DType::F32), q8_0_round_trip(values_of(a)));
  EXPECT_EQ(gguf_values<float>(cat, "c.q8", DType::F32), q8_0_round_trip(values_of(c)));
  for (const TensorInfo& t : cat.tensors) EXPECT_EQ(t.offset % 32, 0u) << t.name;
}

// Every block type the writer quantises: written whole and in parts (a stack of 3 slices, each
// quantised on its own), read back as the type's decoder gives the quantiser's blocks; rows that
// are not whole blocks are refused; a value that is not finite is refused naming the type.
TEST(GgufWriter, WritesEveryQuantizedType) {
  ASSERT_EQ(gguf_quantized_types().size(), 8u);
  for (const GgufQuantizedType& q : gguf_quantized_types()) {
    SCOPED_TRACE(ggml_type_name(q.type));
    const uint64_t block = ggml_block_elems(q.type);
    const TensorView a = f32_tensor({3, 2 * block}, 11);
    TempDir dir;
    const std::string path = dir.file("q.gguf");
    {
      GgufStreamWriter w(path, {{"whole", a.shape(), q.type}, {"parts", a.shape(), q.type}});
      w.write_tensor(a);
      for (uint64_t r = 0; r < 3; ++r) w.write_part(a.rows(r, r + 1));
      w.finish();
    }
    const Catalogue cat = read_gguf_catalogue(path);
    const gguf::GgmlTypeTraits& traits = *gguf::ggml_type_traits(static_cast<uint32_t>(q.type));
    std::vector<uint8_t> blocks(a.numel() / block * traits.block_bytes);
    ASSERT_TRUE(gguf::ggml_quantize(q.type, a.data<float>(), a.numel(), reinterpret_cast<std::byte*>(blocks.data())));
    std::vector<float> expected(a.numel());
    ASSERT_TRUE(gguf::dequantize_reference(q.type, blocks.data(), blocks.size() / traits.block_bytes, expected.data()));
    EXPECT_EQ(cat.tensors[0].stored_type(), ggml_type_name(q.type));
    EXPECT_EQ(cat.tensors[0].nbytes, blocks.size());
    EXPECT_EQ(gguf_values<float>(cat, "whole", DType::F32), expected);
    EXPECT_EQ(gguf_values<float>(cat, "parts", DType::F32), expected);
    expect_error(ErrorCode::GgufRowNotBlockMultiple,
                 [&] { write_gguf(dir.file("bad.gguf"), {{"t", f32_tensor({2, block + 16}, 1), q.type}}); });
    TensorView inf = f32_tensor({1, block}, 2);
    inf.data<float>()[3] = -INFINITY;
    expect_contains(expect_error(ErrorCode::InvalidArgument, [&] { write_gguf(dir.file("inf.gguf"), {{"t", inf, q.type}}); }),
                    "cannot quantise -inf to " + ggml_type_name(q.type));
  }
}

// Inputs of any dtype, contiguous or not, are converted; BF16 -> BF16 is exact.
TEST(GgufWriter, ConvertsInputsOfAnyDtypeAndLayout) {
  TensorView bf = TensorView::empty(DType::BF16, {4, 2});
  for (uint16_t i = 0; i < 8; ++i) bf.data<uint16_t>()[i] = f32_to_bf16_bits(static_cast<float>(i) - 3.5f);
  const TensorView wide = f32_tensor({2, 4}, 4);
  const TensorView transposed(wide.storage(), DType::F32, {4, 2}, {1, 4}, 0);
  TensorView ints = TensorView::empty(DType::I32, {32});
  for (int32_t i = 0; i < 32; ++i) ints.data<int32_t>()[i] = i * 4 - 64;
  TempDir dir;
  const std::string path = dir.file("out.gguf");
  write_gguf(path, {{"bf", bf, GgmlType::BF16}, {"t", transposed, GgmlType::F32}, {"i", ints, GgmlType::Q8_0}});
  const Catalogue cat = read_gguf_catalogue(path);
  EXPECT_EQ(gguf_values<uint16_t>(cat, "bf", DType::BF16), std::vector<uint16_t>(bf.data<uint16_t>(), bf.data<uint16_t>() + 8));
  const std::vector<float> t = gguf_values<float>(cat, "t", DType::F32);
  for (uint64_t r = 0; r < 4; ++r)
    for (uint64_t col = 0; col < 2; ++col) EXPECT_EQ(t[r * 2 + col], wide.data<float>()[col * 4 + r]);
  std::vector<float> expected;
  for (int32_t i = 0; i < 32; ++i) expected.push_back(static_cast<float>(i * 4 - 64));
  EXPECT_EQ(gguf_values<float>(cat, "i", DType::F32), q8_0_round_trip(expected));
}

// The writer's bytes, field by field, for one key and one tensor.
TEST(GgufWriter, ExactBytes) {
  TensorView t = TensorView::empty(DType::F32, {2});
  t.data<float>()[0] = 1.0f;
  t.data<float>()[1] = -2.0f;
  TempDir dir;
  const std::string path = dir.file("out.gguf");
  write_gguf(path, {{"w", t, GgmlType::F32}}, {{"k", uint16_t{7}}});
  GgufBytes expected;
  expected.header(1, 1).key("k", 2).le<uint16_t>(7).tensor("w", {2}, 0, 0).pad().le<float>(1.0f).le<float>(-2.0f).pad();
  EXPECT_EQ(read_bytes(path), expected.str());
}

TEST(GgufWriter, MetadataOfEveryTypeRoundTrips) {
  GgufArray tokens, flags, nested, inner;
  tokens.elements = std::vector<std::string>{"a", "", "ccc"};
  flags.elements = std::vector<bool>{true, false, true};
  inner.elements = std::vector<int64_t>{-1, 1};
  nested.elements = std::vector<GgufArray>{inner, GgufArray{}};
  const GgufMetadata metadata = {
      {"u8", uint8_t{1}},       {"i8", int8_t{-2}},       {"u16", uint16_t{3}},   {"i16", int16_t{-4}},
      {"u32", uint32_t{5}},     {"i32", int32_t{-6}},     {"f32", 7.5f},          {"bool", false},
      {"str", std::string("s")}, {"u64", uint64_t{1} << 40}, {"i64", int64_t{-9}}, {"f64", 0.1},
      {"tokens", tokens},       {"flags", flags},         {"nested", nested},     {"general.alignment", uint32_t{16}}};
  TempDir dir;
  const std::string path = dir.file("meta.gguf");
  write_gguf(path, {{"x", f32_tensor({3}, 5), GgmlType::F32}, {"y", f32_tensor({1}, 6), GgmlType::F32}}, metadata);
  const GgufFile f = read_gguf(path);
  EXPECT_EQ(f.metadata, metadata);
  EXPECT_EQ(f.alignment, 16u);
  EXPECT_EQ(f.tensors[1].offset, 16u);
  EXPECT_EQ(f.data_offset % 16, 0u);
}

TEST(GgufWriter, StreamingWriterChecksItsInput) {
  TempDir dir;
  const std::string path = dir.file("s.gguf");
  {
    GgufStreamWriter w(path, {{"a", {2}, GgmlType::F32}, {"b", {32}, GgmlType::Q8_0}});
    expect_error(ErrorCode::ShapeMismatch, [&] { w.write_tensor(f32_tensor({3}, 1)); });
    w.write_tensor(f32_tensor({2}, 1));
    expect_error(ErrorCode::InvalidArgument, [&] { w.finish(); });
    TensorView bad = f32_tensor({32}, 2);
    bad.data<float>()[5] = NAN;
    expect_contains(expect_error(ErrorCode::InvalidArgument, [&] { w.write_tensor(bad); }), "cannot quantise nan");
  }
  EXPECT_FALSE(fs::exists(path)) << "an unfinished writer leaves no file";
  GgufStreamWriter w(path, {{"a", {2}, GgmlType::F32}});
  w.write_tensor(f32_tensor({2}, 1));
  expect_error(ErrorCode::InvalidArgument, [&] { w.write_tensor(f32_tensor({2}, 1)); });
  w.finish();
  EXPECT_EQ(read_gguf_catalogue(path).tensors.size(), 1u);
}

TEST(GgufWriter, RefusesWhatReadersWouldReject) {
  TempDir dir;
  const std::string path = dir.file("bad.gguf");
  const TensorView t = f32_tensor({2, 33}, 1);
  expect_error(ErrorCode::GgufRowNotBlockMultiple, [&] { write_gguf(path, {{"t", t, GgmlType::Q8_0}}); });
  expect_error(ErrorCode::InvalidArgument, [&] { write_gguf(path, {{"t", t, GgmlType::Q4_K}}); });
  expect_error(ErrorCode::DuplicateTensorName,
               [&] { write_gguf(path, {{"t", t, GgmlType::F32}, {"t", t, GgmlType::F16}}); });
  expect_error(ErrorCode::GgufNameTooLong, [&] { write_gguf(path, {{std::string(64, 'x'), t, GgmlType::F32}}); });
  expect_error(ErrorCode::GgufTooManyDims,
               [&] { write_gguf(path, {{"t", f32_tensor({1, 1, 1, 1, 2}, 1), GgmlType::F32}}); });
  expect_error(ErrorCode::GgufEmptyKey, [&] { write_gguf(path, {}, {{"", uint8_t{1}}}); });
  expect_error(ErrorCode::GgufBadAlignment, [&] { write_gguf(path, {}, {{"general.alignment", uint32_t{24}}}); });
  expect_error(ErrorCode::GgufBadAlignment, [&] { write_gguf(path, {}, {{"general.alignment", uint64_t{32}}}); });
  EXPECT_FALSE(fs::exists(path));
}

// A row order stores the tensor's rows in that order (a Llama's q/k rows interleaved, say); it must
// name a row for every row, and a Q8_0 tensor's rows must be whole blocks to move.
TEST(GgufWriter, StoresRowsInTheOrderGiven) {
  TensorView t = TensorView::empty(DType::F32, {3, 2});
  for (uint64_t i = 0; i < 6; ++i) t.data<float>()[i] = static_cast<float>(i);
  TempDir dir;
  const std::string path = dir.file("rows.gguf");
  write_gguf(path, {{"t", t, GgmlType::F32, {2, 0, 1}}});
  EXPECT_EQ(gguf_values<float>(read_gguf_catalogue(path), "t", DType::F32), (std::vector<float>{4, 5, 0, 1, 2, 3}));
  expect_error(ErrorCode::InvalidArgument, [&] { write_gguf(path, {{"t", t, GgmlType::F32, {0, 1}}}); });
  expect_error(ErrorCode::InvalidArgument, [&] { write_gguf(path, {{"t", t, GgmlType::F32, {0, 1, 3}}}); });
  std::vector<uint64_t> reversed(64);
  for (uint64_t i = 0; i < 64; ++i) reversed[i] = 63 - i;
  expect_contains(expect_error(ErrorCode::InvalidArgument,
                               [&] { write_gguf(path, {{"bias", f32_tensor({64}, 1), GgmlType::Q8_0, reversed}}); }),
                  "Q8_0 rows must be whole blocks");
}

// A stack (GGUF's experts) written slice by slice, or a few slices at a time, stores the bytes that
// writing it whole stores; parts must add up to the declared rows, and a reordered tensor is whole.
TEST(GgufWriter, WritesAStackInParts) {
  const TensorView whole = f32_tensor({3, 2, 32}, 7);
  TempDir dir;
  write_gguf(dir.file("whole.gguf"), {{"s", whole, GgmlType::Q8_0}});
  auto slices = [&](uint64_t begin, uint64_t end) {
    TensorView t = TensorView::empty(DType::F32, {end - begin, 2, 32});
    std::memcpy(t.raw(), whole.raw() + begin * 64 * sizeof(float), t.nbytes());
    return t;
  };
  {
    GgufStreamWriter w(dir.file("parts.gguf"), {{"s", {3, 2, 32}, GgmlType::Q8_0}});
    w.write_part(TensorView::empty(DType::F32, {0, 2, 32}));  // no rows: nothing written
    w.write_part(slices(0, 1).reshaped({2, 32}));              // one slice, without dim 0
    w.write_part(slices(1, 3));
    w.finish();
  }
  EXPECT_EQ(read_bytes(dir.file("parts.gguf")), read_bytes(dir.file("whole.gguf")));
  GgufStreamWriter w(dir.file("bad.gguf"), {{"s", {3, 2, 32}, GgmlType::F32}, {"r", {2, 2}, GgmlType::F32, {1, 0}}});
  expect_error(ErrorCode::ShapeMismatch, [&] { w.write_part(f32_tensor({2, 3, 32}, 1)); });
  w.write_part(slices(0, 2));
  expect_contains(expect_error(ErrorCode::ShapeMismatch, [&] { w.write_part(slices(0, 2)); }), "a part of 2 rows after 2");
  expect_contains(expect_error(ErrorCode::InvalidArgument, [&] { w.finish(); }), "(2 rows of the next)");
  w.write_part(slices(2, 3));
  expect_contains(expect_error(ErrorCode::InvalidArgument, [&] { w.write_part(f32_tensor({1, 2}, 1)); }), "written whole");
}

}  // namespace
}  // namespace wl::test
