#include "formats/llama2c/header.hpp"

#include <array>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "formats/llama2c/layout.hpp"
#include "weightloader/error.hpp"

namespace wl::llama2c {
namespace {

static_assert(std::endian::native == std::endian::little, "header fields are copied as little-endian");

constexpr size_t kFieldsAt = 8;      // v1/v2: after magic and version
constexpr size_t kFlagAt = 36;       // v1/v2: u8 shared classifier flag
constexpr size_t kGroupSizeAt = 37;  // v2: i32 group size, unaligned as Python's struct.pack wrote it

// The 7 int32 fields, in file order.
constexpr std::array<const char*, 7> kFieldNames = {"dim",        "hidden_dim", "n_layers", "n_heads",
                                                    "n_kv_heads", "vocab_size", "seq_len"};

constexpr std::array<uint64_t Llama2cHeader::*, 7> kFields = {
    &Llama2cHeader::dim,        &Llama2cHeader::hidden_dim, &Llama2cHeader::n_layers, &Llama2cHeader::n_heads,
    &Llama2cHeader::n_kv_heads, &Llama2cHeader::vocab_size, &Llama2cHeader::seq_len};
constexpr size_t kVocab = 5;  // vocab_size's place among them

template <typename T>
T load(std::span<const std::byte> bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

template <typename T>
void store(std::vector<std::byte>& bytes, size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof v);
}

void check_field(const char* name, uint64_t value, uint64_t max, const std::string& file) {
  if (value == 0 || value > max)
    throw Error(ErrorCode::Llama2cInvalidField,
                fmt::format("header field {} is {}; it must be between 1 and {}", name, value, max), file);
}

}  // namespace

uint64_t header_bytes(const Llama2cHeader& h) { return h.version == 0 ? kLegacyHeaderBytes : kHeaderBytes; }

void validate(const Llama2cHeader& h, const std::string& file) {
  if (h.version < 0 || h.version > 2)
    throw Error(ErrorCode::Llama2cUnsupportedVersion,
                fmt::format("llama2.c checkpoint version {} is not supported (0, 1 and 2 are)", h.version), file);
  check_field("dim", h.dim, kLlama2cMaxDim, file);
  check_field("hidden_dim", h.hidden_dim, kLlama2cMaxHiddenDim, file);
  check_field("n_layers", h.n_layers, kLlama2cMaxLayers, file);
  check_field("n_heads", h.n_heads, kLlama2cMaxDim, file);
  check_field("n_kv_heads", h.n_kv_heads, kLlama2cMaxDim, file);
  check_field("vocab_size", h.vocab_size, kLlama2cMaxVocab, file);
  check_field("seq_len", h.seq_len, kLlama2cMaxSeqLen, file);
  if (h.dim % h.n_heads != 0)
    throw Error(ErrorCode::Llama2cInconsistentHeads,
                fmt::format("dim {} is not a multiple of n_heads {}", h.dim, h.n_heads), file);
  if (h.n_heads % h.n_kv_heads != 0)
    throw Error(ErrorCode::Llama2cInconsistentHeads,
                fmt::format("n_heads {} is not a multiple of n_kv_heads {}", h.n_heads, h.n_kv_heads), file);
  if (h.head_size() % 2 != 0)
    throw Error(ErrorCode::Llama2cInconsistentHeads,
                fmt::format("head size dim / n_heads = {} / {} = {} is odd; rotary embeddings rotate pairs", h.dim,
                            h.n_heads, h.head_size()),
                file);
  // Every v2 matrix has dim as a factor of its size, so this makes each one whole groups.
  if (h.version == 2 && (h.group_size == 0 || h.dim % h.group_size != 0))
    throw Error(ErrorCode::Llama2cInvalidGroupSize,
                fmt::format("group size {} does not divide dim {}", h.group_size, h.dim), file);
}

Llama2cHeader parse_header(std::span<const std::byte> head, uint64_t file_size, const std::string& file) {
  const bool magic = head.size() >= 4 && load<uint32_t>(head, 0) == kLlama2cMagic;
  const uint64_t need = magic ? kHeaderBytes : kLegacyHeaderBytes;
  if (file_size < need || head.size() < need)
    throw Error(ErrorCode::Llama2cHeaderTruncated,
                fmt::format("file of {} bytes is shorter than the {}-byte header of a llama2.c checkpoint{}",
                            file_size, need, magic ? " with the \"ak42\" magic" : ""),
                file);

  Llama2cHeader h;
  size_t at = 0;
  if (magic) {
    const int32_t version = load<int32_t>(head, 4);
    if (version != 1 && version != 2)
      throw Error(ErrorCode::Llama2cUnsupportedVersion,
                  fmt::format("llama2.c checkpoint version {} is not supported (1 and 2 are, after the magic)",
                              version),
                  file);
    h.version = version;
    at = kFieldsAt;
  }
  for (size_t i = 0; i < kFields.size(); ++i) {
    int64_t v = load<int32_t>(head, at + 4 * i);
    if (!magic && i == kVocab) {  // v0: a negative vocab_size means an unshared classifier
      h.shared_classifier = v > 0;
      v = v < 0 ? -v : v;
    }
    if (v < 0)
      throw Error(ErrorCode::Llama2cInvalidField,
                  fmt::format("header field {} is {}; it must be positive", kFieldNames[i], v), file);
    h.*kFields[i] = static_cast<uint64_t>(v);
  }
  if (magic) {
    const auto flag = static_cast<uint8_t>(head[kFlagAt]);
    if (flag > 1)
      throw Error(ErrorCode::Llama2cInvalidField,
                  fmt::format("shared classifier flag is {}; it must be 0 or 1", flag), file);
    h.shared_classifier = flag == 1;
  }
  if (h.version == 2) {
    const int32_t group_size = load<int32_t>(head, kGroupSizeAt);
    if (group_size <= 0)
      throw Error(ErrorCode::Llama2cInvalidGroupSize,
                  fmt::format("group size {} is not positive", group_size), file);
    h.group_size = static_cast<uint64_t>(group_size);
  }
  validate(h, file);

  const uint64_t expected = llama2c::file_size(h);
  if (expected != file_size) {
    Llama2cHeader flipped = h;
    flipped.shared_classifier = !h.shared_classifier;
    const std::string hint =
        llama2c::file_size(flipped) == file_size
            ? fmt::format(" (the size of a file with {} classifier: is the header's {} wrong?)",
                          flipped.shared_classifier ? "a shared" : "an unshared",
                          h.version == 0 ? "sign of vocab_size" : "shared classifier flag")
            : std::string();
    throw Error(ErrorCode::Llama2cSizeMismatch,
                fmt::format("file holds {} bytes but its header ({}) implies {} bytes{}", file_size, describe(h),
                            expected, hint),
                file);
  }
  return h;
}

std::vector<std::byte> encode_header(const Llama2cHeader& h) {
  std::vector<std::byte> bytes(header_bytes(h));  // zero padding included
  size_t at = 0;
  if (h.version != 0) {
    store<uint32_t>(bytes, 0, kLlama2cMagic);
    store<int32_t>(bytes, 4, h.version);
    at = kFieldsAt;
  }
  for (size_t i = 0; i < kFields.size(); ++i) {
    auto v = static_cast<int32_t>(h.*kFields[i]);  // validated: every field is below 2^31
    if (h.version == 0 && i == kVocab && !h.shared_classifier) v = -v;
    store<int32_t>(bytes, at + 4 * i, v);
  }
  if (h.version != 0) bytes[kFlagAt] = static_cast<std::byte>(h.shared_classifier ? 1 : 0);
  if (h.version == 2) store<int32_t>(bytes, kGroupSizeAt, static_cast<int32_t>(h.group_size));
  return bytes;
}

std::string describe(const Llama2cHeader& h) {
  std::string s = fmt::format("v{}, dim {}, hidden_dim {}, n_layers {}, n_heads {}, n_kv_heads {}, vocab_size {}, "
                              "seq_len {}, {} classifier",
                              h.version, h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads, h.vocab_size,
                              h.seq_len, h.shared_classifier ? "shared" : "unshared");
  if (h.version == 2) s += fmt::format(", group size {}", h.group_size);
  return s;
}

}  // namespace wl::llama2c
