// A catalogue names its files once and its tensors by index into them (TensorInfo::source):
// adding, naming and merging files, and the index a WeightSource refuses.
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "weightloader/error.hpp"
#include "weightloader/source.hpp"

namespace wl {
namespace {

TensorInfo tensor(const std::string& name, SourceIndex source, uint64_t offset = 0) {
  TensorInfo t;
  t.name = name;
  t.shape = {2};
  t.source = source;
  t.offset = offset;
  t.nbytes = 8;
  return t;
}

std::vector<float> floats(const TensorView& t) {
  const auto* p = reinterpret_cast<const float*>(t.raw());
  return std::vector<float>(p, p + t.numel());
}

// A decoder that reads one side tensor, as a quantized layer's does.
class ReadsSide final : public Decoder {
 public:
  explicit ReadsSide(TensorInfo side) : side_{SideRead{std::move(side), DType::F32}} {}
  std::string name() const override { return "side"; }
  uint64_t block_elems() const override { return 2; }
  uint64_t block_bytes() const override { return 8; }
  DType output_dtype() const override { return DType::F32; }
  void decode(const std::byte*, uint64_t, void*) const override {}
  std::span<const SideRead> side_reads() const override { return side_; }

 private:
  std::vector<SideRead> side_;
};

TEST(Catalogue, AddFileListsEachNameOnce) {
  Catalogue c;
  EXPECT_EQ(c.add_file("a.safetensors"), 0u);
  EXPECT_EQ(c.add_file("b.safetensors"), 1u);
  EXPECT_EQ(c.add_file("a.safetensors"), 0u);
  EXPECT_EQ(c.files, (std::vector<std::string>{"a.safetensors", "b.safetensors"}));
  c.tensors.push_back(tensor("w", 1));
  EXPECT_EQ(c.file_of(c.tensors[0]), "b.safetensors");
}

TEST(Catalogue, AppendMovesEachShardsIndicesOntoTheMergedFiles) {
  Catalogue merged{{"shard-1"}, {tensor("a", 0)}, {{"kept", "yes"}}};
  Catalogue second{{"other", "shard-1"}, {tensor("b", 0), tensor("c", 1)}, {{"dropped", "yes"}}};
  TensorInfo assembled = tensor("d", 0);  // pieces from both of second's files
  assembled.parts = {tensor("d", 0), tensor("d", 1)};
  second.tensors.push_back(assembled);
  merged.append(second);
  EXPECT_EQ(merged.files, (std::vector<std::string>{"shard-1", "other"}));
  ASSERT_EQ(merged.tensors.size(), 4u);
  EXPECT_EQ(merged.file_of(merged.tensors[1]), "other");
  EXPECT_EQ(merged.tensors[1].source, 1u);
  EXPECT_EQ(merged.file_of(merged.tensors[2]), "shard-1");  // listed already: its index there
  EXPECT_EQ(merged.tensors[2].source, 0u);
  EXPECT_EQ(merged.file_of(merged.tensors[3].parts[0]), "other");
  EXPECT_EQ(merged.file_of(merged.tensors[3].parts[1]), "shard-1");
  EXPECT_EQ(merged.metadata, (std::map<std::string, std::string>{{"kept", "yes"}}));  // metadata is the caller's to merge
}

TEST(Catalogue, AnIndexOutsideTheFilesIsAClearError) {
  const Catalogue c{{"only.bin"}, {tensor("w", 3)}, {}};
  std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] { c.file_of(c.tensors[0]); });
  EXPECT_NE(msg.find("file index 3 is not one of the 1 files"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;

  Catalogue into;
  msg = test::expect_error(ErrorCode::InvalidArgument, [&] { into.adopt(tensor("w", 2), {"a", "b"}); });
  EXPECT_NE(msg.find("file index 2"), std::string::npos) << msg;
  EXPECT_TRUE(into.files.empty());
}

TEST(Catalogue, ATensorWhoseSideTensorsWouldMoveIsNotAdopted) {
  TensorInfo w = tensor("w", 1);
  w.decoder = std::make_shared<ReadsSide>(tensor("w.scale", 0));
  Catalogue fresh;  // "a" would become index 1 here: the decoder's index 0 would name "b"
  fresh.add_file("b");
  const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] { fresh.adopt(w, {"a", "b"}); });
  EXPECT_NE(msg.find("w.scale"), std::string::npos) << msg;
  Catalogue same{{"a", "b"}, {}, {}};  // the same files in the same places: nothing moves
  EXPECT_EQ(same.adopt(w, {"a", "b"}).source, 1u);
}

