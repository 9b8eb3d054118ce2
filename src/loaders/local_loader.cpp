// "local": a checkpoint file, or a directory of checkpoint files selected by a glob pattern.
// A sharded checkpoint's index (*.index.json) is honoured: only the files it lists are read.
#include <fnmatch.h>

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "loaders/builtin_loaders.hpp"
#include "loaders/config_json.hpp"
#include "loaders/quantized_source.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/registry.hpp"

namespace wl {

namespace {

bool matches(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), base_name(name).c_str(), FNM_PERIOD) == 0;
}

// Reads files of any format, or, for the loaders named after a format, only that one.
class LocalLoader final : public WeightLoader {
 public:
  LocalLoader(std::string pattern, std::string only_format = {}, bool as_stored = false)
      : pattern_(std::move(pattern)), only_format_(std::move(only_format)), as_stored_(as_stored) {}

  std::unique_ptr<WeightSource> get_weights(const std::string& path, const LoadOptions& call) const override {
    const std::shared_ptr<const Opener> files = session_opener(call);
    const FormatList& formats = formats_of(call.context);
    if (!files->exists(path)) throw Error(ErrorCode::FileNotFound, "no such file or directory", path);
    if (!files->is_directory(path))
      return with_config(open_files(checked_format(formats, path, *files), {path}, path, files), *files, as_stored_);

    // Each matching file's format, found once by content.
    std::vector<std::pair<std::string, const FileFormat*>> found;
    for (const std::string& name : files->list(path))
      if (matches(pattern_, name)) found.emplace_back(name, formats.detect(*files->open(name)));
    if (!only_format_.empty())  // e.g. a llama2.c model beside its tokenizer, both *.bin
      std::erase_if(found, [&](const auto& f) { return !f.second || f.second->name != only_format_; });
    if (found.empty()) throw Error(ErrorCode::NoMatchingFiles, no_match(files->list(path)), path);

    const FileFormat& format = checked_format(formats, found.front().first, *files);
    // A sharded checkpoint: `X.index.json` next to files matching the pattern, X itself matching it
    // too (model.safetensors.index.json, pytorch_model.bin.index.json): only listed files are read.
    for (const std::string& name : files->list(path)) {
      if (!name.ends_with(".index.json")) continue;
      if (!matches(pattern_, name.substr(0, name.size() - std::string(".index.json").size()))) continue;
      Catalogue c = read_sharded_catalogue(*files, name, format);
      attach_config_json(*files, path, c.metadata);
      return checkpoint_view(std::make_unique<WeightSource>(format.name, path, std::move(c), files),
                                *files, as_stored_);
    }
    // Split GGUF models are opened through their first split, which reads the others.
    static const std::regex later_split(R"(-(\d{5})-of-\d{5}\.gguf$)");
    std::smatch split;
    std::erase_if(found, [&](const auto& f) { return std::regex_search(f.first, split, later_split) && split[1] != "00001"; });
    std::vector<std::string> names;
    for (const auto& [name, f] : found) {
      if (!f) formats.detect_or_throw(*files->open(name));  // says it is in no known format
      if (f != &format)
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("mixes formats: {} is {} but {} is {}; narrow file_pattern", found.front().first, format.name,
                                name, f->name),
                    path);
      names.push_back(name);
    }
    return with_config(open_files(format, names, path, files), *files, as_stored_);
  }

 private:
  // The source with the config.json of its directory, if there is one (seen dense if it is quantized).
  static std::unique_ptr<WeightSource> with_config(std::unique_ptr<WeightSource> s, const Opener& files, bool as_stored) {
    std::map<std::string, std::string> metadata = s->metadata();
    attach_config_json(files, s->origin(), metadata);
    if (metadata.size() != s->metadata().size()) s = s->with_metadata(std::move(metadata));
    return checkpoint_view(std::move(s), files, as_stored);
  }

  // What was looked for and what the directory holds instead (its first few names).
  std::string no_match(const std::vector<std::string>& names) const {
    const std::string wanted = only_format_.empty() ? fmt::format("the pattern '{}'", pattern_)
                                                    : fmt::format("the pattern '{}' in the {} format", pattern_, only_format_);
    if (names.empty()) return fmt::format("the directory is empty: no file matches {}", wanted);
    std::vector<std::string> shown;
    for (size_t i = 0; i < names.size() && i < 5; ++i) shown.push_back(base_name(names[i]));
    return fmt::format("no file matches {} (set file_pattern); the directory holds {} file(s): {}{}", wanted, names.size(),
                       fmt::join(shown, ", "), names.size() > shown.size() ? ", ..." : "");
  }

  const FileFormat& checked_format(const FormatList& formats, const std::string& path, const Opener& files) const {
    const FileFormat& f = formats.detect_or_throw(*files.open(path));
    if (!only_format_.empty() && f.name != only_format_)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("the '{}' loader reads {} files, but this file is {}", only_format_, only_format_, f.name), path);
    return f;
  }

  std::string pattern_;
  std::string only_format_;
  bool as_stored_;
};

}  // namespace

void register_local_loader(WeightLoaderRegistry& registry) {
  registry.register_loader(
      "local",
      LoaderSpec{
          .description = "a checkpoint file in any format, or the files of a directory matching file_pattern "
                         "(formats found by content; an index.json restricts the load to the files it lists)",
          .kwargs = {{"file_pattern", KwType::String, "glob for the files to read in a directory (default *.safetensors)"},
                     {"format", KwType::String,
                      "only the matching files of this format (e.g. llama2c: a model.bin beside its tokenizer.bin); "
                      "default any"},
                     {"quantized", KwType::String, kQuantizedKwargHelp}},
          .make = [](const Kwargs& kw) -> std::unique_ptr<WeightLoader> {
            return std::make_unique<LocalLoader>(kwarg_string(kw, "file_pattern", "*.safetensors"),
                                                 kwarg_string(kw, "format", ""),
                                                 quantized_as_stored(kwarg_string(kw, "quantized", "dequantize")));
          },
      });
  registry.register_loader(
      "gguf",
      LoaderSpec{
          .description = "a GGUF file (llama.cpp), or the .gguf files of a directory; a split model through its first "
                         "split; Llama tensors under Hugging Face names",
          .kwargs = {{"file_pattern", KwType::String, "glob for the files to read in a directory (default *.gguf)"}},
          .make = [](const Kwargs& kw) -> std::unique_ptr<WeightLoader> {
            return std::make_unique<LocalLoader>(kwarg_string(kw, "file_pattern", "*.gguf"), "gguf");
          },
      });
  registry.register_loader(
      "llama2c",
      LoaderSpec{
          .description = "a llama2.c checkpoint (legacy, v1 float32 or v2 int8), under Hugging Face names",
          .kwargs = {{"file_pattern", KwType::String, "glob for the file to read in a directory (default *.bin)"}},
          .make = [](const Kwargs& kw) -> std::unique_ptr<WeightLoader> {
            return std::make_unique<LocalLoader>(kwarg_string(kw, "file_pattern", "*.bin"), "llama2c");
          },
      });
}

}  // namespace wl
