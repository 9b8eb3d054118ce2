// A quantized layer's packed weight and its side tensors (scales, zero points, g_idx, absmax) are
// read in one pass: the decoder declares them (Decoder::side_reads), the planner puts them in the
// plan with the weight, and bytes stored side by side are one request. Counted through a byte
// source that counts requests (each would be a round trip over HTTP).
#include <gtest/gtest.h>

#include <cstring>

#include "formats/quantized_checkpoint.hpp"
#include "support/counting_files.hpp"
#include "test_util.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {
namespace {

// `path` (a safetensors file, its quantization config inside or beside it) seen dense, every byte of
// it read through `files`.
std::unique_ptr<WeightSource> dense_through(const std::string& path, const std::shared_ptr<test::CountingFiles>& files) {
  Catalogue c = safetensors_format().read_catalogue(*files->open(path), *files);
  auto raw = std::make_unique<WeightSource>("safetensors", path, std::move(c), files);
  return dequantized_source(std::move(raw), *files);
}

struct Counted {
  uint64_t requests;
  TensorView values;
};

// The requests one load of the layer's dense weight (the catalogue's one tensor) makes (one thread,
// buffered reads), and its values.
Counted load_counted(const std::string& path) {
  auto files = std::make_shared<test::CountingFiles>();
  auto dense = dense_through(path, files);
  EXPECT_EQ(dense->tensors().size(), 1u);
  const TensorInfo& t = dense->tensors().front();
  TensorView out = TensorView::empty(DType::BF16, t.shape);
  IoOptions io;
  io.concurrency = 1;
  io.mode = IoMode::Pread;
  const uint64_t before = files->requests();
  dense->read_all({ReadRequest{&t, Slice{}, DType::BF16, out.raw()}}, io);
  return {files->requests() - before, out};
}

class OnePass : public ::testing::TestWithParam<std::string> {};

TEST_P(OnePass, TheWeightAndItsSideTensorsAreOneRequest) {
  WL_REQUIRE_TESTDATA();
  const std::string& folder = GetParam();
  const std::string path = (test::testdata_dir() / "quantized" / folder / "quantized.safetensors").string();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const Counted first = load_counted(path);
  EXPECT_EQ(first.requests, 1u) << folder;
  // The values are those of a load that reads through plain files (reference_test: bit exact).
  auto plain = dequantized_source(std::make_unique<WeightSource>("safetensors", path, read_safetensors_catalogue(path)),
                                  *local_opener());
  const TensorView want = plain->load(plain->tensors().front(), DType::BF16);
  ASSERT_EQ(want.nbytes(), first.values.nbytes());
  EXPECT_EQ(std::memcmp(want.raw(), first.values.raw(), want.nbytes()), 0) << folder;
}

INSTANTIATE_TEST_SUITE_P(
    Folders, OnePass,
    ::testing::Values("gptq-falcon3-1b-int4", "gptq-llama3.2-1b-gptqmodel-int8", "awq-falcon3-1b", "fp8-channel-llama3.2-1b-redhat",
                      "fp8-block-qwen3-1.7b", "fp8-tensor-ministral3-3b", "bnb-nf4-dq-llama3.2-1b", "bnb-int8-llama3.2-1b"),
    [](const auto& p) {
      std::string n = p.param;
      for (char& c : n)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

// compressed-tensors pack-quantized (w4a16, asymmetric groups): weight_packed, weight_scale and
// weight_zero_point side by side, one request (weight_shape is read when the catalogue is made).
TEST(OnePass, CompressedTensorsPackQuantizedLayerIsOneRequest) {
  test::TempDir dir;
  auto words = [](DType d, Shape s, uint32_t fill) {
    TensorView t = TensorView::empty(d, s);
    for (uint64_t i = 0; i < t.nbytes() / 4; ++i) reinterpret_cast<uint32_t*>(t.raw())[i] = fill + uint32_t(i) * 2654435761u;
    return t;
  };
  TensorView scale = TensorView::empty(DType::BF16, {64, 2});
  for (uint64_t i = 0; i < scale.numel(); ++i) reinterpret_cast<uint16_t*>(scale.raw())[i] = uint16_t(0x3c00 + i);
  TensorView shape = TensorView::empty(DType::I64, {2});
  shape.data<int64_t>()[0] = 64, shape.data<int64_t>()[1] = 256;
  const std::string config = R"({"quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
      "group_size": 128, "symmetric": false}}}}})";
  write_safetensors(dir.file("m.safetensors"),
                    {{"l.weight_packed", words(DType::I32, {64, 32}, 7)}, {"l.weight_scale", scale},
                     {"l.weight_zero_point", words(DType::I32, {8, 2}, 3)}, {"l.weight_shape", shape}},
                    {{"config.json", config}});
  const Counted c = load_counted(dir.file("m.safetensors"));
  EXPECT_EQ(c.requests, 1u);
}

}  // namespace
}  // namespace wl
