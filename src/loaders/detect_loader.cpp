#include <algorithm>

#include "hf_cache/hf_weights_files.hpp"
#include "loaders/builtin_loaders.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/hf_cache.hpp"
#include "weightloader/registry.hpp"

namespace wl {

LoaderChoice detect_loader(const std::string& path, const Opener& opener, const FormatList& formats) {
  if (!opener.exists(path)) {
    if (looks_like_hf_model_id(path)) return {"hf", {}};  // org/name: from the hub cache, or the hub
    throw Error(ErrorCode::FileNotFound, "no such file or directory", path);
  }
  const std::string name = base_name(path);
  if ((name == "meta.txt" || name == "model.bin") && opener.exists(opener.join(opener.parent(path), "meta.txt")))
    return {"custom_binary", {}};
  if (!opener.is_directory(path)) return {"local", {}};
  if (opener.exists(opener.join(path, "meta.txt"))) return {"custom_binary", {}};
  if (is_meta_checkpoint(opener, path)) return {"meta", {}};

  const std::vector<std::string> files = opener.list(path);
  for (const std::string& f : files)
    if (is_hf_weights_file(base_name(f))) return {"hf", {}};
  for (const std::string& f : files) {
    const FileFormat* format = nullptr;
    try {
      format = formats.detect(*opener.open(f));
    } catch (const Error&) {
      continue;  // unreadable files are not candidates
    }
    const std::string base = base_name(f);
    const size_t dot = base.find_last_of('.');  // a leading dot starts a name, not an extension
    if (format) return {"local", {{"file_pattern", "*" + (dot == std::string::npos || dot == 0 ? std::string() : base.substr(dot))}}};
  }
  return {"local", {}};  // reports that nothing matches
}

LoaderChoice detect_loader(const std::string& path) { return detect_loader(path, *local_opener(), builtin_formats()); }

}  // namespace wl
