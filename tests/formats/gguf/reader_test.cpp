// What the GGUF reader accepts: metadata of every type, shapes, plain dtypes, versions, alignment.
#include <cmath>

#include "formats/gguf/gguf_test_util.hpp"
#include "weightloader/checkpoint_names.hpp"

namespace wl::test {
namespace {

// One key of every type 0..12, including arrays of strings, of bools and of arrays.
GgufBytes every_type(uint64_t n_tensors) {
  GgufBytes b;
  b.header(n_tensors, 16);
  b.key("u8", 0).le<uint8_t>(200);
  b.key("i8", 1).le<int8_t>(-5);
  b.key("u16", 2).le<uint16_t>(65535);
  b.key("i16", 3).le<int16_t>(-300);
  b.key("u32", 4).le<uint32_t>(4000000000u);
  b.key("i32", 5).le<int32_t>(-7);
  b.key("f32", 6).le<float>(0.1f);
  b.key("bool", 7).le<uint8_t>(1);
  b.kv_str("str", "héllo");
  b.key("u64", 10).le<uint64_t>(18446744073709551615ull);
  b.key("i64", 11).le<int64_t>(-9000000000ll);
  b.key("f64", 12).le<double>(2.5);
  b.key("tokens", 9).le<uint32_t>(8).le<uint64_t>(3).str("<s>").str("").str("a b");
  b.key("flags", 9).le<uint32_t>(7).le<uint64_t>(2).le<uint8_t>(0).le<uint8_t>(1);
  b.key("scores", 9).le<uint32_t>(6).le<uint64_t>(2).le<float>(-1.5f).le<float>(3.0f);
  // [[1, 2], []] as arrays of INT32
  b.key("nested", 9).le<uint32_t>(9).le<uint64_t>(2);
  b.le<uint32_t>(5).le<uint64_t>(2).le<int32_t>(1).le<int32_t>(2);
  b.le<uint32_t>(5).le<uint64_t>(0);
  return b;
}

TEST(GgufReader, MetadataOfEveryType) {
  TempDir dir;
  const GgufFile f = read_gguf(make_gguf(dir, every_type(0)));
  EXPECT_EQ(f.version, 3u);
  EXPECT_EQ(f.metadata.size(), 16u);
  EXPECT_EQ(*f.get<uint8_t>("u8"), 200);
  EXPECT_EQ(*f.get<int8_t>("i8"), -5);
  EXPECT_EQ(*f.get<uint16_t>("u16"), 65535);
  EXPECT_EQ(*f.get<int16_t>("i16"), -300);
  EXPECT_EQ(*f.get<uint32_t>("u32"), 4000000000u);
  EXPECT_EQ(*f.get<int32_t>("i32"), -7);
  EXPECT_EQ(*f.get<float>("f32"), 0.1f);
  EXPECT_EQ(*f.get<bool>("bool"), true);
  EXPECT_EQ(*f.get<std::string>("str"), "héllo");
  EXPECT_EQ(*f.get<uint64_t>("u64"), 18446744073709551615ull);
  EXPECT_EQ(*f.get<int64_t>("i64"), -9000000000ll);
  EXPECT_EQ(*f.get<double>("f64"), 2.5);
  EXPECT_EQ(f.get<int32_t>("u8"), nullptr);  // typed access is exact
  EXPECT_EQ(f.find("missing"), nullptr);

  const GgufArray& tokens = *f.get<GgufArray>("tokens");
  EXPECT_EQ(tokens.type(), GgufType::String);
  EXPECT_EQ(*tokens.get<std::string>(), (std::vector<std::string>{"<s>", "", "a b"}));
  EXPECT_EQ(*f.get<GgufArray>("flags")->get<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(*f.get<GgufArray>("scores")->get<float>(), (std::vector<float>{-1.5f, 3.0f}));
  const auto& nested = *f.get<GgufArray>("nested")->get<GgufArray>();
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(*nested[0].get<int32_t>(), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(nested[1].type(), GgufType::I32);
  EXPECT_EQ(nested[1].size(), 0u);
}

TEST(GgufReader, CatalogueMetadataIsPrinted) {
  TempDir dir;
  const Catalogue c = read_gguf_catalogue(make_gguf(dir, every_type(0)));
  const std::map<std::string, std::string> expected = {
      {"u8", "200"}, {"i8", "-5"}, {"u16", "65535"}, {"i16", "-300"}, {"u32", "4000000000"}, {"i32", "-7"},
      {"f32", "0.1"}, {"bool", "true"}, {"str", "héllo"}, {"u64", "18446744073709551615"},
      {"i64", "-9000000000"}, {"f64", "2.5"}, {"tokens", "[array of 3 STRING]"}, {"flags", "[array of 2 BOOL]"},
      {"scores", "[array of 2 FLOAT32]"}, {"nested", "[array of 2 ARRAY]"}};
  EXPECT_EQ(c.metadata, expected);
  EXPECT_TRUE(c.tensors.empty());
}

TEST(GgufReader, ValueHelpers) {
  EXPECT_EQ(gguf_value_to_uint(GgufValue(uint16_t{7})), 7u);
  EXPECT_EQ(gguf_value_to_uint(GgufValue(int64_t{-1})), std::nullopt);
  EXPECT_EQ(gguf_value_to_uint(GgufValue(true)), std::nullopt);
  EXPECT_EQ(gguf_value_to_uint(GgufValue(1.0f)), std::nullopt);
  EXPECT_EQ(gguf_value_to_string(GgufValue(false)), "false");
  EXPECT_EQ(gguf_value_to_string(GgufValue(int8_t{65})), "65");
  EXPECT_EQ(gguf_value_type(GgufValue(std::string("x"))), GgufType::String);
  EXPECT_EQ(gguf_type_name(GgufType::F64), "FLOAT64");
  EXPECT_EQ(ggml_type_name(GgmlType::Q6_K), "Q6_K");
  EXPECT_EQ(ggml_type_name(static_cast<GgmlType>(4)), "type 4");
  EXPECT_TRUE(ggml_type_supported(GgmlType::Q5_1));
  EXPECT_TRUE(ggml_type_supported(GgmlType::Q3_K));
  EXPECT_TRUE(ggml_type_supported(GgmlType::IQ1_M));
  EXPECT_FALSE(ggml_type_supported(GgmlType::Q8_1));
}

// Plain tensors: dims reversed into PyTorch order, absolute offsets, values as stored.
TEST(GgufReader, PlainTensorsAndShapes) {
  GgufBytes b;
  b.header(5, 1, /*version=*/2).kv_str("general.architecture", "test");
  b.tensor("f32", {3, 2}, 0, 0);   // PyTorch [2, 3]
  b.tensor("i16", {4}, 25, 32);
  b.tensor("f64", {1, 1, 2}, 28, 64);
  b.tensor("scalar", {}, 26, 96);
  b.tensor("empty", {0, 5}, 1, 128);
  b.pad();
  const uint64_t data = b.size();
  for (int i = 0; i < 6; ++i) b.le<float>(static_cast<float>(i) + 0.5f);
  b.pad();
  for (int16_t v : {-1, 2, -3, 4}) b.le<int16_t>(v);
  b.pad();
  b.le<double>(1e300).le<double>(-2.0);
  b.pad();
  b.le<int32_t>(-42);
  b.pad();
  TempDir dir;
  const std::string path = make_gguf(dir, b);
  const Catalogue c = read_gguf_catalogue(path);
  ASSERT_EQ(c.tensors.size(), 5u);
  const TensorInfo& f32 = c.tensors[0];
  EXPECT_EQ(f32.name, "f32");
  EXPECT_EQ(f32.shape, (Shape{2, 3}));
  EXPECT_EQ(f32.dtype, DType::F32);
  EXPECT_EQ(f32.offset, data);
  EXPECT_EQ(f32.nbytes, 24u);
  EXPECT_EQ(c.file_of(f32), path);
  EXPECT_EQ(f32.decoder, nullptr);
  EXPECT_TRUE(f32.row_order.empty());
  EXPECT_EQ(gguf_values<float>(c, "f32", DType::F32), (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
  EXPECT_EQ(gguf_values<int16_t>(c, "i16", DType::I16), (std::vector<int16_t>{-1, 2, -3, 4}));
  EXPECT_EQ(c.tensors[2].shape, (Shape{2, 1, 1}));
  EXPECT_EQ(gguf_values<double>(c, "f64", DType::F64), (std::vector<double>{1e300, -2.0}));
  EXPECT_EQ(c.tensors[3].shape, Shape{});
  EXPECT_EQ(gguf_values<int32_t>(c, "scalar", DType::I32), std::vector<int32_t>{-42});
  EXPECT_EQ(c.tensors[4].shape, (Shape{5, 0}));
  EXPECT_EQ(c.tensors[4].nbytes, 0u);

  const GgufFile f = read_gguf(path);
  EXPECT_EQ(f.version, 2u);
  EXPECT_EQ(f.data_offset, data);
  EXPECT_EQ(f.tensors[0].dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(f.tensors[1].offset, 32u);
  EXPECT_EQ(f.tensors[1].type, GgmlType::I16);
}

// Every plain type maps to its dtype.
TEST(GgufReader, PlainTypeMapping) {
  const std::pair<uint32_t, DType> types[] = {{0, DType::F32}, {1, DType::F16},  {30, DType::BF16},
                                              {28, DType::F64}, {24, DType::I8}, {25, DType::I16},
                                              {26, DType::I32}, {27, DType::I64}};
  for (const auto& [id, dtype] : types) {
    GgufBytes b;
    b.header(1, 0).tensor("t", {2}, id, 0).pad().raw(std::string(16, '\0'));
    TempDir dir;
    const Catalogue c = read_gguf_catalogue(make_gguf(dir, b));
    EXPECT_EQ(c.tensors[0].dtype, dtype) << id;
    EXPECT_EQ(c.tensors[0].nbytes, 2 * dtype_size(dtype)) << id;
  }
}

// general.alignment moves the data section and constrains offsets.
TEST(GgufReader, CustomAlignment) {
  GgufBytes b;
  b.header(2, 1).kv_u32("general.alignment", 64);
  b.tensor("a", {1}, 0, 0).tensor("b", {1}, 0, 64).pad(64);
  const uint64_t data = b.size();
  b.le<float>(1.0f).pad(64).le<float>(2.0f);
  TempDir dir;
  const GgufFile f = read_gguf(make_gguf(dir, b));
  EXPECT_EQ(f.alignment, 64u);
  EXPECT_EQ(f.data_offset, data);
  EXPECT_EQ(data % 64, 0u);
  const Catalogue c = read_gguf_catalogue(dir.file("model.gguf"));
  EXPECT_EQ(gguf_values<float>(c, "b", DType::F32), std::vector<float>{2.0f});
}

// Tensors in any order in the data section, with gaps, are fine as long as they do not overlap.
TEST(GgufReader, OffsetsInAnyOrder) {
  GgufBytes b;
  b.header(2, 0).tensor("late", {1}, 0, 64).tensor("early", {1}, 0, 0).pad();
  b.le<float>(1.0f).pad().raw(std::string(32, '\0')).le<float>(2.0f);
  TempDir dir;
  const Catalogue c = read_gguf_catalogue(make_gguf(dir, b));
  EXPECT_EQ(gguf_values<float>(c, "late", DType::F32), std::vector<float>{2.0f});
  EXPECT_EQ(gguf_values<float>(c, "early", DType::F32), std::vector<float>{1.0f});
}

TEST(GgufReader, FormatEntrySniffsMagicAndVersion) {
  TempDir dir;
  GgufBytes v3, v2, v1;
  v3.header(0, 0, 3);
  v2.header(0, 0, 2);
  v1.header(0, 0, 1);
  auto name_of = [](const FileFormat* f) { return f ? f->name : std::string("none"); };
  EXPECT_EQ(name_of(detect_file_format(make_gguf(dir, v3, "v3.gguf"))), "gguf");
  EXPECT_EQ(name_of(detect_file_format(make_gguf(dir, v2, "v2.gguf"))), "gguf");
  EXPECT_NE(name_of(detect_file_format(make_gguf(dir, v1, "v1.gguf"))), "gguf");
  EXPECT_NE(find_file_format("gguf"), nullptr);
  const auto source = open_files(gguf_format(), {dir.file("v3.gguf")}, dir.path().string());
  EXPECT_EQ(source->format(), "gguf");
  EXPECT_TRUE(source->tensors().empty());
}

}  // namespace
}  // namespace wl::test
