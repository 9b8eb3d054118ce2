// Tensor parallelism for Python: the C++ shard planner (loaders/rank_shards.hpp) over shapes, the
// description ranks compare before loading (engine/rank_agreement.hpp) and the catalogue rank 0
// sends the others (engine/shared_catalogue.hpp).
#include "bind/bindings.hpp"
#include "engine/rank_agreement.hpp"
#include "engine/shared_catalogue.hpp"
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
  m.def("share_catalogue", [](const std::string& loader, const WeightSource& source, const std::string& path) {
    return share({loader, {}}, source, path);
  });
  m.def("shared_catalogue", [](const std::string& shared, const std::string& path) -> std::shared_ptr<WeightSource> {
    const std::optional<SharedCatalogue> received = received_catalogue(shared, path);
    return received ? std::shared_ptr<WeightSource>(catalogue_from_value(received->catalogue, module_context().files())) : nullptr;
  });
}

}  // namespace wl::py
