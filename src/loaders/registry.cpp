#include "weightloader/registry.hpp"

#include <fmt/format.h>

#include "loaders/builtin_loaders.hpp"
#include "weightloader/byte_size.hpp"
#include "weightloader/error.hpp"

namespace wl {

namespace {

std::string_view type_name(KwType t) {
  switch (t) {
    case KwType::Bool: return "bool";
    case KwType::Int: return "int";
    case KwType::Float: return "float";
    case KwType::String: return "string";
  }
  return "?";
}

KwValue coerce(const std::string& loader, const KwargSpec& spec, const KwValue& value) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::InvalidKwarg,
                 fmt::format("loader '{}': kwarg '{}' expects a {}: {}", loader, spec.name, type_name(spec.type), why));
  };
  if (const auto* s = std::get_if<std::string>(&value)) {
    switch (spec.type) {
      case KwType::String: return *s;
      case KwType::Bool:
        if (*s == "true" || *s == "1" || *s == "yes" || *s == "on") return true;
        if (*s == "false" || *s == "0" || *s == "no" || *s == "off") return false;
        throw bad(fmt::format("'{}' is not true/false", *s));
      case KwType::Int: {
        size_t used = 0;
        try {
          const int64_t v = std::stoll(*s, &used);
          if (used == s->size()) return v;
        } catch (const std::exception&) {
        }
        throw bad(fmt::format("'{}' is not an integer", *s));
      }
      case KwType::Float: {
        size_t used = 0;
        try {
          const double v = std::stod(*s, &used);
          if (used == s->size()) return v;
        } catch (const std::exception&) {
        }
        throw bad(fmt::format("'{}' is not a number", *s));
      }
    }
  }
  // A string kwarg takes a number as its text (max_host_memory=2**30 bytes, or 0.5 of RAM): a float
  // keeps its point.
  if (spec.type == KwType::String && std::holds_alternative<int64_t>(value)) return std::to_string(std::get<int64_t>(value));
  if (spec.type == KwType::String && std::holds_alternative<double>(value)) {
    const std::string text = fmt::format("{}", std::get<double>(value));
    return text.find_first_of(".eni") == std::string::npos ? text + ".0" : text;
  }
  if (spec.type == KwType::Bool && std::holds_alternative<bool>(value)) return value;
  if (spec.type == KwType::Int && std::holds_alternative<int64_t>(value)) return value;
  if (spec.type == KwType::Float && std::holds_alternative<double>(value)) return value;
  if (spec.type == KwType::Float && std::holds_alternative<int64_t>(value)) return double(std::get<int64_t>(value));
  throw bad("got a value of another type");
}

// "a,b;c" → {"a,b", "c"}: lists inside one kwarg are separated by ';'.
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(';', start);
    std::string item = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::pair<std::string, std::string> split_pair(const std::string& kwarg, const std::string& item, const std::string& sep) {
  const size_t at = item.find(sep);
  if (at == std::string::npos || at == 0)
    throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg '{}': '{}' is not of the form old{}new", kwarg, item, sep));
  return {item.substr(0, at), item.substr(at + sep.size())};
}

