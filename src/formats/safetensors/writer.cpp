// Writing safetensors files: the header first, then each tensor's bytes as they arrive.
#include <bit>
#include <cstring>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_output.hpp"
#include "core/utf8.hpp"
#include "weightloader/content_digest.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {
namespace {

static_assert(std::endian::native == std::endian::little, "tensor bytes are written straight from memory");

void require_utf8(const std::string& text, const char* what, const std::string& path) {
  if (const auto bad = safetensors::find_invalid_utf8(text))
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("{} is not valid UTF-8 (byte {}); a safetensors header is JSON text", what, *bad), path);
}

uint64_t entry_bytes(const SafetensorsEntry& entry, const std::string& path) {
  const uint64_t numel = shape_numel(entry.shape);
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(numel, uint64_t{dtype_size(entry.dtype)}, &bytes))
    throw Error(ErrorCode::ValidationOverflow,
                fmt::format("{} {} is more than 2^64 bytes", dtype_name(entry.dtype), shape_to_string(entry.shape)),
                path, entry.name);
  return bytes;
}

// The header JSON, padded with spaces to a multiple of 8 bytes; `ends` receives where each
// tensor's data ends in the data buffer.
std::string build_header(const std::vector<SafetensorsEntry>& entries,
                         const std::map<std::string, std::string>& metadata, std::vector<uint64_t>& ends,
                         const std::string& path) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) {
      require_utf8(key, "metadata key", path);
      require_utf8(value, "metadata value", path);
      meta[key] = value;
    }
    header["__metadata__"] = std::move(meta);
  }
  std::unordered_set<std::string_view> seen;
  uint64_t offset = 0;
  for (const SafetensorsEntry& entry : entries) {
    require_utf8(entry.name, "tensor name", path);
    if (entry.name == "__metadata__")
      throw Error(ErrorCode::InvalidArgument, "\"__metadata__\" is reserved and cannot name a tensor", path);
    if (!seen.insert(entry.name).second)
      throw Error(ErrorCode::DuplicateTensorName, "tensor name given twice", path, entry.name);
    const uint64_t bytes = entry_bytes(entry, path);
    if (__builtin_add_overflow(offset, bytes, &offset))
      throw Error(ErrorCode::ValidationOverflow, "the tensors' total size overflows u64", path, entry.name);
    ends.push_back(offset);
    header[entry.name] = {{"dtype", dtype_name(entry.dtype)},
                          {"shape", entry.shape},
                          {"data_offsets", {offset - bytes, offset}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kSafetensorsMaxHeaderBytes)
    throw Error(ErrorCode::HeaderTooLarge,
                fmt::format("header would be {} bytes, above the readers' limit of {}", text.size(),
                            kSafetensorsMaxHeaderBytes),
                path);
  return text;
}

}  // namespace

struct SafetensorsStreamWriter::State {
  std::string path;
  std::vector<SafetensorsEntry> entries;
  std::vector<uint64_t> ends;  // data-buffer offset where each entry's bytes end
  AtomicFileWriter out;
  uint64_t written = 0;        // data bytes received so far
  size_t next = 0;             // the first entry not completely written
  bool finished = false;

  State(std::string p, std::vector<SafetensorsEntry> e, std::vector<uint64_t> d)
      : path(std::move(p)), entries(std::move(e)), ends(std::move(d)), out(path) {}
  uint64_t total() const { return ends.empty() ? 0 : ends.back(); }
  uint64_t begin_of(size_t i) const { return i == 0 ? 0 : ends[i - 1]; }
};

SafetensorsStreamWriter::SafetensorsStreamWriter(std::string path, std::vector<SafetensorsEntry> entries,
                                                 const std::map<std::string, std::string>& metadata) {
  std::vector<uint64_t> ends;
  const std::string header = build_header(entries, metadata, ends, path);
  state_ = std::make_unique<State>(std::move(path), std::move(entries), std::move(ends));
  const uint64_t n = header.size();  // little-endian, as the static_assert above guarantees
  state_->out.write(&n, sizeof n);
  state_->out.write(header.data(), header.size());
}

SafetensorsStreamWriter::~SafetensorsStreamWriter() = default;

uint64_t SafetensorsStreamWriter::bytes_remaining() const noexcept { return state_->total() - state_->written; }

void SafetensorsStreamWriter::write(const void* data, size_t length) {
  State& s = *state_;
  if (s.finished) throw Error(ErrorCode::InvalidArgument, "write after finish()", s.path);
  if (length > s.total() - s.written)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("{} more bytes given but only {} of the declared {} data bytes remain", length,
                            s.total() - s.written, s.total()),
                s.path);
  s.out.write(data, length);
  s.written += length;
  // Zero-size entries at the new position count as written.
  while (s.next < s.entries.size() && s.ends[s.next] <= s.written) ++s.next;
}

