#include "formats/custom_binary/meta.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/custom_binary.hpp"

namespace wl {
namespace {

// The checkpoint directory for a name naming it, its meta.txt or its model.bin.
std::string checkpoint_dir(const Opener& opener, const std::string& path) {
  if (!opener.exists(path))
    throw Error(ErrorCode::FileNotFound, "no such file or directory (expected a custom binary checkpoint)", path);
  if (opener.is_directory(path)) return path;
  const std::string file_name = base_name(path);
  if (file_name == "meta.txt" || file_name == "model.bin") return opener.parent(path);
  throw Error(ErrorCode::InvalidArgument,
              "a custom binary checkpoint is a directory holding meta.txt and model.bin; "
              "pass the directory or one of those two files",
              path);
}

std::string require_file(const Opener& opener, const std::string& dir, const char* name) {
  const std::string file = opener.join(dir, name);
  if (!opener.exists(file) || opener.is_directory(file))
    throw Error(ErrorCode::FileNotFound,
                std::string("missing ") + name + " (a custom binary checkpoint needs meta.txt and model.bin)", file);
  return file;
}

}  // namespace

Catalogue read_custom_binary_catalogue(const Opener& opener, const std::string& path) {
  const std::string dir = checkpoint_dir(opener, path);
  const std::string meta_path = require_file(opener, dir, "meta.txt");
  const std::string bin_path = require_file(opener, dir, "model.bin");

  const std::shared_ptr<ByteSource> meta = opener.open(meta_path);
  const std::vector<custom_binary::MetaEntry> entries =
      custom_binary::parse_meta(meta->read_string(0, meta->size()), meta_path);

  Catalogue catalogue;
  catalogue.files = {bin_path};  // every tensor's file: index 0
  catalogue.tensors.reserve(entries.size());
  uint64_t offset = 0;
  for (const custom_binary::MetaEntry& entry : entries) {
    const std::string line = "meta.txt line " + std::to_string(entry.line);
    uint64_t numel = 0;
    try {
      numel = shape_numel(entry.shape);
    } catch (const Error&) {
      throw Error(ErrorCode::ValidationOverflow,
                  line + ": element count of " + shape_to_string(entry.shape) + " overflows u64", meta_path,
                  entry.name);
    }
    if (numel > UINT64_MAX / sizeof(float))
      throw Error(ErrorCode::ValidationOverflow,
                  line + ": byte size of " + shape_to_string(entry.shape) + " (" + std::to_string(numel) +
                      " float32 values) overflows u64",
                  meta_path, entry.name);
    const uint64_t nbytes = numel * sizeof(float);
    if (offset > UINT64_MAX - nbytes)
      throw Error(ErrorCode::ValidationOverflow,
                  line + ": the sum of the tensors' sizes overflows u64 (" + std::to_string(offset) +
                      " bytes before this tensor, " + std::to_string(nbytes) + " in it)",
                  meta_path, entry.name);
    TensorInfo info;
    info.name = entry.name;
    info.dtype = DType::F32;
    info.shape = entry.shape;
    info.offset = offset;
    info.nbytes = nbytes;
    catalogue.tensors.push_back(std::move(info));
    offset += nbytes;
  }

  const uint64_t bin_size = opener.open(bin_path)->size();
  if (bin_size != offset)
    throw Error(ErrorCode::BinSizeMismatch,
                "model.bin holds " + std::to_string(bin_size) + " bytes but meta.txt declares " +
                    std::to_string(offset) + " bytes (" + std::to_string(entries.size()) + " float32 tensors)",
                bin_path);
  return catalogue;
}

Catalogue read_custom_binary_catalogue(const std::string& path) { return read_custom_binary_catalogue(*local_opener(), path); }

}  // namespace wl
