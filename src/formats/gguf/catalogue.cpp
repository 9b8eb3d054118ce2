// GGUF files as catalogues: split models read as one, Llama names and rotary layout presented the
// Hugging Face way, and the format entry that recognises GGUF files.
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "formats/gguf/ggml_types.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

// A split.* key as a number; nullopt when absent. GgufSplitMismatch when it is not an integer >= 0.
std::optional<uint64_t> split_key(const GgufFile& f, std::string_view key) {
  const GgufValue* v = f.find(key);
  if (!v) return std::nullopt;
  const auto n = gguf_value_to_uint(*v);
  if (!n)
    throw Error(ErrorCode::GgufSplitMismatch,
                fmt::format("{} is {} ({}), not a non-negative integer", key, gguf_value_to_string(*v),
                            gguf_type_name(gguf_value_type(*v))),
                f.path);
  return n;
}

std::string split_suffix(uint64_t no, uint64_t count) { return fmt::format("-{:05}-of-{:05}.gguf", no, count); }

// The file and every further split it announces, each checked against its name and the first.
std::vector<GgufFile> read_splits(const ByteSource& source, const Opener& opener) {
  const std::string& path = source.name();
  std::vector<GgufFile> files;
  files.push_back(read_gguf(source));
  const GgufFile& first = files.front();
  const uint64_t count = split_key(first, "split.count").value_or(1);
  if (count <= 1) return files;
  const auto no = split_key(first, "split.no");
  if (no != 0)
    throw Error(ErrorCode::GgufSplitMismatch,
                no ? fmt::format("this is split {} of {}; open the first split, which reads them all", *no + 1, count)
                   : fmt::format("split.count is {} but split.no is missing", count),
                path);
  const std::string first_suffix = split_suffix(1, count);
  if (!path.ends_with(first_suffix))
    throw Error(ErrorCode::GgufSplitMismatch,
                fmt::format("split.count is {}, so the first split's name must end with '{}'", count, first_suffix),
                path);
  const auto total = split_key(first, "split.tensors.count");
  if (!total)
    throw Error(ErrorCode::GgufSplitMismatch, fmt::format("split.count is {} but split.tensors.count is missing", count),
                path);
  const std::string prefix = path.substr(0, path.size() - first_suffix.size());
  uint64_t tensors = first.tensors.size();
  for (uint64_t k = 2; k <= count; ++k) {
    const std::string split_path = prefix + split_suffix(k, count);
    if (!opener.exists(split_path))
      throw Error(ErrorCode::GgufSplitMissing, fmt::format("split {} of {} ({}) does not exist", k, count, split_path),
                  path);
    files.push_back(read_gguf(*opener.open(split_path)));
    const GgufFile& f = files.back();
    const auto f_count = split_key(f, "split.count");
    const auto f_no = split_key(f, "split.no");
    if (f_count != count || f_no != k - 1)
      throw Error(ErrorCode::GgufSplitMismatch,
                  fmt::format("named as split {} of {} but split.no = {}, split.count = {} (split.no counts from 0)", k,
                              count, f_no ? fmt::format("{}", *f_no) : "missing",
                              f_count ? fmt::format("{}", *f_count) : "missing"),
                  split_path);
    tensors += f.tensors.size();
  }
  if (tensors != *total)
    throw Error(ErrorCode::GgufSplitMismatch,
                fmt::format("the {} splits hold {} tensors, but split.tensors.count is {}", count, tensors, *total),
                path);
  return files;
}

// A head count from the metadata, for presenting q/k rows in the Hugging Face layout.
uint64_t head_count(const GgufFile& first, std::string_view key, const std::string& tensor) {
  const GgufValue* v = first.find(key);
  const auto n = v ? gguf_value_to_uint(*v) : std::nullopt;
  if (!n || *n == 0)
    throw Error(ErrorCode::GgufHeadCount,
                fmt::format("{} is {}; it must be a positive integer to present the q/k rows in Hugging Face's "
                            "layout (read with GgufNames::Raw to keep the stored layout)",
                            key, v ? gguf_value_to_string(*v) : "missing"),
                first.path, tensor);
  return *n;
}

