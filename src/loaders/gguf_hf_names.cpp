// The "gguf" format entry: a GGUF's stored tensors presented the Hugging Face way through the
// "gguf" naming scheme for its general.architecture, so that every loader, safe_open and the tools
// see them alike: Hugging Face names, q/k rows in Hugging Face's order where llama.cpp stores them
// interleaved (llama), each expert of a stack (blk.N.ffn_*_exps) as a tensor of its own, and
// Gemma's norms as transformers stores them (w, where GGUF holds 1 + w).
#include <charconv>
#include <unordered_set>

#include <fmt/format.h>

#include "formats/offset_decoder.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {
namespace {

// A head count from the metadata as the catalogue shows it (integers in decimal).
uint64_t gguf_head_count(const Catalogue& c, const std::string& key, const std::string& file, const std::string& tensor) {
  const auto it = c.metadata.find(key);
  uint64_t n = 0;
  if (it != c.metadata.end()) {
    const std::string& text = it->second;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size()) n = 0;
  }
  if (n == 0)
    throw Error(ErrorCode::GgufHeadCount,
                fmt::format("{} is {}; it must be a positive integer to present the q/k rows in Hugging Face's layout "
                            "(read_gguf_catalogue keeps the stored names and layout)",
                            key, it == c.metadata.end() ? "missing" : it->second),
                file, tensor);
  return n;
}

// The order that reads a stored (interleaved) q/k projection in Hugging Face's layout.
std::vector<uint64_t> hf_rows(const Catalogue& c, const std::string& arch, const TensorInfo& info, bool kv,
                              const std::string& file) {
  const std::string kv_key = arch + ".attention.head_count_kv";
  const std::string key = kv && c.metadata.count(kv_key) ? kv_key : arch + ".attention.head_count";
  const uint64_t heads = gguf_head_count(c, key, file, info.name);
  const uint64_t rows = info.shape.empty() ? 1 : info.shape[0];
  if (info.decoder && (info.numel() / rows) % info.decoder->block_elems() != 0)
    throw Error(ErrorCode::GgufUnsupportedTensorType,
                fmt::format("{} rows of {} elements are not whole blocks, so they cannot be reordered into Hugging "
                            "Face's rotary layout (read_gguf_catalogue keeps the stored layout)",
                            info.decoder->name(), info.numel() / rows),
                file, info.name);
  return rotary_row_order(rows, heads, RotaryOrder::InterleavedAsHf, {ErrorCode::GgufHeadCount, key, file}, info.name);
}

// Slot `e` of a stored stack (its slices along dim 0 are contiguous, each whole rows of blocks).
TensorInfo stack_slot_of(const TensorInfo& stack, uint64_t e, std::string name) {
  TensorInfo t = stack;
  t.name = std::move(name);
  t.shape.erase(t.shape.begin());
  t.nbytes = stack.nbytes / stack.shape[0];
  t.offset = stack.offset + e * t.nbytes;
  return t;
}

// A stored tensor as Hugging Face names it (itself when the architecture has no name for it).
void present(const Catalogue& c, const std::string& arch, TensorInfo& info, const std::string& file) {
  auto hf = to_canonical("gguf", info.name, arch);
  if (!hf) return;
  // A q/k tensor with no elements has nothing to reorder (and its row count, unbounded by the
  // file's bytes, must not size an allocation: found by fuzz_gguf).
  if (interleaved_rotary("gguf", arch) && hf->rotary && info.numel() > 0) info.row_order = hf_rows(c, arch, info, hf->kv, file);
  if (const float offset = norm_offset("gguf", hf->name, arch); offset != 0) {
    info.decoder = offset_decoder(info.decoder, info.dtype, offset);
    info.dtype = DType::F32;
  }
  info.name = std::move(hf->name);
}

Catalogue as_hf(Catalogue c, const std::string& file) {
  const auto it = c.metadata.find("general.architecture");
  if (it == c.metadata.end()) return c;
  const std::string arch = it->second;
  std::vector<TensorInfo> tensors;
  std::unordered_set<std::string> presented;
  for (TensorInfo& info : c.tensors) {
    const std::string stored = info.name;
    std::vector<TensorInfo> shown;
    // A stack's slots are matrices (so whole rows of blocks); anything else keeps its stored name.
    if (stacked_canonical("gguf", stored, 0, arch) && info.shape.size() >= 2 && info.shape[0] > 0) {
      for (uint64_t e = 0; e < info.shape[0]; ++e)
        shown.push_back(stack_slot_of(info, e, *stacked_canonical("gguf", stored, e, arch)));
    } else {
      present(c, arch, info, file);
      shown.push_back(std::move(info));
    }
    for (TensorInfo& t : shown) {
      if (!presented.insert(t.name).second)
        throw Error(ErrorCode::DuplicateTensorName,
                    fmt::format("stored tensor '{}' is presented as '{}', a name another tensor already has", stored, t.name),
                    c.file_of(t), t.name);
      tensors.push_back(std::move(t));
    }
  }
  c.tensors = std::move(tensors);
  return c;
}

}  // namespace

const FileFormat& gguf_format() {
  static const FileFormat format{"gguf", is_gguf, [](const ByteSource& source, const Opener& opener) {
                                   return as_hf(read_gguf_catalogue(source, opener), source.name());
                                 }};
  return format;
}

}  // namespace wl