void apply_common(WeightLoader& loader, const Kwargs& kw) {
  LoadOptions& options = loader.options();
  if (kw.count("dtype")) {
    const std::string name = std::get<std::string>(kw.at("dtype"));
    const auto dt = parse_dtype_alias(name);
    if (!dt) throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg 'dtype': unknown dtype '{}' (try bf16, f16, f32)", name));
    loader.dtype() = *dt;
  }
  options.strict = kwarg_bool(kw, "strict", options.strict);
  options.allow_reshape = kwarg_bool(kw, "allow_reshape", options.allow_reshape);
  for (const std::string& p : split_list(kwarg_string(kw, "strip_prefix", ""))) options.names.strip_prefix(p);
  if (kw.count("add_prefix")) options.names.add_prefix(kwarg_string(kw, "add_prefix", ""));
  for (const std::string& item : split_list(kwarg_string(kw, "rename", ""))) {
    auto [from, to] = split_pair("rename", item, "=");
    options.names.rename(from, to);
  }
  for (const std::string& item : split_list(kwarg_string(kw, "regex_rename", ""))) {
    auto [pattern, replacement] = split_pair("regex_rename", item, "=>");
    options.names.regex_rename(pattern, replacement);
  }
  for (const std::string& p : split_list(kwarg_string(kw, "drop", ""))) options.names.drop(p);
  if (kw.count("name_map")) {
    const std::string mode = kwarg_string(kw, "name_map", "explicit");
    if (mode != "auto" && mode != "explicit")
      throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg 'name_map': '{}' is neither auto nor explicit", mode));
    options.auto_names = mode == "auto";
  }
  const int64_t concurrency = kwarg_int(kw, "concurrency", 0);
  if (concurrency < 0 || concurrency > 1024)
    throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg 'concurrency': {} is outside [0, 1024]", concurrency));
  options.io.concurrency = static_cast<unsigned>(concurrency);
  if (kw.count("io")) {
    const std::string name = kwarg_string(kw, "io", "auto");
    const auto mode = parse_io_mode(name);
    if (!mode) throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg 'io': unknown mode '{}' (auto, mmap, pread, direct, uring)", name));
    options.io.mode = *mode;
  }
  const int64_t staging = kwarg_int(kw, "staging_bytes", static_cast<int64_t>(options.io.staging_bytes));
  if (staging < 0) throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg 'staging_bytes': {} is negative", staging));
  options.io.staging_bytes = static_cast<uint64_t>(staging);
  if (kw.count("prefault")) options.io.prefault = kwarg_bool(kw, "prefault", true);
  if (kw.count("device")) {
    try {
      options.io.device = Device::parse(kwarg_string(kw, "device", "cpu"));
    } catch (const Error& e) {
      throw Error(ErrorCode::InvalidKwarg, "kwarg 'device': " + e.message());
    }
  }
  options.zero_copy = kwarg_bool(kw, "zero_copy", options.zero_copy);
  if (kw.count("max_host_memory")) {
    try {
      options.max_host_memory = parse_host_memory(kwarg_string(kw, "max_host_memory", ""));
    } catch (const Error& e) {
      throw Error(ErrorCode::InvalidKwarg, "kwarg 'max_host_memory': " + e.message());
    }
  }
  if (kw.count("verify")) {
    const std::string verify = kwarg_string(kw, "verify", "none");
    if (verify != "sha256" && verify != "none")
      throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg 'verify': '{}' is neither sha256 nor none", verify));
    options.io.verify_sha256 = verify == "sha256";
  }
}

}  // namespace

const std::vector<KwargSpec>& WeightLoaderRegistry::common_kwargs() {
  static const std::vector<KwargSpec> specs = {
      {"dtype", KwType::String, "dtype the weights are converted to (bf16, f16, f32, ...); default: as stored"},
      {"strict", KwType::Bool, "every parameter must be loaded and every tensor used (default true)"},
      {"allow_reshape", KwType::Bool, "accept a checkpoint shape with the parameter's element count (default false)"},
      {"strip_prefix", KwType::String, "remove this prefix from checkpoint names, e.g. 'model.' (';'-separated list)"},
      {"add_prefix", KwType::String, "add this prefix to checkpoint names"},
      {"rename", KwType::String, "exact renames 'old=new;old2=new2'"},
      {"regex_rename", KwType::String, "regex renames 'pattern=>replacement;...' (ECMAScript, $1 for groups)"},
      {"drop", KwType::String, "skip checkpoint names fully matching these regexes (';'-separated)"},
      {"name_map", KwType::String,
       "auto: recognise the checkpoint's and the model's naming schemes (hf, meta, torchtune, gguf, vLLM fused; "
       "wrapper prefixes module./_orig_mod./model./transformer./language_model.) and map between them; explicit (default): only the "
       "rules above"},
      {"concurrency", KwType::Int, "reader threads (0 = one per core)"},
      {"io", KwType::String,
       "how to read: auto (pread if mostly cached, else direct or uring, as measured faster), mmap, pread, "
       "direct (O_DIRECT), uring (O_DIRECT on io_uring)"},
      {"staging_bytes", KwType::Int, "staging memory for conversion and O_DIRECT, all threads together (default 32 MiB)"},
      {"device", KwType::String, "where the model's parameters live: cpu (default), cuda or cuda:N (pinned staging of staging_bytes)"},
      {"prefault", KwType::Bool, "fault the parameters' pages in, in parallel, before reading (default: what io=auto's probe measured faster here, else true)"},
      {"zero_copy", KwType::Bool, "back parameters whose exact bytes are in the file by its read-only mapping (default false)"},
      {"max_host_memory", KwType::String,
       "host memory a load may use at most, parameters on the host included: a size (2GiB, 500MB, bytes) or a share "
       "of RAM (0.5); staging and threads are lowered to fit, and a load that cannot is refused before it reads"},
      {"verify", KwType::String,
       "sha256: hash each file as the load reads it (whole, in one pass) and fail unless the digest is the one its "
       "cache blob name, ETag, <file>.sha256 or SHA256SUMS names (parameters are then read, never zero-copy); none (default)"},
  };
  return specs;
}