TensorInfo tensor_info(const GgufFile& file, const GgufTensorRecord& record) {
  TensorInfo info;
  info.name = record.name;
  if (const auto dtype = gguf::ggml_raw_dtype(record.type)) {
    info.dtype = *dtype;
  } else if (auto decoder = gguf::ggml_decoder(record.type)) {
    info.dtype = decoder->output_dtype();
    info.decoder = std::move(decoder);
  } else {
    throw Error(ErrorCode::GgufUnsupportedTensorType,
                fmt::format("{} tensors cannot be decoded by weightloader (supported: F32, F16, BF16, F64, I8, I16, "
                            "I32, I64, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K)",
                            ggml_type_name(record.type)),
                file.path, record.name);
  }
  info.shape = record.shape();
  info.file = file.path;
  info.offset = file.data_offset + record.offset;
  info.nbytes = record.nbytes;
  return info;
}

// Renames Llama tensors to Hugging Face names and orders q/k rows the Hugging Face way.
void present_as_hf_llama(const GgufFile& first, TensorInfo& info) {
  const auto hf = gguf_llama_name_to_hf(info.name);
  if (!hf) return;
  const bool q = hf->find(".self_attn.q_proj.") != std::string::npos;
  const bool k = hf->find(".self_attn.k_proj.") != std::string::npos;
  // A q/k tensor with no elements has nothing to reorder (and its row count, unbounded by the
  // file's bytes, must not size an allocation: found by fuzz_gguf).
  if ((q || k) && info.numel() > 0) {
    const uint64_t heads = k && first.find("llama.attention.head_count_kv")
                               ? head_count(first, "llama.attention.head_count_kv", info.name)
                               : head_count(first, "llama.attention.head_count", info.name);
    const uint64_t rows = info.shape.empty() ? 1 : info.shape[0];
    if (info.decoder && rows > 0 && (info.numel() / rows) % info.decoder->block_elems() != 0)
      throw Error(ErrorCode::GgufUnsupportedTensorType,
                  fmt::format("{} rows of {} elements are not whole blocks, so they cannot be reordered into Hugging "
                              "Face's rotary layout (read with GgufNames::Raw to keep the stored layout)",
                              info.decoder->name(), info.numel() / rows),
                  first.path, info.name);
    try {
      info.row_order = rotary_interleaved_to_hf_rows(rows, heads);
    } catch (const Error& e) {
      throw Error(e.code(), e.message() + fmt::format(" (heads from llama.attention.head_count{})", k ? "_kv" : ""),
                  first.path, info.name);
    }
  }
  info.name = *hf;
}

}  // namespace

Catalogue read_gguf_catalogue(const ByteSource& source, const Opener& opener, GgufNames names) {
  const std::vector<GgufFile> files = read_splits(source, opener);
  const GgufFile& first = files.front();
  Catalogue out;
  for (const auto& [key, value] : first.metadata) out.metadata.emplace(key, gguf_value_to_string(value));
  const auto* arch = first.get<std::string>("general.architecture");
  const bool hf_llama = names == GgufNames::HuggingFace && arch && *arch == "llama";

  std::unordered_map<std::string, const std::string*> file_of;  // stored name -> its split
  std::unordered_set<std::string> presented;
  for (const GgufFile& file : files) {
    for (const GgufTensorRecord& record : file.tensors) {
      const auto [it, fresh] = file_of.emplace(record.name, &file.path);
      if (!fresh)
        throw Error(ErrorCode::TensorInTwoFiles, fmt::format("also in split {}", *it->second), file.path, record.name);
      TensorInfo info = tensor_info(file, record);
      if (hf_llama) present_as_hf_llama(first, info);
      if (!presented.insert(info.name).second)
        throw Error(ErrorCode::DuplicateTensorName,
                    fmt::format("stored tensor '{}' is presented as '{}', a name another tensor already has",
                                record.name, info.name),
                    file.path, info.name);
      out.tensors.push_back(std::move(info));
    }
  }
  return out;
}

Catalogue read_gguf_catalogue(const std::string& path, GgufNames names) {
  return read_gguf_catalogue(*default_opener()->open(path), *default_opener(), names);
}

const FileFormat& gguf_format() {
  static const FileFormat format{
      "gguf",
      [](std::span<const std::byte> head, uint64_t) {
        if (head.size() < 8 || std::memcmp(head.data(), "GGUF", 4) != 0) return false;
        uint32_t version;
        std::memcpy(&version, head.data() + 4, sizeof version);
        return version == 2 || version == 3;
      },
      [](const ByteSource& source, const Opener& opener) { return read_gguf_catalogue(source, opener); }};
  return format;
}

}  // namespace wl
