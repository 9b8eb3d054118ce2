#include <filesystem>

#include "weightloader/error.hpp"
#include "weightloader/registry.hpp"

namespace wl {

std::string detect_loader(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) throw Error(ErrorCode::FileNotFound, "no such file or directory", path);
  const fs::path dir = fs::is_directory(p, ec) ? p : p.parent_path();
  const std::string name = p.filename().string();
  if ((fs::is_directory(p, ec) || name == "meta.txt" || name == "model.bin") && fs::is_regular_file(dir / "meta.txt", ec))
    return "custom_binary";
  return "local";
}

}  // namespace wl