TEST(Catalogue, AWeightSourceRefusesAnIndexItsFilesLack) {
  std::string msg = test::expect_error(ErrorCode::InvalidArgument,
                                       [] { WeightSource("raw", "ckpt", Catalogue{{"a.bin"}, {tensor("w", 1)}, {}}); });
  EXPECT_NE(msg.find("ckpt"), std::string::npos) << msg;
  EXPECT_NE(msg.find("file index 1 is not one of the 1 files"), std::string::npos) << msg;

  TensorInfo assembled = tensor("d", 0);
  assembled.parts = {tensor("d", 0), tensor("d", 5)};
  test::expect_error(ErrorCode::InvalidArgument, [&] { WeightSource("raw", "ckpt", Catalogue{{"a.bin"}, {assembled}, {}}); });

  TensorInfo decoded = tensor("q", 0);
  decoded.decoder = std::make_shared<ReadsSide>(tensor("q.scale", 4));
  msg = test::expect_error(ErrorCode::InvalidArgument, [&] { WeightSource("raw", "ckpt", Catalogue{{"a.bin"}, {decoded}, {}}); });
  EXPECT_NE(msg.find("q.scale"), std::string::npos) << msg;

  const WeightSource empty("raw", "ckpt", Catalogue{});
  test::expect_error(ErrorCode::InvalidArgument, [&] { empty.file(0); });
}

TEST(Catalogue, ReadsOpenEachTensorsFileByIndexAndErrorsNameIt) {
  test::TempDir dir;
  const std::string a = dir.file("a.bin"), b = dir.file("b.bin");
  const float av[2] = {1, 2}, bv[2] = {3, 4};
  test::write_bytes(a, std::string(reinterpret_cast<const char*>(av), 8));
  test::write_bytes(b, std::string(reinterpret_cast<const char*>(bv), 8));
  const WeightSource source("raw", dir.path().string(), Catalogue{{a, b}, {tensor("x", 1), tensor("y", 0)}, {}});
  EXPECT_EQ(source.files(), (std::vector<std::string>{a, b}));
  EXPECT_EQ(source.file_of(source.at("x")), b);
  EXPECT_EQ(floats(source.load(source.at("x"))), (std::vector<float>{3, 4}));
  EXPECT_EQ(floats(source.load(source.at("y"))), (std::vector<float>{1, 2}));
  EXPECT_EQ(source.estimate_reads({{&source.at("x"), {}, DType::F32, nullptr}}).file_bytes,
            (std::map<std::string, uint64_t>{{b, 8}}));
  float out[2];
  try {
    source.read(source.at("x"), DType::F32, out, Slice{1, 0, 1});
    ADD_FAILURE() << "a slice along a missing dim was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::SliceOutOfBounds);
    EXPECT_EQ(e.file(), b);  // the planner names the tensor; its catalogue names the file
    EXPECT_EQ(e.tensor(), "x");
  }
  // A tensor from elsewhere, with an index this catalogue lacks, is refused before any read.
  const TensorInfo stranger = tensor("z", 7);
  test::expect_error(ErrorCode::InvalidArgument, [&] { source.read(stranger, DType::F32, out); });
}

}  // namespace
}  // namespace wl
