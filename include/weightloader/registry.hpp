// Loaders chosen by name, with checked keyword arguments.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "weightloader/export.hpp"
#include "weightloader/format.hpp"
#include "weightloader/loader.hpp"

namespace wl {

using KwValue = std::variant<bool, int64_t, double, std::string>;
using Kwargs = std::map<std::string, KwValue>;

enum class KwType { Bool, Int, Float, String };

struct KwargSpec {
  std::string name;
  KwType type = KwType::String;
  std::string help;
};

using LoaderFactory = std::function<std::unique_ptr<WeightLoader>(const Kwargs&)>;

struct LoaderSpec {
  std::string description;
  std::vector<KwargSpec> kwargs;  // the loader's own; the common ones are added by the registry
  LoaderFactory make;
};

// Thread-safe. There is no process-wide registry: a program (the CLI, the Python module, a test, an
// embedder) makes its own, with the built-ins (with_builtins()) or empty, and passes it down.
class WL_API WeightLoaderRegistry {
 public:
  // A fresh registry holding the built-in loaders, which it gives `context`.
  static std::unique_ptr<WeightLoaderRegistry> with_builtins(Context context = {});
  // An empty registry whose loaders get `context` (where they open names, which formats they detect).
  explicit WeightLoaderRegistry(Context context = {}) : context_(std::move(context)) {}

  // vLLM's `register(name, loader)`; `register` is a C++ keyword. LoaderExists if taken.
  void register_loader(const std::string& name, LoaderSpec spec);
  bool contains(const std::string& name) const;
  std::vector<std::string> list_available() const;  // sorted
  LoaderSpec spec(const std::string& name) const;  // a copy; UnknownLoader lists the available ones

  // Checks every kwarg against the loader's and the common specs (UnknownKwarg lists the
  // accepted ones), converts string values to the declared type (InvalidKwarg), applies the
  // common ones (LoadOptions, dtype) and calls the factory.
  std::unique_ptr<WeightLoader> create(const std::string& name, const Kwargs& kwargs = {}) const;
  // The same, the loader getting `context` (the program's, or one session's) instead of the registry's.
  std::unique_ptr<WeightLoader> create(const std::string& name, const Kwargs& kwargs, Context context) const;

  // Kwargs every loader accepts: dtype, strict, allow_reshape, strip_prefix, add_prefix,
  // rename, regex_rename, drop, concurrency.
  static const std::vector<KwargSpec>& common_kwargs();

 private:
  Context context_;
  mutable std::mutex mutex_;
  std::map<std::string, LoaderSpec> loaders_;
};

// Typed access to a validated kwarg (after create() normalised it), with a default.
WL_API std::string kwarg_string(const Kwargs& kwargs, const std::string& name, const std::string& fallback);
WL_API int64_t kwarg_int(const Kwargs& kwargs, const std::string& name, int64_t fallback);
WL_API bool kwarg_bool(const Kwargs& kwargs, const std::string& name, bool fallback);

// The built-in loader that fits a path, by content, and the kwargs it needs there:
// a file → "local"; a meta.txt + model.bin directory → "custom_binary"; a Hugging Face style
// directory (safetensors, an index, pytorch_model*.bin) → "hf"; another directory → "local" with
// file_pattern selecting the first file whose content a format recognises (e.g. "*.gguf").
// A name that does not exist but looks like a model id (org/name) → "hf". FileNotFound if the
// path does not exist otherwise.
struct LoaderChoice {
  std::string name;
  Kwargs kwargs;
};
WL_API LoaderChoice detect_loader(const std::string& path, const Opener& opener, const FormatList& formats);
WL_API LoaderChoice detect_loader(const std::string& path);  // local_opener(), the built-in formats

}  // namespace wl
