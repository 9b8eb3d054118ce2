// Truncation of a valid file of each format at every byte, or at every structural boundary: each cut is an error naming the file,
// with the code of the structure the cut falls in (GGUF: tests/formats/gguf/errors_test.cpp).
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "formats/llama2c/l2c_test_util.hpp"
#include "formats/pytorch/pt_test_util.hpp"
#include "formats/safetensors/st_test_util.hpp"
#include "weightloader/formats/custom_binary.hpp"
#include "weightloader/formats/llama2c.hpp"
#include "weightloader/formats/pytorch.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl::test {
namespace {

// Writes the first `cut` bytes of `full` to `path` for each cut and expects `read()` to fail with
// `expected(cut)`, naming `named` (default: `path`) in its message.
void expect_cuts_fail(const std::string& full, const std::vector<size_t>& cuts, const std::string& path,
                      const std::function<void()>& read, const std::function<ErrorCode(size_t)>& expected,
                      const std::string& named = {}) {
  for (size_t cut : cuts) {
    ASSERT_LT(cut, full.size());
    write_bytes(path, full.substr(0, cut));
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " + std::to_string(full.size()) + " bytes");
    const std::string message = expect_error(expected(cut), read);
    ASSERT_NE(message.find(named.empty() ? path : named), std::string::npos) << message;
  }
}

std::vector<size_t> every_byte(const std::string& full) {
  std::vector<size_t> cuts(full.size());
  for (size_t i = 0; i < cuts.size(); ++i) cuts[i] = i;
  return cuts;
}

// Each of `boundaries` and the bytes either side of it, inside [0, size), once each.
std::vector<size_t> around(const std::vector<uint64_t>& boundaries, size_t size) {
  std::set<size_t> cuts;
  for (uint64_t b : boundaries)
    for (uint64_t c : {b - 1, b, b + 1})
      if (c < size) cuts.insert(c);
  return {cuts.begin(), cuts.end()};
}

TEST(HostileTruncation, SafetensorsAtEveryByte) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  write_safetensors(path, {{"a", TensorView::empty(DType::F32, {3})}, {"b", TensorView::empty(DType::F16, {2, 2})}},
                    {{"format", "pt"}});
  const std::string full = read_bytes(path);
  const uint64_t header = get_le(full, 0, 8);
  expect_cuts_fail(full, every_byte(full), path, [&] { read_safetensors_catalogue(path); }, [&](size_t cut) {
    if (cut < 8) return ErrorCode::HeaderTooSmall;
    if (cut < 8 + header) return ErrorCode::InvalidHeaderLength;
    return ErrorCode::MetadataIncompleteBuffer;
  });
}

TEST(HostileTruncation, ShardedIndexAtEveryByte) {
  TempDir dir;
  write_safetensors(dir.file("a.safetensors"), {{"w", TensorView::empty(DType::F32, {2})}});
  const std::string path = dir.file("model.safetensors.index.json");
  const std::string full = R"({"metadata": {"total_size": 8}, "weight_map": {"w": "a.safetensors"}})";
  expect_cuts_fail(full, every_byte(full), path, [&] { open_safetensors_index(path); },
                   [](size_t) { return ErrorCode::IndexInvalid; });
}

// Every byte of the header's fields, its end, and each tensor's end.
TEST(HostileTruncation, Llama2cOfEveryVersionAtEveryBoundary) {
  for (int version : {0, 1, 2}) {
    SCOPED_TRACE("version " + std::to_string(version));
    TempDir dir;
    const std::string path = dir.file("model.bin");
    const Llama2cHeader h = tiny_header(version, true);
    write_llama2c(path, h, hf_tensors(h, [](const std::string&, uint64_t i) { return float(i % 5); }));
    const std::string full = read_bytes(path);
    const size_t header = version == 0 ? 28 : 256;
    std::vector<uint64_t> boundaries;
    for (uint64_t b = 0; b <= 40; ++b) boundaries.push_back(b);  // magic, version, 7 fields, flag, group size
    boundaries.push_back(header);
    for (const TensorInfo& t : read_llama2c_catalogue(path).tensors) boundaries.push_back(t.offset + t.nbytes);
    write_bytes(path, full);
    expect_cuts_fail(full, around(boundaries, full.size()), path, [&] { read_llama2c_catalogue(path); },
                     [&](size_t cut) {
                       // A v1/v2 file cut inside its magic is read as a v0 header (no magic) of `cut` bytes.
                       const size_t needed = cut < 4 ? 28 : header;
                       return cut < needed ? ErrorCode::Llama2cHeaderTruncated : ErrorCode::Llama2cSizeMismatch;
                     });
  }
}

// At every zip record (local headers, central directory entries, end record) and every entry's data.
TEST(HostileTruncation, PytorchAtEveryZipRecord) {
  TempDir dir;
  const std::string path = dir.file("model.pt");
  const TensorSpec t{.numel = 4, .size = {2, 2}, .stride = {2, 1}};
  const std::string full = checkpoint_bytes(state_dict_pickle({{"w", t}}), {{"0", le_bytes<float>({1, 2, 3, 4})}});
  std::vector<uint64_t> boundaries = {0};
  for (const char* signature : {"PK\x03\x04", "PK\x01\x02", "PK\x05\x06"})
    for (size_t at = full.find(signature); at != std::string::npos; at = full.find(signature, at + 1))
      boundaries.insert(boundaries.end(), {at, at + 4});  // the record and its first field
  write_bytes(path, full);
  for (const TensorInfo& info : read_pytorch_catalogue(path).tensors)
    boundaries.insert(boundaries.end(), {info.offset, info.offset + info.nbytes});
  boundaries.push_back(full.size() - 1);
  expect_cuts_fail(full, around(boundaries, full.size()), path, [&] { read_pytorch_catalogue(path); },
                   [](size_t) { return ErrorCode::ZipInvalid; });
}

TEST(HostileTruncation, CustomBinaryModelBinAndMetaTxtAtEveryByte) {
  TempDir dir;
  write_custom_binary(dir.path().string(), {{"a", TensorView::empty(DType::F32, {2, 3})},
                                            {"b", TensorView::empty(DType::F32, {4})}});
  const std::string bin = dir.file("model.bin"), meta = dir.file("meta.txt");
  const std::string full_meta = read_bytes(meta);
  const std::string full_bin = read_bytes(bin);
  expect_cuts_fail(full_bin, every_byte(full_bin), bin, [&] { read_custom_binary_catalogue(dir.path().string()); },
                   [](size_t) { return ErrorCode::BinSizeMismatch; });
  // model.bin of 1 byte, which no declaration matches: each cut of meta.txt leaves either a
  // malformed last line or well-formed lines whose sizes disagree with model.bin.
  write_bytes(bin, "x");
  // (Size mismatches name model.bin, malformed lines meta.txt: both lie in the directory.)
  expect_cuts_fail(full_meta, every_byte(full_meta), meta, [&] { read_custom_binary_catalogue(dir.path().string()); }, [&](size_t cut) {
    const std::string kept = full_meta.substr(0, cut);
    const std::string last = kept.substr(kept.rfind('\n') == std::string::npos ? 0 : kept.rfind('\n') + 1);
    const bool malformed = !last.empty() && (last.find(':') == std::string::npos || last.back() == ',');
    return malformed ? ErrorCode::MetaLineInvalid : ErrorCode::BinSizeMismatch;
  }, dir.path().string());
}

}  // namespace
}  // namespace wl::test
