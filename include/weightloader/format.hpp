// File formats: each one recognises its files by content and turns a byte source into a catalogue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "weightloader/byte_source.hpp"
#include "weightloader/export.hpp"
#include "weightloader/source.hpp"

namespace wl {

struct WL_API FileFormat {
  std::string name;  // "safetensors"
  // True when the source's first bytes (up to 4096; fewer if it is shorter) and its size look
  // like this format. Must not throw.
  std::function<bool(std::span<const std::byte> head, uint64_t file_size)> sniff;
  // Reads and validates the source's structure (never its tensor data); throws wl::Error naming
  // source.name(). `opener` finds what the file refers to (a split GGUF's other splits).
  std::function<Catalogue(const ByteSource& source, const Opener& opener)> read_catalogue;
};

// An ordered list of formats, tried in order by detect(). builtin_formats() (the loading layer's,
// weightloader/checkpoint_names.hpp) holds the built-in ones; embedders and tests make their own
// (and pass it through Context::formats). Thread-safe for reading; add() before sharing it.
class WL_API FormatList {
 public:
  FormatList() = default;             // empty
  void add(FileFormat format);        // InvalidArgument if the name is taken
  const std::vector<FileFormat>& formats() const noexcept { return formats_; }
  const FileFormat* find(const std::string& name) const;
  // The format of a source by content; nullptr if none recognises it.
  const FileFormat* detect(const ByteSource& source) const;
  // find(), or InvalidArgument naming the source and listing the formats tried.
  const FileFormat& detect_or_throw(const ByteSource& source) const;

 private:
  std::vector<FileFormat> formats_;
};

// Opens several files of one format as one source; a tensor name in two files is
// TensorInTwoFiles. `origin` names the checkpoint (directory or file) in messages. `opener`
// finds the files (null: local_opener()).
WL_API std::unique_ptr<WeightSource> open_files(const FileFormat& format, const std::vector<std::string>& names,
                                                const std::string& origin,
                                                std::shared_ptr<const Opener> opener = nullptr);

// A sharded checkpoint of one format: an index JSON (`{"metadata": {...}, "weight_map": {tensor: file}}`,
// as in model.safetensors.index.json and pytorch_model.bin.index.json) and the files it lists, each
// read with `format`. Only listed files are read; the names the index writes must stay inside its
// directory (no absolute name, no ".."). Links on the file system are the user's and are followed:
// a Hugging Face snapshot's files are links into its blobs.
WL_API Catalogue read_sharded_catalogue(const Opener& opener, const std::string& index_name, const FileFormat& format);
// The same through local_opener().
WL_API Catalogue read_sharded_catalogue(const std::string& index_path, const FileFormat& format);
// The files an index's weight_map lists (relative to its directory, sorted, each once), under the
// same checks; `index_name` names the index in errors.
WL_API std::vector<std::string> sharded_index_files(const std::string& index_text, const std::string& index_name);

}  // namespace wl
