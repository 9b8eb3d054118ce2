// A catalogue sent as a value is the catalogue: the same tensors, decoders and bytes, rebuilt
// without reading or opening any file; values that cannot be carried are said to be so.
#include "formats/decoder_specs.hpp"
#include "loaders/catalogue_value.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "loaders/rank_agreement.hpp"
#include "formats/gguf/ggml_types.hpp"
#include "test_util.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/synth.hpp"

namespace wl {
namespace {

std::unique_ptr<WeightSource> open(const std::string& path, const std::string& loader = "local", Kwargs kw = {}) {
  return WeightLoaderRegistry::with_builtins()->create(loader, kw)->get_weights(path);
}

// The local file system, counting what is opened.
class CountingOpener final : public Opener {
 public:
  std::shared_ptr<ByteSource> open(const std::string& name) const override {
    ++opens;
    return local_opener()->open(name);
  }
  bool exists(const std::string& name) const override { return local_opener()->exists(name); }
  bool is_directory(const std::string& name) const override { return local_opener()->is_directory(name); }
  std::vector<std::string> list(const std::string& directory) const override { return local_opener()->list(directory); }
  mutable std::atomic<int> opens{0};
};

// `opened_to_build`: the files building may open (a quantized layer's small tensors it reads).
void expect_same_catalogue(const WeightSource& a, const std::string& value, int opened_to_build = 0) {
  auto files = std::make_shared<CountingOpener>();
  auto b = catalogue_from_value(value, files);
  EXPECT_LE(files->opens, opened_to_build);
  EXPECT_EQ(describe_checkpoint(a), describe_checkpoint(*b));
  EXPECT_EQ(a.metadata(), b->metadata());
  ASSERT_EQ(a.tensors().size(), b->tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const TensorInfo &t = a.tensors()[i], &u = b->tensors()[i];
    ASSERT_EQ(t.name, u.name);
    EXPECT_EQ(t.stored_type(), u.stored_type()) << t.name;
    EXPECT_EQ(t.row_order, u.row_order) << t.name;
    const TensorView x = a.load(t, DType::F32), y = b->load(u, DType::F32);
    ASSERT_EQ(x.nbytes(), y.nbytes()) << t.name;
    EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.nbytes()), 0) << t.name;
  }
  EXPECT_GT(files->opens, 0);  // reading did
}

TEST(CatalogueValue, EveryFormatComesBackTheSame) {
  WL_REQUIRE_TESTDATA();
  test::TempDir dir;
  SynthOptions synth;
  synth.shape = LlamaShape::preset("tiny");
  write_synthetic_llama(dir.file("hf"), synth);
  auto hf = open(dir.file("hf"), "hf");
  ConvertOptions q8;  // GGUF: ggml block decoders, rotary rows in Hugging Face's order
  q8.to = CheckpointFormat::Gguf, q8.gguf_type = "q8_0";
  convert_checkpoint(*hf, dir.file("m.gguf"), q8);
  ConvertOptions v2;  // llama2.c v2: a split encoding (int8 values, then their scales)
  v2.to = CheckpointFormat::Llama2c, v2.llama2c_version = 2;
  convert_checkpoint(*hf, dir.file("m.bin"), v2);
  auto gemma = open((test::testdata_dir() / "hf-tiny-arch" / "gemma").string(), "hf");
  ConvertOptions gemma_gguf;  // Gemma's norms stored as 1 + w: the offset decoder over F32
  gemma_gguf.to = CheckpointFormat::Gguf, gemma_gguf.gguf_type = "f32";
  convert_checkpoint(*gemma, dir.file("gemma.gguf"), gemma_gguf);
  const std::pair<std::string, const char*> cases[] = {  // each path, and a decoder kind its value carries
      {dir.file("hf"), ""}, {dir.file("m.gguf"), R"("kind":"ggml")"}, {dir.file("m.bin"), R"("kind":"llama2c-q8")"},
      {dir.file("gemma.gguf"), R"("kind":"offset")"}, {(test::testdata_dir() / "pytorch-zip" / "candle_test.pt").string(), ""},
      {(test::testdata_dir() / "hf-tiny-arch" / "mixtral").string(), ""}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.first);
    auto source = open(c.first);
    const std::optional<std::string> value = catalogue_value(*source);
    ASSERT_TRUE(value.has_value());
    EXPECT_NE(value->find(c.second), std::string::npos);
    expect_same_catalogue(*source, *value);
  }
}

// Every folder of ../shared/testdata/quantized (GPTQ, AWQ, bitsandbytes, FP8), decoded on read and as stored.
TEST(CatalogueValue, QuantizedLayersComeBackDecodingTheSame) {
  WL_REQUIRE_TESTDATA();
  int folders = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::testdata_dir() / "quantized")) {
    const std::filesystem::path file = entry.path() / "quantized.safetensors";
    if (!std::filesystem::exists(file)) continue;
    SCOPED_TRACE(file.string());
    ++folders;
    for (const char* mode : {"dequantize", "as_stored"}) {
      auto source = open(file.string(), "local", {{"quantized", std::string(mode)}});
      const std::optional<std::string> value = catalogue_value(*source);
      ASSERT_TRUE(value.has_value()) << mode;
      expect_same_catalogue(*source, *value, 1);
    }
  }
  EXPECT_GE(folders, 10);
}

