// File formats: each one recognises its files by content and turns a file into a catalogue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "weightloader/source.hpp"

namespace wl {

// What a format's reader makes of one file: its tensors and its string metadata.
struct Catalogue {
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};

struct FileFormat {
  std::string name;  // "safetensors"
  // True when the file's first bytes (up to 4096; fewer if the file is shorter) and its size
  // look like this format. Must not throw.
  std::function<bool(std::span<const std::byte> head, uint64_t file_size)> sniff;
  // Reads and validates the file's structure (never its tensor data); throws wl::Error.
  std::function<Catalogue(const std::string& path)> read_catalogue;
};

// Every single-file format, in detection order. src/formats/file_formats.cpp lists them.
const std::vector<FileFormat>& file_formats();
const FileFormat* find_file_format(const std::string& name);
// The format of a file by content; nullptr if none recognises it.
const FileFormat* detect_file_format(const std::string& path);

// Opens several files of one format as one source; a tensor name in two files is
// TensorInTwoFiles. `origin` names the checkpoint (directory or file) in messages.
std::unique_ptr<WeightSource> open_files(const FileFormat& format, const std::vector<std::string>& paths,
                                         const std::string& origin);

// A sharded checkpoint of one format: an index JSON (`{"metadata": {...}, "weight_map": {tensor: file}}`,
// as in model.safetensors.index.json and pytorch_model.bin.index.json) and the files it lists, each
// read with `format`. Only listed files are read; paths must stay inside the index's directory.
// `confine_to` non-empty: each file must also resolve, symlinks followed, inside that folder
// (checked before it is opened; InvalidArgument otherwise).
Catalogue read_sharded_catalogue(const std::string& index_path, const FileFormat& format,
                                 const std::string& confine_to = {});

}  // namespace wl
