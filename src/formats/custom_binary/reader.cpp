#include <filesystem>

#include "core/file.hpp"
#include "formats/custom_binary/meta.hpp"
#include "weightloader/error.hpp"
#include "weightloader/formats/custom_binary.hpp"

namespace wl {
namespace {

namespace fs = std::filesystem;

// The checkpoint directory for a path naming it, its meta.txt or its model.bin.
fs::path checkpoint_dir(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  const fs::file_status status = fs::status(p, ec);
  if (!fs::exists(status))
    throw Error(ErrorCode::FileNotFound, "no such file or directory (expected a custom binary checkpoint)", path);
  if (fs::is_directory(status)) return p;
  const fs::path file_name = p.filename();
  if (file_name == "meta.txt" || file_name == "model.bin") return p.parent_path().empty() ? fs::path(".") : p.parent_path();
  throw Error(ErrorCode::InvalidArgument,
              "a custom binary checkpoint is a directory holding meta.txt and model.bin; "
              "pass the directory or one of those two files",
              path);
}

std::string require_file(const fs::path& dir, const char* name) {
  const fs::path file = dir / name;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw Error(ErrorCode::FileNotFound,
                std::string("missing ") + name + " (a custom binary checkpoint needs meta.txt and model.bin)",
                file.string());
  return file.string();
}

}  // namespace

Catalogue read_custom_binary_catalogue(const std::string& path) {
  const fs::path dir = checkpoint_dir(path);
  const std::string meta_path = require_file(dir, "meta.txt");
  const std::string bin_path = require_file(dir, "model.bin");

  const File meta(meta_path);
  const std::vector<custom_binary::MetaEntry> entries =
      custom_binary::parse_meta(meta.read_string(0, meta.size()), meta_path);

  Catalogue catalogue;
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
    info.file = bin_path;
    info.offset = offset;
    info.nbytes = nbytes;
    catalogue.tensors.push_back(std::move(info));
    offset += nbytes;
  }

  const File bin(bin_path);
  if (bin.size() != offset)
    throw Error(ErrorCode::BinSizeMismatch,
                "model.bin holds " + std::to_string(bin.size()) + " bytes but meta.txt declares " +
                    std::to_string(offset) + " bytes (" + std::to_string(entries.size()) + " float32 tensors)",
                bin_path);
  return catalogue;
}

}  // namespace wl
