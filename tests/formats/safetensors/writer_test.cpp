// Writer → reader round trips, byte-exact agreement with the reference's own files, and the
// streaming writer's contract.
#include <cstring>
#include <random>

#include "formats/safetensors/st_test_util.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl::test {
namespace {

// A contiguous tensor of `shape` filled with arbitrary bit patterns (BOOL gets 0/1).
TensorView random_tensor(DType dtype, const Shape& shape, uint32_t seed) {
  TensorView t = TensorView::empty(dtype, shape);
  std::mt19937 rng(seed);
  auto* bytes = reinterpret_cast<uint8_t*>(t.raw());
  for (uint64_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(rng());
  if (dtype == DType::BOOL)
    for (uint64_t i = 0; i < t.nbytes(); ++i) bytes[i] &= 1;
  return t;
}

std::vector<std::byte> view_bytes(const TensorView& t) {
  const auto* p = t.raw();
  return std::vector<std::byte>(p, p + t.nbytes());
}

bool no_temporary_files(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) return false;
  return true;
}

TEST(SafetensorsWriter, RoundTripEveryDTypeBitForBit) {
  TempDir dir;
  std::vector<std::pair<std::string, TensorView>> tensors;
  uint32_t seed = 1;
  for (DType dtype : kAllDTypes) {
    const std::string name(dtype_name(dtype));
    tensors.emplace_back(name + ".matrix", random_tensor(dtype, {3, 5}, seed++));
    tensors.emplace_back(name + ".scalar", random_tensor(dtype, {}, seed++));
    tensors.emplace_back(name + ".empty", random_tensor(dtype, {4, 0, 2}, seed++));
  }
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "caf\xC3\xA9 \"quoted\"\n"}};
  const std::string path = dir.file("all.safetensors");
  write_safetensors(path, tensors, metadata);

  const Catalogue c = read_safetensors_catalogue(path);
  EXPECT_EQ(c.metadata, metadata);
  ASSERT_EQ(c.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, view] = tensors[i];
    SCOPED_TRACE(name);
    // Written in the order given, so offset order is the same order.
    EXPECT_EQ(c.tensors[i].name, name);
    EXPECT_EQ(c.tensors[i].dtype, view.dtype());
    EXPECT_EQ(c.tensors[i].shape, view.shape());
    EXPECT_EQ(c.tensors[i].nbytes, view.nbytes());
    EXPECT_EQ(tensor_bytes(c, name), view_bytes(view));
  }
}

TEST(SafetensorsWriter, HeaderIsPaddedWithSpacesToAMultipleOf8) {
  TempDir dir;
  for (size_t len = 1; len <= 9; ++len) {
    const std::string path = dir.file("pad.safetensors");
    write_safetensors(path, {{std::string(len, 'n'), random_tensor(DType::U8, {3}, 7)}});
    const std::string bytes = read_bytes(path);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ(n % 8, 0u);
    const std::string header = bytes.substr(8, n);
    const size_t close = header.rfind('}');
    EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos) << header;
    EXPECT_LT(n - close - 1, 8u);
    EXPECT_EQ(bytes.size(), 8 + n + 3);
  }
}

