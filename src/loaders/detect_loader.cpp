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
  const auto format_of = [&](const std::string& f) -> const FileFormat* {
    try {
      return formats.detect(*opener.open(f));
    } catch (const Error&) {
      return nullptr;  // unreadable files are not candidates
    }
  };
  const auto extension = [](const std::string& f) {
    const std::string base = base_name(f);
    const size_t dot = base.find_last_of('.');  // a leading dot starts a name, not an extension
    return dot == std::string::npos || dot == 0 ? std::string() : base.substr(dot);
  };
  for (const std::string& f : files) {
    const FileFormat* format = format_of(f);
    if (!format) continue;
    LoaderChoice choice{"local", {{"file_pattern", "*" + extension(f)}}};
    // Other files of that extension in another format, or in none (a llama2.c model.bin beside its
    // tokenizer.bin): only the files of this one.
    for (const std::string& other : files)
      if (other != f && extension(other) == extension(f) && format_of(other) != format) choice.kwargs["format"] = format->name;
    return choice;
  }
  return {"local", {}};  // reports that nothing matches
}

LoaderChoice detect_loader(const std::string& path) { return detect_loader(path, *local_opener(), builtin_formats()); }

}  // namespace wl