void SafetensorsStreamWriter::write_tensor(const TensorView& tensor) {
  State& s = *state_;
  if (s.next >= s.entries.size())
    throw Error(ErrorCode::InvalidArgument, "write_tensor() after every declared tensor was written", s.path);
  const SafetensorsEntry& entry = s.entries[s.next];
  if (s.written != s.begin_of(s.next))
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("write_tensor() in the middle of this tensor ({} of its bytes already written)",
                            s.written - s.begin_of(s.next)),
                s.path, entry.name);
  if (!tensor.defined()) throw Error(ErrorCode::InvalidArgument, "tensor has no data", s.path, entry.name);
  if (tensor.dtype() != entry.dtype)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("tensor is {} but was declared {}", dtype_name(tensor.dtype()), dtype_name(entry.dtype)),
                s.path, entry.name);
  if (tensor.shape() != entry.shape)
    throw Error(ErrorCode::ShapeMismatch,
                fmt::format("tensor has shape {} but was declared {}", shape_to_string(tensor.shape()),
                            shape_to_string(entry.shape)),
                s.path, entry.name);
  const size_t index = s.next;
  if (tensor.is_contiguous()) {
    write(tensor.raw(), tensor.nbytes());
  } else {
    const TensorView dense = tensor.to(tensor.dtype());
    write(dense.raw(), dense.nbytes());
  }
  s.next = index + 1;  // also for a zero-size tensor, which write() does not move past
}

void SafetensorsStreamWriter::finish() {
  State& s = *state_;
  if (s.finished) throw Error(ErrorCode::InvalidArgument, "finish() called twice", s.path);
  if (s.written != s.total())
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("only {} of the declared {} data bytes were written", s.written, s.total()), s.path,
                s.entries[s.next].name);
  s.out.commit();
  s.finished = true;
}

namespace {

// What write_safetensors and serialize_safetensors write: an entry per tensor, and the metadata
// with each tensor's digest added when asked. `label` names the output in errors.
struct Layout {
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
};

Layout layout_of(const std::vector<std::pair<std::string, TensorView>>& tensors,
                 const std::map<std::string, std::string>& metadata, bool record_digests, const std::string& label) {
  Layout out{{}, metadata};
  out.entries.reserve(tensors.size());
  nlohmann::json digests = nlohmann::json::object();
  for (const auto& [name, tensor] : tensors) {
    if (!tensor.defined()) throw Error(ErrorCode::InvalidArgument, "tensor has no data", label, name);
    out.entries.push_back({name, tensor.dtype(), tensor.shape()});
    if (!record_digests) continue;
    const TensorView dense = tensor.is_contiguous() ? tensor : tensor.to(tensor.dtype());  // the bytes written
    ContentDigest digest(DigestKind::Sha256, dense.nbytes(), label);
    digest.update(dense.raw(), dense.nbytes());
    digests[name] = digest.hex();
  }
  if (record_digests) out.metadata[kTensorDigestsKey] = digests.dump();
  return out;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, TensorView>>& tensors,
                       const std::map<std::string, std::string>& metadata, bool record_digests) {
  Layout layout = layout_of(tensors, metadata, record_digests, path);
  SafetensorsStreamWriter writer(path, std::move(layout.entries), layout.metadata);
  for (const auto& entry : tensors) writer.write_tensor(entry.second);
  writer.finish();
}

void serialize_safetensors(const std::vector<std::pair<std::string, TensorView>>& tensors,
                           const std::map<std::string, std::string>& metadata, bool record_digests,
                           const std::function<std::byte*(uint64_t size)>& allocate) {
  const std::string label = "(in memory)";
  const Layout layout = layout_of(tensors, metadata, record_digests, label);
  std::vector<uint64_t> ends;
  const std::string header = build_header(layout.entries, layout.metadata, ends, label);
  const uint64_t n = header.size();  // little-endian, as the static_assert above guarantees
  std::byte* out = allocate(sizeof n + n + (ends.empty() ? 0 : ends.back()));
  std::memcpy(out, &n, sizeof n);
  std::memcpy(out + sizeof n, header.data(), n);
  out += sizeof n + n;
  for (const auto& [name, tensor] : tensors) {
    const TensorView dense = tensor.is_contiguous() ? tensor : tensor.to(tensor.dtype());
    if (dense.nbytes()) std::memcpy(out, dense.raw(), dense.nbytes());
    out += dense.nbytes();
  }
}

}  // namespace wl