std::unique_ptr<WeightLoaderRegistry> WeightLoaderRegistry::with_builtins(Context context) {
  auto registry = std::make_unique<WeightLoaderRegistry>(std::move(context));
  register_builtin_loaders(*registry);
  return registry;
}

void WeightLoaderRegistry::register_loader(const std::string& name, LoaderSpec spec) {
  if (name.empty()) throw Error(ErrorCode::InvalidArgument, "a loader name cannot be empty");
  if (!spec.make) throw Error(ErrorCode::InvalidArgument, fmt::format("loader '{}' has no factory", name));
  for (const KwargSpec& k : spec.kwargs)
    for (const KwargSpec& c : common_kwargs())
      if (k.name == c.name)
        throw Error(ErrorCode::InvalidArgument, fmt::format("loader '{}' redeclares the common kwarg '{}'", name, k.name));
  std::lock_guard lock(mutex_);
  if (loaders_.count(name))
    throw Error(ErrorCode::LoaderExists, fmt::format("a loader named '{}' is already registered", name));
  loaders_.emplace(name, std::move(spec));
}

bool WeightLoaderRegistry::contains(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return loaders_.count(name) > 0;
}

std::vector<std::string> WeightLoaderRegistry::list_available() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, spec] : loaders_) names.push_back(name);
  return names;  // std::map keeps them sorted
}

LoaderSpec WeightLoaderRegistry::spec(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = loaders_.find(name);
  if (it == loaders_.end()) {
    std::vector<std::string> names;
    for (const auto& [n, s] : loaders_) names.push_back(n);
    throw Error(ErrorCode::UnknownLoader,
                fmt::format("no loader named '{}'; available: {}", name, fmt::join(names, ", ")));
  }
  return it->second;
}

std::unique_ptr<WeightLoader> WeightLoaderRegistry::create(const std::string& name, const Kwargs& kwargs) const {
  return create(name, kwargs, context_);
}

std::unique_ptr<WeightLoader> WeightLoaderRegistry::create(const std::string& name, const Kwargs& kwargs,
                                                           Context context) const {
  const LoaderSpec s = spec(name);
  Kwargs normalised;
  for (const auto& [key, value] : kwargs) {
    const KwargSpec* found = nullptr;
    for (const KwargSpec& k : s.kwargs)
      if (k.name == key) found = &k;
    for (const KwargSpec& k : common_kwargs())
      if (k.name == key) found = &k;
    if (!found) {
      std::vector<std::string> accepted;
      for (const KwargSpec& k : s.kwargs) accepted.push_back(k.name);
      for (const KwargSpec& k : common_kwargs()) accepted.push_back(k.name);
      throw Error(ErrorCode::UnknownKwarg,
                  fmt::format("loader '{}' does not accept kwarg '{}'; accepted: {}", name, key, fmt::join(accepted, ", ")));
    }
    normalised[key] = coerce(name, *found, value);
  }
  std::unique_ptr<WeightLoader> loader = s.make(normalised);
  apply_common(*loader, normalised);
  loader->options().context = std::move(context);
  return loader;
}

std::string kwarg_string(const Kwargs& kwargs, const std::string& name, const std::string& fallback) {
  auto it = kwargs.find(name);
  if (it == kwargs.end()) return fallback;
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg '{}' must be a string", name));
}

int64_t kwarg_int(const Kwargs& kwargs, const std::string& name, int64_t fallback) {
  auto it = kwargs.find(name);
  if (it == kwargs.end()) return fallback;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg '{}' must be an integer", name));
}

bool kwarg_bool(const Kwargs& kwargs, const std::string& name, bool fallback) {
  auto it = kwargs.find(name);
  if (it == kwargs.end()) return fallback;
  if (const auto* v = std::get_if<bool>(&it->second)) return *v;
  throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg '{}' must be true or false", name));
}

}  // namespace wl
