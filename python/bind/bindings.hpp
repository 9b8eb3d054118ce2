// The weightloader._core extension: a thin binding of the C++ library; the Python layer
// (python/weightloader/) builds the user-facing API on it.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "loaders/rank_shards.hpp"
#include "weightloader/byte_source.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/source.hpp"
#include "weightloader/tensor.hpp"

namespace wl::py {

void register_errors(pybind11::module_& m);
void register_sources(pybind11::module_& m);
void register_loaders(pybind11::module_& m);
void register_llm(pybind11::module_& m);
void register_writers(pybind11::module_& m);
void register_host_memory(pybind11::module_& m);
void register_tensor_parallel(pybind11::module_& m);
void register_plan(pybind11::module_& m);
void register_report(pybind11::module_& m);
void register_communicator(pybind11::module_& m);

// What the module's loads reach through: local files, and what the build links — http://,
// https:// and s3:// names and hub downloads (the remote component), CUDA devices (load_into
// fills torch CUDA tensors in place). Made once.
const Context& module_context();
// The module's C++ loaders: the built-ins, given module_context(). Made once.
const WeightLoaderRegistry& module_registry();

// A Python object kept alive by C++ (a tensor's or array's owner): released with the GIL held.
std::shared_ptr<const void> keep_alive(pybind11::object owner);

// Python kwargs (bool, int, float, str values) as the C++ registry takes them; InvalidKwarg otherwise.
Kwargs to_kwargs(const pybind11::dict& kwargs);
// And back: a dict of bool, int, float and str values.
pybind11::dict kwargs_to_python(const Kwargs& kwargs);

// Memory a Python object owns (a tensor's or array's), seen by the library as a Storage; the
// caller keeps the owner alive for as long as the storage is used.
class BorrowedStorage final : public Storage {
 public:
  BorrowedStorage(std::byte* data, size_t size, bool writable, Device device = {}) : device_(device) {
    data_ = data;
    size_ = size;
    writable_ = writable;
  }
  std::string describe() const override { return "caller's memory, " + std::to_string(size_) + " bytes"; }
  Device device() const override { return device_; }  // a torch CUDA tensor's storage is on its device

 private:
  Device device_;
};

// Bytes of a mapping as a Python buffer (torch.frombuffer and np.frombuffer keep it, and so the
// mapping, alive).
struct MappedBytes {
  TensorView bytes;
};

// Private copy-on-write mappings of the local files an opener names, one per file, made on first
// use (see private_views.cpp).
class PrivateMappings {
 public:
  // The files of `source`, which its tensors' bytes() come from.
  explicit PrivateMappings(const WeightSource& source) : opener_(source.opener()), files_(source.files()) {}
  // The tensor's stored bytes in its file's private mapping; None for an empty tensor or a file
  // that is not local.
  std::optional<MappedBytes> bytes(const TensorInfo& t);

 private:
  std::shared_ptr<const Opener> opener_;
  std::vector<std::string> files_;
  std::mutex mutex_;
  std::map<SourceIndex, std::shared_ptr<Storage>> maps_;  // by file index
};

// The shard planner's layout from Python's arguments: shard_dims as (pattern, dim or None) pairs,
// fused as {component: parts} (None: vLLM's).
RankLayout to_rank_layout(int64_t rank, int64_t size, const std::vector<std::pair<std::string, std::optional<int64_t>>>& shard_dims,
                          const std::optional<FusedParts>& fused);

// {parameter: [(source, dim, begin, end, row offset)]}: what tensor_parallel.Shard holds.
pybind11::dict shards_to_python(const ParameterShards& planned);

// A dtype name as the library spells it ("F32", "BF16", ...); ValueError if unknown.
DType dtype_from_name(const std::string& name);

}  // namespace wl::py
