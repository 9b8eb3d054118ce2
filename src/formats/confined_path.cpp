#include "formats/confined_path.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "weightloader/error.hpp"

namespace wl {

void require_inside(const Opener& opener, const std::string& file, const std::string& root) {
  namespace fs = std::filesystem;  // paths compared component by component; nothing is accessed
  const fs::path real = opener.resolved(file);
  std::string root_name = opener.resolved(root);
  if (root_name.size() > 1 && root_name.back() == '/') root_name.pop_back();  // "dir/" is "dir"
  const fs::path base = root_name;
  const auto [end, _] = std::mismatch(base.begin(), base.end(), real.begin(), real.end());
  if (end != base.end())
    throw Error(ErrorCode::InvalidArgument,
                fmt::format("resolves to {}, outside the model's folder {}; refusing to read it", real.string(),
                            base.string()),
                file);
}

}  // namespace wl
