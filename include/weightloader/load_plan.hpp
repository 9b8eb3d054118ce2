// load_weights in two steps: a plan (which checkpoint tensor, or which slice of it, goes into
// which parameter; what is missing, unexpected, reshaped or mis-shaped) made without reading a
// byte, then its execution by the I/O engine. The default WeightLoader::load_weights is
// plan_load + execute_load; tools and tests inspect the plan in between.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weightloader/export.hpp"
#include "weightloader/loader.hpp"
#include "weightloader/model.hpp"
#include "weightloader/report.hpp"
#include "weightloader/source.hpp"

namespace wl {

// One tensor (or slice) into one parameter (or its shard's rows).
struct PlannedRead {
  const TensorInfo* tensor = nullptr;
  Parameter* param = nullptr;
  int shard = -1;            // index into param->shards; -1: the whole parameter
  ReadRequest request;       // the slice, the parameter's dtype, where the values go
  uint64_t bytes_written = 0;
  // zero_copy=true and the parameter is the whole tensor: execute_load backs it by the source's
  // mapping instead of reading, when the bytes allow.
  bool zero_copy_candidate = false;
};

struct WL_API LoadPlan {
  std::string source;                    // the source's origin
  std::string format;
  std::vector<PlannedRead> reads;        // in catalogue order
  std::vector<std::string> loaded;       // parameters that will receive data, each once
  std::vector<ConvertedTensor> converted;
  std::vector<ReshapedTensor> reshaped;
  std::vector<std::string> skipped;      // dropped by the name mapping
  std::vector<std::string> unexpected;   // no parameter takes them
  std::vector<std::string> missing;      // parameters (or shards) no tensor fills
  std::vector<std::string> shape_errors; // one line per mismatch; execute_load refuses them
  // auto_names: what matched, and the catalogue under the model's names the reads refer to.
  std::optional<NameMatch> names;
  std::shared_ptr<const WeightSource> renamed;

  // ShapeMismatch listing shape_errors; with `strict`, MissingParameters / UnexpectedTensors
  // listing the names (with a strip_prefix / add_prefix hint when a dotted prefix explains them).
  void check(bool strict) const;
};

// What executing a plan costs, known before a tensor byte is read.
struct WL_API LoadCost {
  std::map<std::string, uint64_t> file_bytes;  // bytes read from each file, by name (WeightSource::file_of)
  uint64_t bytes_read = 0;                     // their sum: the load's LoadReport::bytes_read
  uint64_t host_parameters = 0;    // storage of the parameters on the host that receive data
  uint64_t device_parameters = 0;  // the same on a device
  ReadEstimate io;                 // the I/O engine's plan: threads, staging, its own host memory
  uint64_t peak_host = 0;          // host_parameters + io.host_bytes
  uint64_t min_host = 0;           // host_parameters + io.min_host_bytes: the least it can run in
  uint64_t peak_device = 0;        // device_parameters
  // Seconds the reads should take at the rate this machine measured (io.bytes_per_s); nullopt:
  // not measured.
  std::optional<double> seconds;
};

// The cost of executing `plan` under `options`: OverBudget when options.max_host_memory is set and
// below min_host (naming both and what the minimum is made of); else io fitted to the budget.
WL_API LoadCost plan_cost(const LoadPlan& plan, const WeightSource& source, const LoadOptions& options);

// Maps names, matches shapes and shards, and lists what the load would do. Reads nothing.
// Throws DuplicateTarget when two tensors map onto one parameter (or shard).
WL_API LoadPlan plan_load(Model& model, const WeightSource& source, const LoadOptions& options);

// plan.check(options.strict), then backs zero-copy candidates by the mapping and reads the rest
// through the I/O engine in one batch. The report lists only what was actually loaded: on any
// error nothing is reported (the error names the source and the tensor).
WL_API LoadReport execute_load(const LoadPlan& plan, const WeightSource& source, const LoadOptions& options);

}  // namespace wl
