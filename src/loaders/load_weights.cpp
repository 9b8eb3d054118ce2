// The default WeightLoader::load_weights: plan (map names, check shapes), then read and report.
#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "loaders/auto_name_map.hpp"
#include "loaders/zero_copy.hpp"
#include "weightloader/error.hpp"
#include "weightloader/format.hpp"
#include "weightloader/load_plan.hpp"
#include "weightloader/loader.hpp"
#include "weightloader/name_schemes.hpp"

namespace wl {

namespace {

// When names differ only by a dotted prefix (the classic `model.`), says which kwarg fixes it.
std::string prefix_hint(const std::vector<std::string>& unexpected, const std::vector<std::string>& missing) {
  const std::unordered_set<std::string> missing_set(missing.begin(), missing.end());
  const std::unordered_set<std::string> unexpected_set(unexpected.begin(), unexpected.end());
  std::map<std::string, size_t> strip, add;
  for (const std::string& u : unexpected)
    for (size_t dot = u.find('.'); dot != std::string::npos; dot = u.find('.', dot + 1))
      if (missing_set.count(u.substr(dot + 1))) ++strip[u.substr(0, dot + 1)];
  for (const std::string& m : missing)
    for (size_t dot = m.find('.'); dot != std::string::npos; dot = m.find('.', dot + 1))
      if (unexpected_set.count(m.substr(dot + 1))) ++add[m.substr(0, dot + 1)];
  auto best = [](const std::map<std::string, size_t>& m) {
    return std::max_element(m.begin(), m.end(), [](auto& a, auto& b) { return a.second < b.second; });
  };
  if (!strip.empty())
    return fmt::format("; checkpoint names carry an extra prefix: pass strip_prefix={}", best(strip)->first);
  if (!add.empty()) return fmt::format("; parameter names carry a prefix the checkpoint lacks: pass add_prefix={}", best(add)->first);
  return {};
}

// When the unexpected names all follow one naming scheme and the missing ones another, says that
// name_map=auto maps them.
std::string scheme_hint(const std::vector<std::string>& unexpected, const std::vector<std::string>& missing) {
  if (unexpected.empty() || missing.empty()) return {};
  std::vector<std::string> wanted;  // a shard's entry "param (from name)" wants `name`
  for (const std::string& m : missing) {
    const size_t from = m.find(" (from ");
    wanted.push_back(from == std::string::npos ? m : m.substr(from + 7, m.size() - from - 8));
  }
  const DetectedScheme theirs = detect_name_scheme(unexpected), ours = detect_name_scheme(wanted);
  if (theirs.scheme.empty() || theirs.matched != theirs.total || ours.scheme.empty() ||
      (theirs.scheme == ours.scheme && theirs.prefix == ours.prefix))
    return {};
  return fmt::format("; the checkpoint's names are {}, the model's {}: pass name_map=auto to map them", theirs.to_string(),
                     ours.to_string());
}

// Where each checkpoint name goes: a parameter and which of its shards (-1: all of it).
struct Target {
  Parameter* param;
  int shard;
};

std::unordered_map<std::string, std::vector<Target>> targets_of(Model& model) {
  std::unordered_map<std::string, std::vector<Target>> targets;
  for (Parameter& p : model.parameters()) {
    if (p.shards.empty()) targets[p.name].push_back({&p, -1});
    for (size_t i = 0; i < p.shards.size(); ++i) targets[p.shards[i].from].push_back({&p, int(i)});
  }
  return targets;
}

// A whole tensor into its parameter: false (a shape error recorded) when the shapes disagree and
// allow_reshape does not accept it.
bool plan_whole(PlannedRead& read, LoadPlan& plan, const LoadOptions& options) {
  const TensorInfo& t = *read.tensor;
  const Parameter& p = *read.param;
  if (p.shape() != t.shape) {
    if (!options.allow_reshape || shape_numel(p.shape()) != t.numel()) {
      plan.shape_errors.push_back(fmt::format("'{}' is {} in the checkpoint but parameter '{}' is {}{}", t.name,
                                              shape_to_string(t.shape), p.name, shape_to_string(p.shape()),
                                              shape_numel(p.shape()) == t.numel() ? " (same element count: pass allow_reshape=true to accept)" : ""));
      return false;
    }
    plan.reshaped.push_back({p.name, t.shape, p.shape()});
  }
  // A mapping is host memory; and verify=sha256 hashes the bytes the load reads, so it reads them all.
  read.zero_copy_candidate = options.zero_copy && options.io.device.is_cpu() && !options.io.verify_sha256;
  read.bytes_written = p.data.numel() * dtype_size(p.dtype());
  return true;
}

// A slice of a tensor into rows of its parameter (ParameterShard): false (a shape error recorded)
// when the slice does not fit there.
bool plan_shard(const WeightSource& source, PlannedRead& read, LoadPlan& plan) {
  const TensorInfo& t = *read.tensor;
  Parameter& p = *read.param;
  const ParameterShard& shard = p.shards[size_t(read.shard)];
  const Shape got = source.slice_shape(t, shard.slice);
  // A parameter of one more dimension takes slices as rows of its two leading dimensions merged
  // (vLLM's FusedMoE: [experts, rows, cols] from each expert's [rows, cols]).
  Shape want = p.shape();
  if (want.size() == got.size() + 1 && want.size() >= 3) {
    want[1] *= want[0];
    want.erase(want.begin());
  }
  const bool fits = !want.empty() && got.size() == want.size() && std::equal(got.begin() + 1, got.end(), want.begin() + 1) &&
                    shard.row_offset <= want[0] && got[0] <= want[0] - shard.row_offset;
  if (!fits) {
    plan.shape_errors.push_back(fmt::format("'{}' (slice [{}, {}) of dim {}) is {} but must fill rows from {} of parameter '{}' {}",
                                            t.name, shard.slice.begin, std::min(shard.slice.end, t.shape.empty() ? 0 : t.shape[shard.slice.dim]),
                                            shard.slice.dim, shape_to_string(got), shard.row_offset, p.name,
                                            shape_to_string(p.shape())));
    return false;
  }
  read.request.slice = shard.slice;
  const uint64_t row_elements = want[0] ? p.data.numel() / want[0] : 0;
  read.request.dst = p.data.raw() + shard.row_offset * row_elements * dtype_size(p.dtype());
  read.bytes_written = shape_numel(got) * dtype_size(p.dtype());
  return true;
}

// name_map=auto: the plan of the checkpoint renamed by the best scheme mapping.
LoadPlan plan_auto_named(Model& model, const WeightSource& source, const LoadOptions& options) {
  AutoNameMap automatic = auto_name_map(model, source, options);
  LoadOptions renamed_options = options;
  renamed_options.auto_names = false;
  renamed_options.names = NameMapping{};
  std::shared_ptr<const WeightSource> renamed(std::move(automatic.renamed));
  LoadPlan plan = plan_load(model, *renamed, renamed_options);
  plan.skipped.insert(plan.skipped.begin(), automatic.skipped.begin(), automatic.skipped.end());
  plan.names = automatic.match;
  plan.renamed = std::move(renamed);
  return plan;
}

}  // namespace

LoadPlan plan_load(Model& model, const WeightSource& source, const LoadOptions& options) {
  if (options.auto_names) return plan_auto_named(model, source, options);
  LoadPlan plan;
  plan.source = source.origin();
  plan.format = source.format();
  const auto targets = targets_of(model);
  std::map<std::pair<const Parameter*, int>, std::string> filled;  // target → checkpoint name
  std::unordered_set<const Parameter*> listed;                     // in plan.loaded / converted
  for (const TensorInfo& t : source.tensors()) {
    const std::optional<std::string> mapped = options.names.map(t.name);
    if (!mapped) {
      plan.skipped.push_back(t.name);
      continue;
    }
    auto found = targets.find(*mapped);
    if (found == targets.end()) {
      plan.unexpected.push_back(t.name);
      continue;
    }
    for (const Target& target : found->second) {
      Parameter* p = target.param;
      auto [it, fresh] = filled.emplace(std::pair<const Parameter*, int>(p, target.shard), t.name);
      if (!fresh)
        throw Error(ErrorCode::DuplicateTarget,
                    fmt::format("checkpoint tensors '{}' and '{}' both map onto parameter '{}'", it->second, t.name, p->name),
                    source.origin(), t.name);
      PlannedRead read{&t, p, target.shard, ReadRequest{&t, Slice{}, p->dtype(), p->data.raw()}, 0, false};
      if (!(target.shard < 0 ? plan_whole(read, plan, options) : plan_shard(source, read, plan))) continue;
      if (listed.insert(p).second) {
        if (t.stored_type() != dtype_name(p->dtype())) plan.converted.push_back({p->name, t.stored_type(), p->dtype()});
        plan.loaded.push_back(p->name);
      }
      plan.reads.push_back(read);
    }
  }
  for (const Parameter& p : model.parameters()) {
    if (p.shards.empty() && !filled.count({&p, -1})) plan.missing.push_back(p.name);
    for (size_t i = 0; i < p.shards.size(); ++i)
      if (!filled.count({&p, int(i)})) plan.missing.push_back(fmt::format("{} (from {})", p.name, p.shards[i].from));
  }
  return plan;
}

void LoadPlan::check(bool strict) const {
  if (!shape_errors.empty())
    throw Error(ErrorCode::ShapeMismatch,
                fmt::format("{} shape mismatch{}: {}", shape_errors.size(), shape_errors.size() == 1 ? "" : "es",
                            fmt::join(shape_errors, "; ")),
                source);
  if (!strict || (missing.empty() && unexpected.empty())) return;
  std::string msg;
  if (!missing.empty())
    msg += fmt::format("{} parameter(s) missing from the checkpoint: {}", missing.size(), fmt::join(missing, ", "));
  if (!unexpected.empty())
    msg += fmt::format("{}{} checkpoint tensor(s) match no parameter: {}", msg.empty() ? "" : "; ", unexpected.size(),
                       fmt::join(unexpected, ", "));
  // A scheme that explains every unexpected name says more than a prefix that explains some.
  std::string hint = scheme_hint(unexpected, missing);
  if (hint.empty()) hint = prefix_hint(unexpected, missing);
  msg += hint + " (or load non-strict with strict=false)";
  throw Error(missing.empty() ? ErrorCode::UnexpectedTensors : ErrorCode::MissingParameters, msg, source);
}

LoadReport execute_load(const LoadPlan& plan, const WeightSource& given, const LoadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const WeightSource& source = plan.renamed ? *plan.renamed : given;  // the reads refer to its tensors
  plan.check(options.strict);
  // max_host_memory: refused here, before anything is read, when even the least does not fit; what
  // the parameters leave of it bounds the engine.
  const uint64_t host_budget =
      options.max_host_memory ? options.max_host_memory - plan_cost(plan, given, options).host_parameters : 0;
  LoadReport report;
  report.source = plan.source;
  report.format = plan.format;
  report.loaded = plan.loaded;
  report.converted = plan.converted;
  report.reshaped = plan.reshaped;
  report.skipped = plan.skipped;
  report.missing = plan.missing;
  report.unexpected = plan.unexpected;
  report.names = plan.names;

  std::vector<ReadRequest> requests;
  for (const PlannedRead& read : plan.reads) {
    if (const Device where = read.param->data.storage()->device(); where != options.io.device)
      throw Error(ErrorCode::InvalidArgument,
                  fmt::format("the parameter's memory is on {} but the load is into {} (LoadOptions::io.device)",
                              where.name(), options.io.device.name()),
                  plan.source, read.param->name);
    if (read.zero_copy_candidate && back_by_file_mapping(*read.param, *read.tensor, source)) {
      report.zero_copy.push_back(read.param->name);
      continue;
    }
    requests.push_back(read.request);
    report.bytes_written += read.bytes_written;
  }
  IoOptions io = options.io;
  if (!io.devices) io.devices = options.context.devices;
  if (host_budget) io.host_budget = host_budget;
  const ReadStats stats = source.read_all(requests, io);
  report.bytes_read = stats.bytes_read;
  report.bytes_fetched = source.bytes_fetched();
  report.concurrency = stats.threads;
  report.staging_bytes = stats.staging_bytes;
  report.staging_bound = options.io.staging_bytes;
  report.io_mode = std::string(io_mode_name(stats.mode));
  report.io_mode_reason = stats.mode_reason;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

LoadReport WeightLoader::load_weights(Model& model, const WeightSource& source, const LoadOptions& call) const {
  return execute_load(plan_load(model, source, call), source, call);
}

std::shared_ptr<const Opener> WeightLoader::session_opener(const LoadOptions& call) {
  return std::make_shared<CachingOpener>(call.context.files());
}

std::unique_ptr<WeightSource> WeightLoader::canonical_source(const WeightSource& source) const {
  if (!options_.auto_names) return source.with_metadata(source.metadata());
  Model model = mirror_model(source);  // untouched heap pages: shapes only
  LoadOptions options = options_;
  options.strict = false;
  return auto_name_map(model, source, options).renamed;
}

Model WeightLoader::mirror_model(const WeightSource& source) const {
  Model model;
  if (options_.auto_names) {  // under the canonical (Hugging Face) names
    const std::vector<std::optional<std::string>> names = canonical_names(source, options_.names);
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i]) model.add_parameter(*names[i], source.tensors()[i].shape, dtype_.value_or(source.tensors()[i].dtype));
    return model;
  }
  for (const TensorInfo& t : source.tensors()) {
    const std::optional<std::string> mapped = options_.names.map(t.name);
    if (!mapped) continue;
    const DType dtype = dtype_.value_or(t.dtype);
    if (options_.io.device.is_cpu())
      model.add_parameter(*mapped, t.shape, dtype);
    else
      model.add_parameter(*mapped, TensorView(allocate_device_storage(options_.io.device, shape_numel(t.shape) * dtype_size(dtype),
                                                                      options_.context.devices.get()),
                                              dtype, t.shape));
  }
  return model;
}

}  // namespace wl
