// "local": a checkpoint file, or a directory of checkpoint files selected by a glob pattern.
// A sharded checkpoint's index (*.index.json) is honoured: only the files it lists are read.
#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "loaders/builtin_loaders.hpp"
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

class LocalLoader final : public WeightLoader {
 public:
  explicit LocalLoader(std::string pattern) : pattern_(std::move(pattern)) {}

  std::unique_ptr<WeightSource> get_weights(const std::string& path) override {
    const fs::path root(path);
    std::error_code ec;
    if (!fs::exists(root, ec)) throw Error(ErrorCode::FileNotFound, "no such file or directory", path);
    if (!fs::is_directory(root, ec)) return open_files(format_of(path), {path}, path);

    std::vector<std::string> matches;
    for (const fs::directory_entry& e : fs::directory_iterator(root)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && ::fnmatch(pattern_.c_str(), name.c_str(), FNM_PERIOD) == 0) matches.push_back(e.path().string());
    }
    std::sort(matches.begin(), matches.end());
    if (matches.empty())
      throw Error(ErrorCode::NoMatchingFiles, fmt::format("no file matches the pattern '{}'", pattern_), path);

    const FileFormat& format = format_of(matches.front());
    // A sharded checkpoint: `X.index.json` next to files matching the pattern, X itself matching it
    // too (model.safetensors.index.json, pytorch_model.bin.index.json): only listed files are read.
    for (const fs::directory_entry& e : fs::directory_iterator(root)) {
      const std::string name = e.path().filename().string();
      if (!name.ends_with(".index.json")) continue;
      const std::string target = name.substr(0, name.size() - std::string(".index.json").size());
      if (::fnmatch(pattern_.c_str(), target.c_str(), FNM_PERIOD) != 0) continue;
      Catalogue c = read_sharded_catalogue(e.path().string(), format);
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
    return open_files(format, matches, path);
  }

 private:
  std::string pattern_;
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
}

}  // namespace wl
