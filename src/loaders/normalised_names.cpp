// The names a checkpoint's tensors go by: a GGUF Llama's stored names and q/k rows presented the
// Hugging Face way through the "gguf" naming scheme (in the "gguf" format entry, so every loader,
// safe_open and the tools see them alike), and the tools' normalised names.
#include <charconv>
#include <unordered_set>

#include <fmt/format.h>

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
std::vector<uint64_t> hf_rows(const Catalogue& c, const TensorInfo& info, bool kv, const std::string& file) {
  const std::string key = kv && c.metadata.count("llama.attention.head_count_kv") ? "llama.attention.head_count_kv"
                                                                                   : "llama.attention.head_count";
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

// For general.architecture "llama": Hugging Face names (token_embd.weight -> model.embed_tokens.weight,
// ...) and q/k rows in Hugging Face's order; other architectures keep their stored names.
Catalogue as_hf_llama(Catalogue c, const std::string& file) {
  const auto arch = c.metadata.find("general.architecture");
  if (arch == c.metadata.end() || arch->second != "llama") return c;
  std::unordered_set<std::string> presented;
  for (TensorInfo& info : c.tensors) {
    const std::string stored = info.name;
    if (auto hf = to_canonical("gguf", stored)) {
      // A q/k tensor with no elements has nothing to reorder (and its row count, unbounded by the
      // file's bytes, must not size an allocation: found by fuzz_gguf).
      if (hf->rotary && info.numel() > 0) info.row_order = hf_rows(c, info, hf->kv, file);
      info.name = std::move(hf->name);
    }
    if (!presented.insert(info.name).second)
      throw Error(ErrorCode::DuplicateTensorName,
                  fmt::format("stored tensor '{}' is presented as '{}', a name another tensor already has", stored,
                              info.name),
                  info.file, info.name);
  }
  return c;
}

}  // namespace

const FileFormat& gguf_format() {
  static const FileFormat format{"gguf", is_gguf, [](const ByteSource& source, const Opener& opener) {
                                   return as_hf_llama(read_gguf_catalogue(source, opener), source.name());
                                 }};
  return format;
}

std::unique_ptr<WeightSource> with_normalised_names(const WeightSource& source, const NameMapping& mapping) {
  std::vector<TensorInfo> tensors;
  tensors.reserve(source.tensors().size());
  for (const TensorInfo& t : source.tensors()) {
    const std::optional<std::string> mapped = mapping.map(t.name);
    if (!mapped) continue;  // dropped
    tensors.push_back(t);
    tensors.back().name = *mapped;
  }
  return std::make_unique<WeightSource>(source.format(), source.origin(), std::move(tensors), source.metadata(),
                                        source.opener());
}

}  // namespace wl
