// Hand-made checkpoints through read_pytorch_catalogue and WeightSource: layouts, byte orders,
// one broken file per rule, legacy files, sniffing.
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/formats/pytorch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <span>

#include "formats/pytorch/pt_test_util.hpp"

namespace wl::test {
namespace {

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

std::vector<float> iota_f32(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}

// A checkpoint of `tensors` over one F32 storage "0" holding 0, 1, 2, ... (`numel` elements).
std::string f32_checkpoint(const TempDir& dir, const std::vector<std::pair<std::string, TensorSpec>>& tensors,
                           size_t numel, const std::string& name = "model.pt") {
  const std::string path = dir.file(name);
  write_bytes(path, checkpoint_bytes(state_dict_pickle(tensors), {{"0", le_bytes(iota_f32(numel))}}));
  return path;
}

TensorSpec f32(std::vector<int64_t> size, std::vector<int64_t> stride, int64_t offset = 0, int64_t numel = 24) {
  return {.storage_type = "FloatStorage", .key = "0", .numel = numel, .offset = offset, .size = std::move(size),
          .stride = std::move(stride)};
}

TEST(PytorchReader, ViewsOfOneStorage) {
  TempDir dir;
  const std::string path = f32_checkpoint(dir,
                                          {{"whole", f32({4, 6}, {6, 1})},
                                           {"rows", f32({2, 6}, {6, 1}, 12)},
                                           {"transposed", f32({6, 4}, {1, 6})},
                                           {"column", f32({4}, {6}, 2)},
                                           {"element", f32({}, {}, 23)},
                                           {"expanded", f32({3, 2}, {0, 1}, 4)},
                                           {"empty", f32({0, 6}, {6, 1}, 24)},
                                           {"unit_dims", f32({1, 3, 1}, {99, 1, 7}, 5)}},
                                          24);
  const Catalogue c = read_pytorch_catalogue(path);
  ASSERT_EQ(c.tensors.size(), 8u);
  EXPECT_TRUE(c.metadata.empty());
  const auto values = [&](const std::string& name) {
    const std::string bytes = read_tensor(c, name);
    std::vector<float> out(bytes.size() / 4);
    if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  };
  EXPECT_EQ(values("whole"), iota_f32(24));
  EXPECT_EQ(values("rows"), (std::vector<float>{12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}));
  EXPECT_EQ(values("transposed"), (std::vector<float>{0, 6, 12, 18, 1, 7, 13, 19, 2, 8, 14, 20,
                                                      3, 9, 15, 21, 4, 10, 16, 22, 5, 11, 17, 23}));
  EXPECT_EQ(values("column"), (std::vector<float>{2, 8, 14, 20}));
  EXPECT_EQ(values("element"), (std::vector<float>{23}));
  EXPECT_EQ(values("expanded"), (std::vector<float>{4, 5, 4, 5, 4, 5}));
  EXPECT_EQ(values("empty"), std::vector<float>{});
  EXPECT_EQ(values("unit_dims"), (std::vector<float>{5, 6, 7}));

  const TensorInfo& rows = c.tensors[1];
  EXPECT_EQ(rows.dtype, DType::F32);
  EXPECT_EQ(rows.shape, (Shape{2, 6}));
  EXPECT_TRUE(rows.strides.empty());
  EXPECT_EQ(rows.offset, c.tensors[0].offset + 12 * 4);  // into the storage entry, in place
  EXPECT_EQ(rows.nbytes, 48u);
  EXPECT_EQ(c.tensors[2].strides, (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(c.tensors[2].nbytes, 24u * 4);  // the span a strided read covers
  EXPECT_TRUE(c.tensors[4].shape.empty());
  EXPECT_TRUE(c.tensors[7].strides.empty());  // unit dims may carry any stride
}

TEST(PytorchReader, EveryStorageType) {
  TempDir dir;
  const std::vector<std::tuple<std::string, DType, std::string>> types = {
      {"FloatStorage", DType::F32, le_bytes(std::vector<float>{1.5f, -2})},
      {"DoubleStorage", DType::F64, le_bytes(std::vector<double>{1e300, -0.0})},
      {"HalfStorage", DType::F16, le_bytes(std::vector<uint16_t>{0x3c00, 0x7c00})},
      {"BFloat16Storage", DType::BF16, le_bytes(std::vector<uint16_t>{0x3f80, 0xff80})},
      {"LongStorage", DType::I64, le_bytes(std::vector<int64_t>{INT64_MIN, 7})},
      {"IntStorage", DType::I32, le_bytes(std::vector<int32_t>{-5, INT32_MAX})},
      {"ShortStorage", DType::I16, le_bytes(std::vector<int16_t>{-300, 300})},
      {"CharStorage", DType::I8, le_bytes(std::vector<int8_t>{-128, 127})},
      {"ByteStorage", DType::U8, le_bytes(std::vector<uint8_t>{0, 255})},
      {"BoolStorage", DType::BOOL, le_bytes(std::vector<uint8_t>{1, 0})},
  };
  std::vector<std::pair<std::string, TensorSpec>> tensors;
  std::map<std::string, std::string> storages;
  for (const auto& [type, dtype, bytes] : types) {
    tensors.emplace_back(type, TensorSpec{.storage_type = type, .key = type, .numel = 2, .offset = 0, .size = {2},
                                          .stride = {1}});
    storages[type] = bytes;
  }
  write_bytes(dir.file("m.pt"), checkpoint_bytes(state_dict_pickle(tensors), storages));
  const Catalogue c = read_pytorch_catalogue(dir.file("m.pt"));
  ASSERT_EQ(c.tensors.size(), types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    const auto& [type, dtype, bytes] = types[i];
    EXPECT_EQ(c.tensors[i].name, type);
    EXPECT_EQ(c.tensors[i].dtype, dtype) << type;
    EXPECT_EQ(read_tensor(c, type), bytes) << type;
  }
}

TEST(PytorchReader, BigEndianStoragesAreSwapped) {
  TempDir dir;
  const std::vector<float> f = {1.5f, -2.25f, 1e-40f};
  const std::vector<int16_t> s = {-300, 0x1234, 7};
  std::string f_be = le_bytes(f), s_be = le_bytes(s);
  for (size_t i = 0; i < f_be.size(); i += 4) std::reverse(f_be.begin() + static_cast<long>(i), f_be.begin() + static_cast<long>(i) + 4);
  for (size_t i = 0; i < s_be.size(); i += 2) std::swap(s_be[i], s_be[i + 1]);
  const std::string pickle = state_dict_pickle(
      {{"f", {.storage_type = "FloatStorage", .key = "0", .numel = 3, .offset = 0, .size = {3}, .stride = {1}}},
       {"s", {.storage_type = "ShortStorage", .key = "1", .numel = 3, .offset = 1, .size = {2}, .stride = {1}}},
       {"b", {.storage_type = "ByteStorage", .key = "2", .numel = 2, .offset = 0, .size = {2}, .stride = {1}}}});
  write_bytes(dir.file("be.pt"), checkpoint_bytes(pickle, {{"0", f_be}, {"1", s_be}, {"2", "\x01\x02"}}, "big"));
  const Catalogue c = read_pytorch_catalogue(dir.file("be.pt"));
  EXPECT_EQ(read_tensor(c, "f"), le_bytes(f));
  EXPECT_EQ(read_tensor(c, "s"), le_bytes(std::vector<int16_t>{0x1234, 7}));
  EXPECT_EQ(read_tensor(c, "b"), "\x01\x02");
  EXPECT_EQ(c.tensors[0].stored_type(), "F32 big-endian");
  EXPECT_EQ(c.tensors[2].decoder, nullptr);  // single bytes need no swap

  write_bytes(dir.file("bad.pt"), checkpoint_bytes(state_dict_pickle({{"t", f32({2, 2}, {1, 2}, 0, 4)}}),
                                                   {{"0", le_bytes(iota_f32(4))}}, "big"));
  expect_contains(expect_error(ErrorCode::UnsupportedLayout, [&] { read_pytorch_catalogue(dir.file("bad.pt")); }),
                  "big-endian");
  write_bytes(dir.file("odd.pt"), checkpoint_bytes(state_dict_pickle({}), {}, "middle"));
  expect_contains(expect_error(ErrorCode::StorageInvalid, [&] { read_pytorch_catalogue(dir.file("odd.pt")); }),
                  "\"middle\"");
}

TEST(PytorchReader, MissingByteorderMeansLittleAndAnyTopFolderWorks) {
  TempDir dir;
  write_bytes(dir.file("m.pt"), checkpoint_bytes(state_dict_pickle({{"t", f32({2}, {1}, 0, 2)}}),
                                                 {{"0", le_bytes(iota_f32(2))}}, "", "my model-v2",
                                                 {.zip64 = true, .data_descriptor = true}));
  const Catalogue c = read_pytorch_catalogue(dir.file("m.pt"));
  EXPECT_EQ(read_tensor(c, "t"), le_bytes(iota_f32(2)));
}

TEST(PytorchReader, TensorsMustLieInsideTheirStorage) {
  TempDir dir;
  const auto bad = [&](const TensorSpec& spec, const std::string& part) {
    const std::string path = f32_checkpoint(dir, {{"t", spec}}, 24);
    const std::string message = expect_error(ErrorCode::TensorOutOfStorage, [&] { read_pytorch_catalogue(path); });
    expect_contains(message, "tensor 't'");
    expect_contains(message, part);
  };
  bad(f32({4, 7}, {7, 1}), "reaches element 27");
  bad(f32({2, 6}, {6, 1}, 13), "reaches element 24");
  bad(f32({24}, {1}, 1), "reaches element 24");
  bad(f32({}, {}, 24), "reaches element 24");
  bad(f32({0}, {1}, 25), "past the storage's end");
  bad(f32({2}, {-1}, 5), "negative stride");
  bad(f32({-2}, {1}), "negative size");
  bad(f32({2}, {1}, -1), "negative storage offset");
  bad(f32({4, 2}, {INT64_MAX, 1}), "overflows");
  const std::string path = f32_checkpoint(dir, {{"t", f32({INT64_MAX, 4}, {0, 0})}}, 24);
  expect_error(ErrorCode::ValidationOverflow, [&] { read_pytorch_catalogue(path); });
}

TEST(PytorchReader, StoragesMustMatchTheirEntries) {
  TempDir dir;
  const std::string pickle = state_dict_pickle({{"t", f32({2}, {1}, 0, 6)}});
  write_bytes(dir.file("short.pt"), checkpoint_bytes(pickle, {{"0", le_bytes(iota_f32(5))}}));
  expect_contains(expect_error(ErrorCode::StorageInvalid, [&] { read_pytorch_catalogue(dir.file("short.pt")); }),
                  "declares 6 F32 elements but entry \"archive/data/0\" holds 20 bytes");
  write_bytes(dir.file("missing.pt"), checkpoint_bytes(pickle, {{"1", le_bytes(iota_f32(6))}}));
  expect_contains(expect_error(ErrorCode::StorageInvalid, [&] { read_pytorch_catalogue(dir.file("missing.pt")); }),
                  "no entry \"archive/data/0\"");
  write_bytes(dir.file("deflated.pt"),
              zip_bytes({{"archive/data.pkl", pickle}, {"archive/data/0", le_bytes(iota_f32(6)), 8}}));
  expect_error(ErrorCode::ZipEntryCompressed, [&] { read_pytorch_catalogue(dir.file("deflated.pt")); });
  write_bytes(dir.file("deflated_pkl.pt"), zip_bytes({{"archive/data.pkl", pickle, 8}}));
  expect_error(ErrorCode::ZipEntryCompressed, [&] { read_pytorch_catalogue(dir.file("deflated_pkl.pt")); });
}

TEST(PytorchReader, NeedsExactlyOneDataPkl) {
  TempDir dir;
  write_bytes(dir.file("none.zip"), zip_bytes({{"archive/other.pkl", "x"}}));
  expect_contains(expect_error(ErrorCode::ZipInvalid, [&] { read_pytorch_catalogue(dir.file("none.zip")); }),
                  "no <folder>/data.pkl");
  write_bytes(dir.file("two.zip"), zip_bytes({{"a/data.pkl", "x"}, {"b/data.pkl", "y"}}));
  expect_contains(expect_error(ErrorCode::ZipInvalid, [&] { read_pytorch_catalogue(dir.file("two.zip")); }),
                  "'a', 'b'");
  write_bytes(dir.file("bad.pt"), checkpoint_bytes("\x80\x02" "cos\nsystem\n.", {}));
  expect_contains(expect_error(ErrorCode::PickleGlobalNotAllowed, [&] { read_pytorch_catalogue(dir.file("bad.pt")); }),
                  dir.file("bad.pt"));
}

TEST(PytorchReader, KeyOptionAndMetadata) {
  TempDir dir;
  const std::string root = pk::dict({{"model", pk::dict({{"w", tensor_pickle(f32({2}, {1}, 0, 2))}})},
                                     {"ema", pk::dict({{"w", tensor_pickle(f32({2}, {1}, 0, 2))}})}});
  write_bytes(dir.file("m.pt"), checkpoint_bytes(pk::proto(2) + root + ".", {{"0", le_bytes(iota_f32(2))}}));
  expect_error(ErrorCode::StateDictAmbiguous, [&] { read_pytorch_catalogue(dir.file("m.pt")); });
  const Catalogue c = read_pytorch_catalogue(dir.file("m.pt"), "ema");
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_EQ(c.tensors[0].name, "w");
  EXPECT_EQ(c.metadata, (std::map<std::string, std::string>{{"pytorch.state_dict_key", "ema"}}));
}

TEST(PytorchReader, EveryCorruptedByteIsAnErrorOrAValidRead) {
  TempDir dir;
  const std::string root = pk::dict({{"epoch", "K\x01"},
                                     {"model", pk::ordered_dict({{"a", tensor_pickle(f32({2, 3}, {1, 2}, 0, 6))},
                                                                 {"b", tensor_pickle(f32({2}, {1}, 4, 6))}})}});
  const std::string good = checkpoint_bytes(pk::proto(2) + root + ".", {{"0", le_bytes(iota_f32(6))}}, "little",
                                            "archive", {.zip64 = true, .data_descriptor = false});
  size_t read = 0, refused = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x41);
    write_bytes(dir.file("m.pt"), bad);
    try {
      read_pytorch_catalogue(dir.file("m.pt"));
      ++read;
    } catch (const Error&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "byte " << i << ": " << e.what();
    }
  }
  EXPECT_GT(refused, good.size() / 2);  // structure bytes dominate this small file
  EXPECT_GT(read, 0u);                  // tensor data and unchecked fields (times) may change freely
}

TEST(PytorchReader, LegacyCheckpointsSayHowToConvert) {
  TempDir dir;
  // What torch.save(..., _use_new_zipfile_serialization=False) writes first: the pickled magic number.
  write_bytes(dir.file("old.pt"), std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.\x80\x02M\xe9\x03."));
  std::string tar(1024, '\0');
  tar.replace(0, 8, "sys_info");
  tar.replace(257, 6, std::string("ustar\0", 6));
  write_bytes(dir.file("old.tar"), tar);
  for (const std::string name : {"old.pt", "old.tar"}) {
    const std::string message = expect_error(ErrorCode::LegacyFormat, [&] { read_pytorch_catalogue(dir.file(name)); });
    expect_contains(message, "legacy");
    expect_contains(message, "torch.save");
    const FileFormat* format = detect_file_format(dir.file(name));
    ASSERT_NE(format, nullptr) << name;
    EXPECT_EQ(format->name, "pytorch") << name;
  }
}

TEST(PytorchReader, SniffsCheckpointsOnly) {
  const auto sniff = [](const std::string& bytes) {
    return pytorch_format().sniff(std::as_bytes(std::span(bytes.data(), bytes.size())), bytes.size());
  };
  EXPECT_TRUE(sniff(checkpoint_bytes(state_dict_pickle({}), {})));
  EXPECT_TRUE(sniff(zip_bytes({{"data.pkl", "x"}})));
  EXPECT_FALSE(sniff(zip_bytes({{"notes.txt", "x"}})));
  EXPECT_FALSE(sniff(std::string("PK\x03\x04", 4)));
  EXPECT_FALSE(sniff(std::string("\x80\x02K\x01.", 5)));  // a pickle, but not the legacy magic
  EXPECT_FALSE(sniff(""));
  std::string tar(512, '\0');
  tar.replace(0, 5, "other");
  tar.replace(257, 5, "ustar");
  EXPECT_FALSE(sniff(tar));
  // Cut-off headers and noise never throw.
  const std::string ckpt = checkpoint_bytes(state_dict_pickle({}), {});
  for (size_t n = 0; n < 40; ++n) EXPECT_NO_THROW(sniff(ckpt.substr(0, n)));
  std::string noise = "PK\x03\x04";
  for (int i = 0; i < 200; ++i) noise.push_back(static_cast<char>(i * 37 + 11));
  EXPECT_NO_THROW(sniff(noise));
}

TEST(PytorchReader, DetectedByContent) {
  TempDir dir;
  const std::string path = f32_checkpoint(dir, {{"t", f32({2}, {1}, 0, 2)}}, 2, "weights.bin");
  const FileFormat* format = detect_file_format(path);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->name, "pytorch");
  EXPECT_EQ(format->read_catalogue(*local_opener()->open(path), *local_opener()).tensors.at(0).name, "t");
}

// The checkpoints of the candle test suite (huggingface/candle), written by torch.
TEST(PytorchReader, CandleTestFiles) {
  WL_REQUIRE_TESTDATA();
  const std::string dir = (testdata_dir() / "pytorch-zip").string();
  const std::string ints = le_bytes(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
  const Catalogue plain = read_pytorch_catalogue(dir + "/candle_test.pt");
  ASSERT_EQ(plain.tensors.size(), 1u);
  EXPECT_EQ(plain.tensors[0].name, "test");
  EXPECT_EQ(plain.tensors[0].dtype, DType::I64);
  EXPECT_EQ(plain.tensors[0].shape, (Shape{2, 4}));
  EXPECT_EQ(read_tensor(plain, "test"), ints);

  for (const std::string key : {"", "model_state_dict"}) {
    const Catalogue keyed = read_pytorch_catalogue(dir + "/candle_test_with_key.pt", key);
    ASSERT_EQ(keyed.tensors.size(), 1u);
    EXPECT_EQ(keyed.tensors[0].name, "test");
    EXPECT_EQ(read_tensor(keyed, "test"), ints);
    EXPECT_EQ(keyed.metadata.at("pytorch.state_dict_key"), "model_state_dict");
  }

  const Catalogue fortran = read_pytorch_catalogue(dir + "/candle_fortran_tensor_3d.pth");
  ASSERT_EQ(fortran.tensors.size(), 1u);
  EXPECT_EQ(fortran.tensors[0].name, "tensor_fortran");
  EXPECT_EQ(fortran.tensors[0].shape, (Shape{2, 3, 4}));
  EXPECT_EQ(fortran.tensors[0].strides, (std::vector<int64_t>{1, 2, 6}));
  std::vector<int64_t> counting(24);
  std::iota(counting.begin(), counting.end(), 1);
  EXPECT_EQ(read_tensor(fortran, "tensor_fortran"), le_bytes(counting));
}

}  // namespace
}  // namespace wl::test
