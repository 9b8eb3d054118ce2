// What an output path asks for: the format from its extension, and a --to that must agree.
#include <filesystem>

#include <fmt/format.h>

#include "weightloader/byte_source.hpp"
#include "weightloader/convert_checkpoint.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

namespace fs = std::filesystem;

// The format an extension names, or nullopt for a directory-like path (no extension, trailing
// '/', an existing directory).
struct PathKind {
  std::optional<CheckpointFormat> format;
  bool directory = false;
};

// Checkpoint files of formats nothing here writes: naming one is a mistake, not a directory.
bool is_unwritable_file_extension(const std::string& ext) {
  for (const char* e : {".pt", ".pth", ".ckpt", ".h5", ".onnx", ".npz", ".msgpack", ".json"})
    if (ext == e) return true;
  return false;
}

PathKind kind_of(const std::string& out) {
  if (out.ends_with('/') || local_opener()->is_directory(out)) return {std::nullopt, true};
  const std::string ext = fs::path(out).extension().string();
  if (ext == ".safetensors") return {CheckpointFormat::Safetensors, false};
  if (ext == ".gguf") return {CheckpointFormat::Gguf, false};
  if (ext == ".bin") return {CheckpointFormat::Llama2c, false};
  // Anything else is a directory's name: "llama-3.1-8b" has the "extension" ".1-8b".
  return {std::nullopt, !is_unwritable_file_extension(ext)};
}

bool is_directory_format(CheckpointFormat f) {
  return f == CheckpointFormat::Safetensors || f == CheckpointFormat::CustomBinary;
}

}  // namespace

std::string_view checkpoint_format_name(CheckpointFormat format) {
  switch (format) {
    case CheckpointFormat::Safetensors: return "safetensors";
    case CheckpointFormat::Gguf: return "gguf";
    case CheckpointFormat::Llama2c: return "llama2c";
    case CheckpointFormat::CustomBinary: return "custom_binary";
  }
  return "?";
}

CheckpointFormat output_format_for(const std::string& out, std::optional<CheckpointFormat> to) {
  const PathKind kind = kind_of(out);
  if (kind.format) {
    if (to && *to != *kind.format)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("--to {} contradicts the extension of the output, which asks for {}",
                              checkpoint_format_name(*to), checkpoint_format_name(*kind.format)),
                  out);
    return *kind.format;
  }
  if (kind.directory) {
    // A new name without extension may also be a GGUF or llama2.c file when --to says so; an
    // existing directory or a trailing '/' cannot.
    const bool surely_directory = out.ends_with('/') || local_opener()->is_directory(out);
    if (to && !is_directory_format(*to) && surely_directory)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("--to {} writes one file, but the output is a directory (safetensors or custom_binary)",
                              checkpoint_format_name(*to)),
                  out);
    return to.value_or(CheckpointFormat::Safetensors);
  }
  if (!to)
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("no format is written as '{}' files (.safetensors, .gguf, .bin, or a directory): pass --to "
                            "to write one of them under this name",
                            fs::path(out).extension().string()),
                out);
  return *to;
}

}  // namespace wl
