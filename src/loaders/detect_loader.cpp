#include <algorithm>
#include <filesystem>

#include "loaders/builtin_loaders.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/registry.hpp"

namespace wl {

LoaderChoice detect_loader(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) throw Error(ErrorCode::FileNotFound, "no such file or directory", path);
  const std::string name = p.filename().string();
  if ((name == "meta.txt" || name == "model.bin") && fs::is_regular_file(p.parent_path() / "meta.txt", ec))
    return {"custom_binary", {}};
  if (!fs::is_directory(p, ec)) return {"local", {}};
  if (fs::is_regular_file(p / "meta.txt", ec)) return {"custom_binary", {}};

  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(p, ec))
    if (e.is_regular_file(ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files)
    if (is_hf_weights_file(f.filename().string())) return {"hf", {}};
  for (const fs::path& f : files) {
    const FileFormat* format = nullptr;
    try {
      format = detect_file_format(f.string());
    } catch (const Error&) {
      continue;  // unreadable files are not candidates
    }
    if (format) return {"local", {{"file_pattern", "*" + f.extension().string()}}};
  }
  return {"local", {}};  // reports that nothing matches
}

}  // namespace wl