// Same tensors in, the very bytes the reference implementation wrote out. (ok_metadata_i32 is
// left out: its header was typed by hand with padding to 102 bytes, which no writer produces.)
TEST(SafetensorsWriter, MatchesTheReferenceFilesByteForByte) {
  WL_REQUIRE_TESTDATA();
  TempDir dir;
  const auto f32_0_to_5 = [](Shape shape) {
    TensorView t = TensorView::empty(DType::F32, std::move(shape));
    for (int i = 0; i < 6; ++i) t.data<float>()[i] = static_cast<float>(i);
    return t;
  };
  const auto zeros = [](DType dtype, Shape shape) {
    TensorView t = TensorView::empty(dtype, std::move(shape));
    std::memset(t.raw(), 0, t.nbytes());
    return t;
  };
  const struct {
    std::string file;
    std::vector<std::pair<std::string, TensorView>> tensors;
    std::map<std::string, std::string> metadata;
  } cases[] = {
      {"ok_serialize_f32_1x2x3.safetensors", {{"attn.0", f32_0_to_5({1, 2, 3})}}, {}},
      {"ok_serialize_f32_aligned_padded.safetensors", {{"attn0", f32_0_to_5({1, 1, 2, 3})}}, {}},
      {"ok_empty.safetensors", {}, {}},
      {"ok_empty_with_metadata.safetensors", {}, {{"framework", "pt"}}},
      {"ok_two_tensors_i32_f16.safetensors",
       {{"test1", zeros(DType::I32, {2, 2})}, {"test2", zeros(DType::F16, {2, 2})}},
       {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string path = dir.file(c.file);
    write_safetensors(path, c.tensors, c.metadata);
    const std::string expected = read_bytes((testdata_dir() / "safetensors-vectors" / c.file).string());
    EXPECT_EQ(read_bytes(path), expected);
    std::string in_memory;  // serialize_safetensors: the same bytes, no file
    serialize_safetensors(c.tensors, c.metadata, false, [&](uint64_t size) {
      in_memory.resize(size);
      return reinterpret_cast<std::byte*>(in_memory.data());
    });
    EXPECT_EQ(in_memory, expected);
  }
}

TEST(SafetensorsWriter, InMemoryBytesAreTheFilesWithDigestsAndStridedViews) {
  TempDir dir;
  TensorView storage = TensorView::empty(DType::I32, {6});
  const int32_t column_major[] = {1, 4, 2, 5, 3, 6};
  std::memcpy(storage.raw(), column_major, sizeof column_major);
  const std::vector<std::pair<std::string, TensorView>> tensors = {
      {"m", TensorView(storage.storage(), DType::I32, {2, 3}, {1, 2}, 0)}, {"w", random_tensor(DType::BF16, {5, 7}, 4)}};
  write_safetensors(dir.file("t.safetensors"), tensors, {{"k", "v"}}, true);
  std::vector<std::byte> in_memory;
  serialize_safetensors(tensors, {{"k", "v"}}, true, [&](uint64_t size) {
    in_memory.resize(size);
    return in_memory.data();
  });
  const std::string file = read_bytes(dir.file("t.safetensors"));
  ASSERT_EQ(in_memory.size(), file.size());
  EXPECT_EQ(std::memcmp(in_memory.data(), file.data(), file.size()), 0);
  expect_error(ErrorCode::DuplicateTensorName, [&] {
    serialize_safetensors({tensors[0], tensors[0]}, {}, false, [&](uint64_t size) {
      in_memory.resize(size);
      return in_memory.data();
    });
  });
}

TEST(SafetensorsWriter, NonContiguousViewsAreWrittenRowMajor) {
  TempDir dir;
  // A 2x3 int32 matrix stored column-major: logical [[1,2,3],[4,5,6]].
  TensorView storage = TensorView::empty(DType::I32, {6});
  const int32_t column_major[] = {1, 4, 2, 5, 3, 6};
  std::memcpy(storage.raw(), column_major, sizeof column_major);
  const TensorView transposed(storage.storage(), DType::I32, {2, 3}, {1, 2}, 0);
  ASSERT_FALSE(transposed.is_contiguous());
  const std::string path = dir.file("t.safetensors");
  write_safetensors(path, {{"m", transposed}});
  EXPECT_EQ(tensor_values<int32_t>(read_safetensors_catalogue(path), "m"), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
}

TEST(SafetensorsWriter, RejectsWhatCannotBeWritten) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  const TensorView t = random_tensor(DType::F32, {2}, 3);
  expect_error(ErrorCode::DuplicateTensorName, [&] { write_safetensors(path, {{"a", t}, {"a", t}}); });
  expect_error(ErrorCode::InvalidArgument, [&] { write_safetensors(path, {{"__metadata__", t}}); });
  expect_error(ErrorCode::InvalidArgument, [&] { write_safetensors(path, {{"bad\xFFname", t}}); });
  expect_error(ErrorCode::InvalidArgument, [&] { write_safetensors(path, {{"a", t}}, {{"k", "\xC0\xAF"}}); });
  expect_error(ErrorCode::InvalidArgument, [&] { write_safetensors(path, {{"a", TensorView()}}); });
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(no_temporary_files(dir.path()));
}

TEST(SafetensorsWriter, FailedWriteLeavesTheOldFileUntouched) {
  TempDir dir;
  const std::string path = dir.file("keep.safetensors");
  write_safetensors(path, {{"old", random_tensor(DType::U8, {4}, 9)}});
  const std::string before = read_bytes(path);
  {
    SafetensorsStreamWriter writer(path, {{"new", DType::U8, {8}}});
    const uint8_t half[4] = {1, 2, 3, 4};
    writer.write(half, sizeof half);
    expect_error(ErrorCode::InvalidArgument, [&] { writer.finish(); });
  }  // abandoned: the temporary file goes, the old file stays
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_TRUE(no_temporary_files(dir.path()));
}

TEST(SafetensorsStreamWriter, RoundTripInArbitraryPieces) {
  TempDir dir;
  const std::vector<SafetensorsEntry> entries = {
      {"embed", DType::BF16, {7, 3}}, {"none", DType::F32, {0}}, {"bias", DType::F64, {5}}, {"scale", DType::F16, {}}};
  std::vector<TensorView> values;
  uint64_t total = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    values.push_back(random_tensor(entries[i].dtype, entries[i].shape, 100 + static_cast<uint32_t>(i)));
    total += values.back().nbytes();
  }
  // All data bytes back to back, fed in pieces that straddle tensor boundaries.
  std::vector<std::byte> stream;
  for (const TensorView& v : values) {
    const auto b = view_bytes(v);
    stream.insert(stream.end(), b.begin(), b.end());
  }
  const std::string path = dir.file("stream.safetensors");
  SafetensorsStreamWriter writer(path, entries, {{"source", "generated"}});
  EXPECT_EQ(writer.bytes_remaining(), total);
  for (size_t at = 0; at < stream.size(); at += 5)
    writer.write(stream.data() + at, std::min<size_t>(5, stream.size() - at));
  EXPECT_EQ(writer.bytes_remaining(), 0u);
  EXPECT_FALSE(fs::exists(path));  // nothing visible before finish()
  writer.finish();

  const Catalogue c = read_safetensors_catalogue(path);
  EXPECT_EQ(c.metadata.at("source"), "generated");
  ASSERT_EQ(c.tensors.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    SCOPED_TRACE(entries[i].name);
    EXPECT_EQ(c.tensors[i].name, entries[i].name);
    EXPECT_EQ(c.tensors[i].shape, entries[i].shape);
    EXPECT_EQ(tensor_bytes(c, entries[i].name), view_bytes(values[i]));
  }
}

TEST(SafetensorsStreamWriter, WholeTensorsInOrder) {
  TempDir dir;
  const TensorView a = random_tensor(DType::I16, {2, 2}, 1), empty = random_tensor(DType::F32, {0, 4}, 2),
                   b = random_tensor(DType::U64, {3}, 3);
  const std::string path = dir.file("whole.safetensors");
  SafetensorsStreamWriter writer(path, {{"a", DType::I16, {2, 2}}, {"empty", DType::F32, {0, 4}}, {"b", DType::U64, {3}}});
  writer.write_tensor(a);
  writer.write_tensor(empty);
  writer.write_tensor(b);
  writer.finish();
  const Catalogue c = read_safetensors_catalogue(path);
  EXPECT_EQ(tensor_bytes(c, "a"), view_bytes(a));
  EXPECT_EQ(tensor_bytes(c, "empty"), view_bytes(empty));
  EXPECT_EQ(tensor_bytes(c, "b"), view_bytes(b));
}

TEST(SafetensorsStreamWriter, RefusesBytesThatDoNotFitTheDeclaration) {
  TempDir dir;
  const std::string path = dir.file("strict.safetensors");
  SafetensorsStreamWriter writer(path, {{"a", DType::F32, {2}}, {"b", DType::F32, {1}}});
  expect_error(ErrorCode::ShapeMismatch, [&] { writer.write_tensor(random_tensor(DType::F32, {3}, 1)); });
  expect_error(ErrorCode::InvalidArgument, [&] { writer.write_tensor(random_tensor(DType::F16, {2}, 1)); });
  const uint8_t four[4] = {};
  writer.write(four, 4);
  const std::string mid = expect_error(ErrorCode::InvalidArgument, [&] { writer.write_tensor(random_tensor(DType::F32, {2}, 1)); });
  EXPECT_NE(mid.find("middle of this tensor"), std::string::npos) << mid;
  const uint8_t nine[9] = {};
  const std::string over = expect_error(ErrorCode::InvalidArgument, [&] { writer.write(nine, 9); });
  EXPECT_NE(over.find("9 more bytes given but only 8"), std::string::npos) << over;
  const std::string early = expect_error(ErrorCode::InvalidArgument, [&] { writer.finish(); });
  EXPECT_NE(early.find("only 4 of the declared 12"), std::string::npos) << early;
  EXPECT_NE(early.find("tensor 'a'"), std::string::npos) << early;
  writer.write(nine, 8);
  expect_error(ErrorCode::InvalidArgument, [&] { writer.write_tensor(random_tensor(DType::F32, {1}, 1)); });
  writer.finish();
  expect_error(ErrorCode::InvalidArgument, [&] { writer.finish(); });
  EXPECT_EQ(read_safetensors_catalogue(path).tensors.size(), 2u);
}

}  // namespace
}  // namespace wl::test
