// The hostile-input matrix as files on disk: one corrupt, truncated, lying or malicious input per
// case, each with the error it must produce. The matrix tests open them the way a user would
// (`--loader auto`), and the memory-bound test runs the CLI over all of them under a small
// address-space limit.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf/gguf_test_util.hpp"
#include "formats/llama2c/l2c_test_util.hpp"
#include "formats/pytorch/pt_test_util.hpp"
#include "formats/safetensors/st_test_util.hpp"
#include "test_util.hpp"
#include "weightloader/error.hpp"

namespace wl::test {

// One case: a file, or a directory of files, and the error it must give.
struct HostileCase {
  std::string name;   // the file's or the directory's name
  std::vector<std::pair<std::string, std::string>> files;  // path below the case's directory → bytes; a file
                                                           // case has one, named `name`
  ErrorCode code;     // the error it must give
  std::string named;  // a part of the message that must appear besides the path (a tensor, a key), or ""
};

struct HostileFile {
  std::string path;  // a file or a directory, opened with --loader auto
  ErrorCode code;
  std::string named;
};

namespace hostile {

inline std::string u64(uint64_t v) {
  std::string out;
  put_le(out, v, 8);
  return out;
}

inline GgufBytes gguf_with_tensor(const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset) {
  GgufBytes b;
  b.header(1, 0).tensor("w", ne, type, offset).pad();
  return b.le<float>(1).le<float>(2);
}

// A zip checkpoint whose first central-directory entry has the 4 bytes at `field` replaced.
inline std::string zip_with_lying_directory(size_t field, uint32_t value) {
  const TensorSpec t{.numel = 2, .size = {2}, .stride = {1}};
  std::string zip = checkpoint_bytes(state_dict_pickle({{"w", t}}), {{"0", le_bytes<float>({1, 2})}});
  const size_t cd = zip.find("PK\x01\x02");
  set_le(zip, cd + field, value, 4);
  return zip;
}

inline std::string pickle_checkpoint(const std::string& pickle) { return checkpoint_bytes(pickle, {}); }

}  // namespace hostile

// Every hostile input, in memory (cheap: the test list is built from it at start-up).
inline std::vector<HostileCase> hostile_cases() {
  using namespace hostile;
  std::vector<HostileCase> out;
  const auto file = [&](const std::string& name, const std::string& bytes, ErrorCode code, std::string named = {}) {
    out.push_back({name, {{name, bytes}}, code, std::move(named)});
  };
  const auto folder = [&](const std::string& name, std::vector<std::pair<std::string, std::string>> files,
                          ErrorCode code, std::string named = {}) {
    out.push_back({name, std::move(files), code, std::move(named)});
  };
  const std::string w2 = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string two_floats(8, '\0');

  // Not checkpoints at all.
  file("empty.bin", "", ErrorCode::HeaderTooSmall);  // "the file is empty", a FormatError in Python
  static constexpr char kPng[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10\x08\x06\0\0\0";
  file("image.png", std::string(kPng, sizeof kPng - 1), ErrorCode::UnknownFormat);  // a PNG's first 29 bytes
  folder("empty_dir", {}, ErrorCode::NoMatchingFiles);

  // safetensors.
  // Auto detection takes a lone file with an impossible header length for no checkpoint at all
  // (UnknownFormat); in a Hugging Face directory the name says safetensors and the reader says why.
  const auto hf_dir = [&](const std::string& name, const std::string& bytes, ErrorCode code) {
    folder(name, {{"model.safetensors", bytes}}, code);
  };
  hf_dir("st_header_length_huge", u64(~0ull) + "{}", ErrorCode::HeaderTooLarge);
  hf_dir("st_header_past_eof", u64(1000) + "{}", ErrorCode::InvalidHeaderLength);
  file("st_data_truncated.safetensors", safetensors_bytes("{" + w2 + "}", "\1\2\3"),
       ErrorCode::MetadataIncompleteBuffer);
  file("st_offset_past_eof.safetensors",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,1099511627776]}})", two_floats),
       ErrorCode::TensorInvalidInfo, "'w'");
  file("st_overlap.safetensors",
       safetensors_bytes("{" + w2 + R"(,"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(12, '\0')),
       ErrorCode::InvalidOffset);
  file("st_numel_overflow.safetensors",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,2],"data_offsets":[0,8]}})", two_floats),
       ErrorCode::ValidationOverflow, "'w'");
  file("st_unknown_dtype.safetensors",
       safetensors_bytes(R"({"w":{"dtype":"F99","shape":[2],"data_offsets":[0,8]}})", two_floats),
       ErrorCode::UnsupportedDType, "F99");

  // Sharded checkpoints.
  const auto index_dir = [&](const std::string& name, const std::string& shard, ErrorCode code) {
    folder(name,
           {{"model.safetensors.index.json", R"({"weight_map":{"w":")" + shard + R"("}})"},
            {"model-00001-of-00001.safetensors", safetensors_bytes("{" + w2 + "}", two_floats)}},
           code);
  };
  index_dir("index_parent_dir", "../outside.safetensors", ErrorCode::IndexInvalid);
  index_dir("index_absolute", "/etc/passwd", ErrorCode::IndexInvalid);
  folder("duplicate_across_shards",
         {{"a.safetensors", safetensors_bytes("{" + w2 + "}", two_floats)},
          {"b.safetensors", safetensors_bytes("{" + w2 + "}", two_floats)}},
         ErrorCode::TensorInTwoFiles, "'w'");

  // GGUF.
  GgufBytes counts;
  counts.header(1ull << 62, 1ull << 62);
  file("gguf_counts_huge.gguf", counts.str(), ErrorCode::GgufCountTooLarge);
  GgufBytes string_gb;
  string_gb.header(0, 1).le<uint64_t>(4ull << 30).raw("key and some bytes");
  file("gguf_string_4gib.gguf", string_gb.str(), ErrorCode::GgufStringTooLong);
  GgufBytes array_gb;
  array_gb.header(0, 1).key("a", 9).le<uint32_t>(0).le<uint64_t>(3ull << 30).raw("xyz");
  file("gguf_array_3gi.gguf", array_gb.str(), ErrorCode::GgufArrayTooLong, "'a'");
  GgufBytes strings;
  strings.header(0, 1).key("tokens", 9).le<uint32_t>(8).le<uint64_t>(60ull << 20).str("a").str("b");
  file("gguf_string_array_past_eof.gguf", strings.str(), ErrorCode::GgufCountTooLarge, "'tokens'");
  file("gguf_offset_past_eof.gguf", gguf_with_tensor({2}, 0, 1ull << 40).str(), ErrorCode::GgufTensorOutOfBounds, "'w'");
  file("gguf_offset_unaligned.gguf", gguf_with_tensor({1}, 0, 4).str(), ErrorCode::GgufMisalignedOffset, "'w'");
  file("gguf_numel_overflow.gguf", gguf_with_tensor({1ull << 40, 1ull << 40}, 0, 0).str(),
       ErrorCode::ValidationOverflow, "'w'");
  file("gguf_unknown_type.gguf", gguf_with_tensor({2}, 200, 0).str(), ErrorCode::GgufBadTensorType, "'w'");

  // llama2.c (v1: magic, version, then 7 int32 fields).
  file("l2c_huge_fields.bin", magic_header(1, {1 << 30, 1 << 30, 1 << 30, 8, 8, 1 << 30, 1 << 30}, 1),
       ErrorCode::Llama2cInvalidField);
  file("l2c_truncated.bin", magic_header(1, {64, 172, 5, 8, 4, 512, 512}, 1), ErrorCode::Llama2cSizeMismatch);

  // PyTorch: zip and pickle.
  file("pt_cd_size_lies.pt", zip_with_lying_directory(20, 0x7fffffff), ErrorCode::ZipInvalid);
  file("pt_cd_offset_lies.pt", zip_with_lying_directory(42, 0x7fffff00), ErrorCode::ZipInvalid);
  file("pt_os_system.pt",
       pickle_checkpoint(pk::proto(2) + pk::global("os", "system") + pk::str("touch /tmp/pwned") + "\x85R."),
       ErrorCode::PickleGlobalNotAllowed, "os.system");
  file("pt_deeply_nested.pt", pickle_checkpoint(pk::proto(2) + std::string(100000, '(') + "."),
       ErrorCode::PickleLimitExceeded);
  file("pt_self_referential.pt", pickle_checkpoint(pk::proto(2) + "}q\x01" + pk::str("me") + "h\x01" + "s."),
       ErrorCode::StateDictNotFound);
  file("pt_huge_memo_index.pt", pickle_checkpoint(pk::proto(2) + "Nr\xff\xff\xff\xff" "j\xfe\xff\xff\xff."),
       ErrorCode::PickleInvalid, "memo entry 4294967294");

  // The custom binary format.
  folder("custom_binary_overflow", {{"meta.txt", "w:4294967296,4294967296,2\n"}, {"model.bin", ""}},
         ErrorCode::ValidationOverflow, "'w'");
  return out;
}

// Writes every hostile input into `dir` and lists them.
inline std::vector<HostileFile> write_hostile_files(const TempDir& dir) {
  std::vector<HostileFile> out;
  for (const HostileCase& c : hostile_cases()) {
    const bool is_file = c.files.size() == 1 && c.files.front().first == c.name;
    const std::filesystem::path base = is_file ? dir.path() : dir.path() / c.name;
    std::filesystem::create_directories(base);
    for (const auto& [path, bytes] : c.files) write_bytes((base / path).string(), bytes);
    out.push_back({dir.file(c.name), c.code, c.named});
  }
  return out;
}

}  // namespace wl::test
