// GGUF files as catalogues of their stored names and rows, split models read as one, and how a
// GGUF file is recognised.
#include <cstring>
#include <unordered_map>

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

TensorInfo tensor_info(const GgufFile& file, SourceIndex source, const GgufTensorRecord& record) {
  TensorInfo info;
  info.name = record.name;
  if (const auto dtype = gguf::ggml_raw_dtype(record.type)) {
    info.dtype = *dtype;
  } else if (auto decoder = gguf::ggml_decoder(record.type)) {
    info.dtype = decoder->output_dtype();
    info.decoder = std::move(decoder);
  } else {
    // Listed with its type; reading it is refused (the decoder says why, naming file and tensor).
    info.dtype = DType::F32;
    info.decoder = gguf::ggml_refusing_decoder(record.type, file.path, record.name);
  }
  info.shape = record.shape();
  info.source = source;
  info.offset = file.data_offset + record.offset;
  info.nbytes = record.nbytes;
  return info;
}

}  // namespace

Catalogue read_gguf_catalogue(const ByteSource& source, const Opener& opener) {
  const std::vector<GgufFile> files = read_splits(source, opener);
  Catalogue out;
  for (const auto& [key, value] : files.front().metadata) out.metadata.emplace(key, gguf_value_to_string(value));
  std::unordered_map<std::string, const std::string*> file_of;  // stored name -> its split
  for (const GgufFile& file : files) {
    const SourceIndex source = out.add_file(file.path);
    for (const GgufTensorRecord& record : file.tensors) {
      const auto [it, fresh] = file_of.emplace(record.name, &file.path);
      if (!fresh)
        throw Error(ErrorCode::TensorInTwoFiles, fmt::format("also in split {}", *it->second), file.path, record.name);
      out.tensors.push_back(tensor_info(file, source, record));
    }
  }
  return out;
}

Catalogue read_gguf_catalogue(const std::string& path) {
  return read_gguf_catalogue(*local_opener()->open(path), *local_opener());
}

bool is_gguf(std::span<const std::byte> head, uint64_t) {
  if (head.size() < 8 || std::memcmp(head.data(), "GGUF", 4) != 0) return false;
  uint32_t version;
  std::memcpy(&version, head.data() + 4, sizeof version);
  return version == 2 || version == 3;
}

}  // namespace wl
