#include <algorithm>

#include <fmt/format.h>

#include "core/file.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/formats/gguf.hpp"
#include "weightloader/formats/llama2c.hpp"
#include "weightloader/formats/pytorch.hpp"
#include "weightloader/formats/safetensors.hpp"

namespace wl {

const std::vector<FileFormat>& file_formats() {
  static const std::vector<FileFormat> formats = {
      safetensors_format(),
      pytorch_format(),
      gguf_format(),
      llama2c_format(),  // last: v0 has no magic, only a plausible header and an exact size
  };
  return formats;
}

const FileFormat* find_file_format(const std::string& name) {
  for (const FileFormat& f : file_formats())
    if (f.name == name) return &f;
  return nullptr;
}

const FileFormat* detect_file_format(const std::string& path) {
  File file(path);
  std::vector<std::byte> head(std::min<uint64_t>(file.size(), 4096));
  file.read_exact(0, head.data(), head.size());
  for (const FileFormat& f : file_formats())
    if (f.sniff(head, file.size())) return &f;
  return nullptr;
}

std::unique_ptr<WeightSource> open_files(const FileFormat& format, const std::vector<std::string>& paths,
                                         const std::string& origin) {
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  for (const std::string& path : paths) {
    Catalogue c = format.read_catalogue(path);
    std::move(c.tensors.begin(), c.tensors.end(), std::back_inserter(tensors));
    metadata.merge(c.metadata);
  }
  return std::make_unique<WeightSource>(format.name, origin, std::move(tensors), std::move(metadata));
}

}  // namespace wl
