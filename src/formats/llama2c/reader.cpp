// Reading a llama2.c checkpoint's catalogue, and the format entry that recognises such files.
#include <array>
#include <cstring>
#include <memory>

#include "weightloader/byte_source.hpp"
#include "formats/llama2c/header.hpp"
#include "formats/llama2c/layout.hpp"
#include "formats/llama2c/q8.hpp"
#include "weightloader/error.hpp"

namespace wl {
namespace {

// v1/v2 by their magic alone, so that a bad version or size is reported by the reader; v0 has
// no magic, so only a valid header and an exact file size identify it.
bool sniff_llama2c(std::span<const std::byte> head, uint64_t file_size) {
  uint32_t magic = 0;
  if (head.size() >= sizeof magic) std::memcpy(&magic, head.data(), sizeof magic);
  if (magic == kLlama2cMagic) return true;
  try {
    llama2c::parse_header(head, file_size, {});
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::map<std::string, std::string> metadata(const Llama2cHeader& h) {
  const char* shared = h.shared_classifier ? "true" : "false";
  std::map<std::string, std::string> m = {
      {"version", std::to_string(h.version)},       {"dim", std::to_string(h.dim)},
      {"hidden_dim", std::to_string(h.hidden_dim)}, {"n_layers", std::to_string(h.n_layers)},
      {"n_heads", std::to_string(h.n_heads)},       {"n_kv_heads", std::to_string(h.n_kv_heads)},
      {"vocab_size", std::to_string(h.vocab_size)}, {"seq_len", std::to_string(h.seq_len)},
      {"shared_classifier", shared},                {"tie_word_embeddings", shared},
  };
  if (h.version == 2) m["group_size"] = std::to_string(h.group_size);
  return m;
}

}  // namespace

Llama2cHeader read_llama2c_header(const ByteSource& file) {
  std::array<std::byte, llama2c::kHeaderBytes> head{};
  const uint64_t got = file.read_up_to(0, head.data(), head.size());
  return llama2c::parse_header(std::span(head.data(), got), file.size(), file.name());
}

Llama2cHeader read_llama2c_header(const std::string& path) { return read_llama2c_header(*local_opener()->open(path)); }

Catalogue read_llama2c_catalogue(const ByteSource& file) {
  const std::string& path = file.name();
  const Llama2cHeader h = read_llama2c_header(file);
  const auto decoder = h.version == 2 ? std::make_shared<llama2c::Q8Decoder>(h.group_size) : nullptr;
  Catalogue catalogue;
  catalogue.files = {path};  // every tensor's file: index 0
  catalogue.metadata = metadata(h);
  uint64_t offset = llama2c::header_bytes(h);
  for (const llama2c::Entry& e : llama2c::layout(h)) {
    const uint64_t nbytes = llama2c::stored_bytes(e, h);
    if (!e.name.empty()) {  // the rotary tables are skipped
      TensorInfo t;
      t.name = e.name;
      t.dtype = DType::F32;
      t.shape = e.shape;
      t.offset = offset;
      t.nbytes = nbytes;
      if (e.stored == llama2c::Stored::Q8) {
        t.decoder = decoder;
        t.aux_offset = offset + t.numel();  // the scales follow the int8 values
      }
      if (e.rotary_heads != 0) t.row_order = llama2c::hf_row_order(e.rotary_heads, h.head_size());
      catalogue.tensors.push_back(std::move(t));
    }
    offset += nbytes;
  }
  return catalogue;
}

Catalogue read_llama2c_catalogue(const std::string& path) { return read_llama2c_catalogue(*local_opener()->open(path)); }

const FileFormat& llama2c_format() {
  static const FileFormat format{"llama2c", sniff_llama2c,
                                 [](const ByteSource& source, const Opener&) { return read_llama2c_catalogue(source); }};
  return format;
}

}  // namespace wl
