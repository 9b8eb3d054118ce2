// Split models: <name>-0000k-of-0000N.gguf read from the first split as one checkpoint.
#include <fmt/format.h>

#include "formats/gguf/gguf_test_util.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl::test {
namespace {

TensorView ramp(Shape shape, float start) {
  TensorView t = TensorView::empty(DType::F32, std::move(shape));
  for (uint64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

GgufMetadata split_keys(uint16_t no, uint16_t count, int32_t total) {
  return {{"split.no", no}, {"split.count", count}, {"split.tensors.count", total}};
}

// Three splits of a Llama as GGUF stores it: the head counts live only in the first, the q
// projection (rows interleaved) in the last.
struct Splits {
  TempDir dir;
  std::vector<std::string> paths;
  TensorView q = ramp({8, 2}, 0), norm = ramp({2}, 100), embd = ramp({3, 2}, 200);

  explicit Splits(int32_t total = 3) {
    for (int k = 1; k <= 3; ++k) paths.push_back(dir.file(fmt::format("m-{:05}-of-00003.gguf", k)));
    GgufMetadata first = split_keys(0, 3, total);
    first["general.architecture"] = std::string("llama");
    first["llama.attention.head_count"] = uint32_t{2};
    write_gguf(paths[0], {{"token_embd.weight", embd}}, first);
    GgufMetadata second = split_keys(1, 3, total), third = split_keys(2, 3, total);
    second["general.architecture"] = third["general.architecture"] = std::string("llama");
    write_gguf(paths[1], {{"output_norm.weight", norm}}, second);
    const std::vector<uint64_t> interleaved = rotary_row_order(
        8, 2, RotaryOrder::HfAsInterleaved, {ErrorCode::GgufHeadCount, "the test's heads", ""}, "q");
    write_gguf(paths[2], {{"blk.0.attn_q.weight", q, GgmlType::F32, interleaved}}, third);
  }
};

TEST(GgufSplit, ReadsEverySplitFromTheFirst) {
  Splits s;
  // As loaders see it (the format entry): Hugging Face names, q's rows reordered with the first split's heads.
  const Catalogue c = gguf_format().read_catalogue(*local_opener()->open(s.paths[0]), *local_opener());
  ASSERT_EQ(c.tensors.size(), 3u);
  EXPECT_EQ(c.tensors[0].name, "model.embed_tokens.weight");
  EXPECT_EQ(c.file_of(c.tensors[0]), s.paths[0]);
  EXPECT_EQ(c.tensors[1].name, "model.norm.weight");
  EXPECT_EQ(c.file_of(c.tensors[1]), s.paths[1]);
  EXPECT_EQ(c.file_of(c.tensors[2]), s.paths[2]);
  EXPECT_EQ(gguf_values<float>(c, "model.embed_tokens.weight", DType::F32), values_of(s.embd));
  EXPECT_EQ(gguf_values<float>(c, "model.norm.weight", DType::F32), values_of(s.norm));
  EXPECT_EQ(gguf_values<float>(c, "model.layers.0.self_attn.q_proj.weight", DType::F32), values_of(s.q));
  EXPECT_EQ(c.metadata.at("split.count"), "3");
  EXPECT_EQ(c.metadata.at("split.no"), "0");
  // The format entry reads them all too.
  const auto source = open_files(gguf_format(), {s.paths[0]}, s.dir.path().string());
  EXPECT_EQ(source->tensors().size(), 3u);
}

TEST(GgufSplit, OnlyTheFirstSplitOpensTheModel) {
  Splits s;
  expect_contains(expect_error(ErrorCode::GgufSplitMismatch, [&] { read_gguf_catalogue(s.paths[1]); }),
                  "this is split 2 of 3; open the first split");
}

TEST(GgufSplit, MissingSplit) {
  Splits s;
  fs::remove(s.paths[2]);
  expect_contains(expect_error(ErrorCode::GgufSplitMissing, [&] { read_gguf_catalogue(s.paths[0]); }),
                  "split 3 of 3 (" + s.paths[2] + ") does not exist");
}

TEST(GgufSplit, TensorCountDisagrees) {
  Splits s(4);
  expect_contains(expect_error(ErrorCode::GgufSplitMismatch, [&] { read_gguf_catalogue(s.paths[0]); }),
                  "the 3 splits hold 3 tensors, but split.tensors.count is 4");
}

TEST(GgufSplit, SplitNumbersDisagreeWithNames) {
  Splits s;
  write_gguf(s.paths[1], {{"model.norm.weight", s.norm}}, split_keys(2, 3, 3));  // says it is the third
  expect_contains(expect_error(ErrorCode::GgufSplitMismatch, [&] { read_gguf_catalogue(s.paths[0]); }),
                  "named as split 2 of 3 but split.no = 2, split.count = 3");
  write_gguf(s.paths[1], {{"model.norm.weight", s.norm}}, split_keys(1, 4, 3));
  expect_error(ErrorCode::GgufSplitMismatch, [&] { read_gguf_catalogue(s.paths[0]); });
}

TEST(GgufSplit, FirstSplitMustBeNamedAsSuch) {
  Splits s;
  const std::string renamed = s.dir.file("model.gguf");
  fs::copy_file(s.paths[0], renamed);
  expect_contains(expect_error(ErrorCode::GgufSplitMismatch, [&] { read_gguf_catalogue(renamed); }),
                  "must end with '-00001-of-00003.gguf'");
}

TEST(GgufSplit, SplitKeysMustBeIntegers) {
  TempDir dir;
  const std::string path = dir.file("m-00001-of-00002.gguf");
  write_gguf(path, {}, {{"split.count", std::string("2")}});
  expect_contains(expect_error(ErrorCode::GgufSplitMismatch, [&] { read_gguf_catalogue(path); }),
                  "split.count is 2 (STRING)");
  write_gguf(path, {}, {{"split.count", uint16_t{2}}, {"split.no", uint16_t{0}}});
  expect_contains(expect_error(ErrorCode::GgufSplitMismatch, [&] { read_gguf_catalogue(path); }),
                  "split.tensors.count is missing");
}

TEST(GgufSplit, TensorInTwoSplits) {
  Splits s;
  GgufMetadata second = split_keys(1, 3, 3);
  write_gguf(s.paths[1], {{"token_embd.weight", s.embd}}, second);
  expect_contains(expect_error(ErrorCode::TensorInTwoFiles, [&] { read_gguf_catalogue(s.paths[0]); }),
                  "also in split " + s.paths[0]);
}

// split.count 1 is an ordinary single file, whatever its name.
TEST(GgufSplit, SingleSplitIsAPlainFile) {
  TempDir dir;
  const std::string path = dir.file("m-00001-of-00001.gguf");
  write_gguf(path, {{"x", ramp({2}, 0)}}, split_keys(0, 1, 1));
  EXPECT_EQ(read_gguf_catalogue(path).tensors.size(), 1u);
}

}  // namespace
}  // namespace wl::test
