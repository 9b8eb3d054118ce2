// "local": a checkpoint file, or a directory of checkpoint files selected by a glob pattern.
// A sharded checkpoint's index (*.index.json) is honoured: only the files it lists are read.
#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "loaders/builtin_loaders.hpp"
#include "loaders/config_json.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/registry.hpp"

namespace wl {

namespace {

namespace fs = std::filesystem;

const FileFormat& format_of(const std::string& path) {
  if (const FileFormat* f = detect_file_format(path)) return *f;
  std::vector<std::string> tried;
  for (const FileFormat& f : file_formats()) tried.push_back(f.name);
  throw Error(ErrorCode::InvalidArgument, fmt::format("not a checkpoint in any known format (tried: {})", fmt::join(tried, ", ")),
              path);
}

// Reads files of any format, or, for the loaders named after a format, only that one.
class LocalLoader final : public WeightLoader {
 public:
  LocalLoader(std::string pattern, std::string only_format = {})
      : pattern_(std::move(pattern)), only_format_(std::move(only_format)) {}

  std::unique_ptr<WeightSource> get_weights(const std::string& path) override {
    const fs::path root(path);
    std::error_code ec;
    if (!fs::exists(root, ec)) throw Error(ErrorCode::FileNotFound, "no such file or directory", path);
    if (!fs::is_directory(root, ec)) return with_config(open_files(checked_format(path), {path}, path));

    std::vector<std::string> matches;
    for (const fs::directory_entry& e : fs::directory_iterator(root)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && ::fnmatch(pattern_.c_str(), name.c_str(), FNM_PERIOD) == 0) matches.push_back(e.path().string());
    }
    std::sort(matches.begin(), matches.end());
    if (!only_format_.empty())  // e.g. a llama2.c model beside its tokenizer, both *.bin
      std::erase_if(matches, [&](const std::string& m) {
        const FileFormat* f = detect_file_format(m);
        return !f || f->name != only_format_;
      });
    if (matches.empty())
      throw Error(ErrorCode::NoMatchingFiles, fmt::format("no file matches the pattern '{}'", pattern_), path);

    const FileFormat& format = checked_format(matches.front());
    // A sharded checkpoint: `X.index.json` next to files matching the pattern, X itself matching it
    // too (model.safetensors.index.json, pytorch_model.bin.index.json): only listed files are read.
    for (const fs::directory_entry& e : fs::directory_iterator(root)) {
      const std::string name = e.path().filename().string();
      if (!name.ends_with(".index.json")) continue;
      const std::string target = name.substr(0, name.size() - std::string(".index.json").size());
      if (::fnmatch(pattern_.c_str(), target.c_str(), FNM_PERIOD) != 0) continue;
      Catalogue c = read_sharded_catalogue(e.path().string(), format);
      attach_config_json(root, c.metadata);
      return std::make_unique<WeightSource>(format.name, path, std::move(c.tensors), std::move(c.metadata));
    }
    // Split GGUF models are opened through their first split, which reads the others.
    static const std::regex later_split(R"(-(\d{5})-of-\d{5}\.gguf$)");
    std::smatch split;
    std::erase_if(matches, [&](const std::string& m) {
      return std::regex_search(m, split, later_split) && split[1] != "00001";
    });
    for (const std::string& m : matches)
      if (&format_of(m) != &format)
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("mixes formats: {} is {} but {} is {}; narrow file_pattern", matches.front(), format.name, m,
                                format_of(m).name),
                    path);
    return with_config(open_files(format, matches, path));
  }

 private:
  // The source with the config.json of its directory, if there is one.
  static std::unique_ptr<WeightSource> with_config(std::unique_ptr<WeightSource> s) {
    std::map<std::string, std::string> metadata = s->metadata();
    attach_config_json(s->origin(), metadata);
    if (metadata.size() == s->metadata().size()) return s;
    return std::make_unique<WeightSource>(s->format(), s->origin(), s->tensors(), std::move(metadata));
  }

  const FileFormat& checked_format(const std::string& path) const {
    const FileFormat& f = format_of(path);
    if (!only_format_.empty() && f.name != only_format_)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("the '{}' loader reads {} files, but this file is {}", only_format_, only_format_, f.name), path);
    return f;
  }

  std::string pattern_;
  std::string only_format_;
};

}  // namespace

void register_local_loader(WeightLoaderRegistry& registry) {
  registry.register_loader(
      "local",
      LoaderSpec{
          .description = "a checkpoint file in any format, or the files of a directory matching file_pattern "
                         "(formats found by content; an index.json restricts the load to the files it lists)",
          .kwargs = {{"file_pattern", KwType::String, "glob for the files to read in a directory (default *.safetensors)"}},
          .make = [](const Kwargs& kw) -> std::unique_ptr<WeightLoader> {
            return std::make_unique<LocalLoader>(kwarg_string(kw, "file_pattern", "*.safetensors"));
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
