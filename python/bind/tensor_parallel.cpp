// Tensor parallelism for Python: the C++ shard planner (loaders/rank_shards.hpp) over shapes, the
// description ranks compare before loading (loaders/rank_agreement.hpp) and the catalogue rank 0
// sends the others (loaders/shared_catalogue.hpp).
#include "bind/bindings.hpp"
#include "loaders/rank_agreement.hpp"
#include "loaders/shared_catalogue.hpp"
#include "loaders/catalogue_value.hpp"

namespace wl::py {

namespace pyb = pybind11;

RankLayout to_rank_layout(int64_t rank, int64_t size, const std::vector<std::pair<std::string, std::optional<int64_t>>>& shard_dims,
                          const std::optional<FusedParts>& fused) {
  RankLayout layout{rank, size, {}, fused.value_or(vllm_fused())};
  for (const auto& [pattern, dim] : shard_dims) layout.shard_dims.push_back({pattern, dim});
  return layout;
}

pyb::dict shards_to_python(const ParameterShards& planned) {
  pyb::dict out;
  for (const auto& [name, shards] : planned) {
    pyb::list parts;
    for (const ParameterShard& s : shards)
      parts.append(pyb::make_tuple(s.from, s.slice.dim, s.slice.begin, s.slice.end, s.row_offset));
    out[pyb::str(name)] = parts;
  }
  return out;
}

void register_tensor_parallel(pyb::module_& m) {
  m.def("vllm_fused", [] { return vllm_fused(); });
  m.def("check_rank", &check_rank, pyb::arg("rank"), pyb::arg("size"));
  // params: [(name, rank's shape)]; checkpoint: {name: shape}; shard_dims: [(pattern, dim or None)];
  // fused: {component: [parts]}, None for vLLM's. {parameter: [(source, dim, begin, end, row offset)]}.
  m.def("plan_shards",
        [](const std::vector<std::pair<std::string, Shape>>& params, const std::unordered_map<std::string, Shape>& checkpoint,
           int64_t rank, int64_t size, const std::vector<std::pair<std::string, std::optional<int64_t>>>& shard_dims,
           const std::optional<FusedParts>& fused) {
          return shards_to_python(plan_rank_shards(params, checkpoint, to_rank_layout(rank, size, shard_dims, fused)));
        });
  m.def("describe_checkpoint", [](const WeightSource& source) { return describe_checkpoint(source); });
  // detected: detection's kwargs (strings), sent with the loader's name so that the receivers need not detect.
  m.def(
      "share_catalogue",
      [](const std::string& loader, const WeightSource& source, const std::string& path, const std::map<std::string, std::string>& detected) {
        LoaderChoice choice{loader, {}};
        for (const auto& [k, v] : detected) choice.kwargs[k] = v;
        return share(choice, source, path);
      },
      pyb::arg("loader"), pyb::arg("source"), pyb::arg("path"), pyb::arg("detected") = std::map<std::string, std::string>{});
  // (loader name, detection's kwargs, the catalogue) or None.
  m.def("shared_catalogue", [](const std::string& shared, const std::string& path) -> pyb::object {
    const std::optional<SharedCatalogue> received = received_catalogue(shared, path);
    if (!received) return pyb::none();
    std::shared_ptr<WeightSource> source(catalogue_from_value(received->catalogue, module_context().files()));
    return pyb::make_tuple(received->choice.name, kwargs_to_python(received->choice.kwargs), source);
  });
}

}  // namespace wl::py