// A local file that says it is at version "v7" (as a remote object gives its ETag).
class VersionedSource final : public ByteSource {
 public:
  explicit VersionedSource(std::shared_ptr<ByteSource> inner) : inner_(std::move(inner)) {}
  const std::string& name() const noexcept override { return inner_->name(); }
  uint64_t size() const noexcept override { return inner_->size(); }
  uint64_t read_some(uint64_t offset, void* dst, uint64_t length) const override { return inner_->read_some(offset, dst, length); }
  std::string version() const override { return "v7"; }

 private:
  std::shared_ptr<ByteSource> inner_;
};

// Opens local files; counts plain opens and records what open_known was told.
class KnownOpener final : public Opener {
 public:
  std::shared_ptr<ByteSource> open(const std::string& name) const override {
    ++opens;
    return local_opener()->open(name);
  }
  std::shared_ptr<ByteSource> open_known(const std::string& name, uint64_t size, const std::string& version) const override {
    std::lock_guard lock(mutex);
    known.push_back(fmt::format("{} {} {}", name, size, version));
    return std::make_shared<VersionedSource>(local_opener()->open(name));
  }
  bool exists(const std::string& name) const override { return local_opener()->exists(name); }
  bool is_directory(const std::string& name) const override { return local_opener()->is_directory(name); }
  std::vector<std::string> list(const std::string& directory) const override { return local_opener()->list(directory); }
  mutable std::atomic<int> opens{0};
  mutable std::mutex mutex;
  mutable std::vector<std::string> known;
};

// The value carries each file's size and version as the sender opened it; the receiver opens its
// files with them (a remote object: no HEAD, reads pinned to the sender's ETag), never plainly.
TEST(CatalogueValue, FilesOpenAsTheSenderFoundThem) {
  test::TempDir dir;
  const std::string path = dir.file("w.bin");
  std::string bytes(64, '\0');
  for (size_t i = 0; i < 16; ++i) {
    const float v = float(i);
    std::memcpy(bytes.data() + i * 4, &v, 4);
  }
  test::write_bytes(path, bytes);
  auto versioned = std::make_shared<MemoryOpener>();
  versioned->add(std::make_shared<VersionedSource>(local_opener()->open(path)));
  TensorInfo t;
  t.name = "w", t.dtype = DType::F32, t.shape = {4, 4}, t.offset = 0, t.nbytes = 64;
  const WeightSource sent("raw", path, Catalogue{{path}, {t}, {}}, versioned);
  const std::optional<std::string> value = catalogue_value(sent);
  ASSERT_TRUE(value.has_value());
  EXPECT_NE(value->find(R"("sources":[[64,"v7"]])"), std::string::npos) << *value;
  auto files = std::make_shared<KnownOpener>();
  auto received = catalogue_from_value(*value, files);
  EXPECT_TRUE(files->known.empty());  // building opens nothing
  const TensorView got = received->load(received->at("w"), DType::F32);
  EXPECT_EQ(std::memcmp(got.raw(), bytes.data(), 64), 0);
  EXPECT_EQ(files->known, std::vector<std::string>{path + " 64 v7"});
  EXPECT_EQ(files->opens, 0);
  EXPECT_EQ(received->file(0)->version(), "v7");
}

TEST(CatalogueValue, ValuesThisBuildDidNotWriteAreRefused) {
  for (const char* value : {"[1, 2]", R"({"files": []})", R"({"format": "x", "origin": "o", "metadata": {}, "files": [],
      "tensors": [{"name": "t", "dtype": "F32", "shape": [1], "file": 0, "offset": 0, "nbytes": 4}]})",
                            R"({"format": "x", "origin": "o", "metadata": {}, "files": ["f"],
      "tensors": [{"name": "t", "dtype": "F32", "shape": [32], "file": 0, "offset": 0, "nbytes": 34, "decoder": {"kind": "zstd"}}]})"}) {
    SCOPED_TRACE(value);
    const std::string msg = test::expect_error(ErrorCode::InvalidArgument, [&] { catalogue_from_value(value, local_opener()); });
    EXPECT_NE(msg.find("not a catalogue value"), std::string::npos) << msg;
  }
}

// A GGUF tensor of a type nobody decodes travels as a value too (the other ranks list it as well),
// and reading it from the rebuilt catalogue is refused as from the original, naming file and tensor.
TEST(CatalogueValue, AnUndecodedGgufTensorComesBackRefusedWhenRead) {
  const std::string spec = gguf::ggml_refusing_decoder(GgmlType::Q8_1, "/models/m.gguf", "blk.0.x")->spec();
  const std::shared_ptr<const Decoder> back = decoder_from_spec(spec, local_opener(), {});
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->name(), "Q8_1");
  EXPECT_EQ(back->block_elems(), 32u);
  EXPECT_EQ(back->block_bytes(), 36u);
  EXPECT_EQ(back->spec(), spec);
  try {
    back->prepare({});
    ADD_FAILURE() << "reading a Q8_1 tensor was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::GgufUnsupportedTensorType);
    EXPECT_EQ(e.file(), "/models/m.gguf");
    EXPECT_EQ(e.tensor(), "blk.0.x");
  }
}

}  // namespace
}  // namespace wl
