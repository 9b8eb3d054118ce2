// The C++ registry's loaders for Python: create with checked kwargs, get_weights, and load
// straight into memory the caller owns (a torch module's parameters) with the GIL released.
#include <cstring>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bind/bindings.hpp"
#include "bind/interruptible.hpp"
#include "weightloader/checkpoint_names.hpp"
#include "weightloader/error.hpp"
#include "weightloader/load_plan.hpp"
#include "weightloader/name_schemes.hpp"
#include "weightloader/engine/plan.hpp"
#include "weightloader/registry.hpp"

namespace wl::py {

namespace pyb = pybind11;

Kwargs to_kwargs(const pyb::dict& kwargs) {
  Kwargs out;
  for (const auto& [key, value] : kwargs) {
    const std::string k = key.cast<std::string>();
    if (pyb::isinstance<pyb::bool_>(value)) out[k] = value.cast<bool>();
    else if (pyb::isinstance<pyb::int_>(value)) out[k] = value.cast<int64_t>();
    else if (pyb::isinstance<pyb::float_>(value)) out[k] = value.cast<double>();
    else if (pyb::isinstance<pyb::str>(value)) out[k] = value.cast<std::string>();
    else
      throw Error(ErrorCode::InvalidKwarg, fmt::format("kwarg '{}': {} is not a bool, int, float or str", k,
                                                       pyb::repr(value).cast<std::string>()));
  }
  return out;
}

pyb::dict kwargs_to_python(const Kwargs& kwargs) {
  pyb::dict out;
  for (const auto& entry : kwargs) std::visit([&](const auto& x) { out[pyb::str(entry.first)] = x; }, entry.second);
  return out;
}

namespace {

struct Loader {
  std::string name;
  std::unique_ptr<const WeightLoader> loader;  // never changed: Python threads share it
};

// progress: called as a model id is downloaded (the hf loader); False from it cancels, as Ctrl-C does.
std::shared_ptr<WeightSource> get_weights(const Loader& l, const std::string& path, pyb::object progress) {
  Interruptible call(std::move(progress));
  LoadOptions options = l.loader->options();  // this call's
  options.io.progress = call.progress();
  return call.run([&] { return std::shared_ptr<WeightSource>(l.loader->get_weights(path, options)); });
}

pyb::list mirror(const Loader& l, const WeightSource& source) {
  pyb::list out;
  const Model model = l.loader->mirror_model(source);  // named: a range-for over a temporary's member dangles
  for (const Parameter& p : model.parameters())
    out.append(pyb::make_tuple(p.name, std::string(dtype_name(p.dtype())), p.shape()));
  return out;
}

// A parameter's parts: (checkpoint name, dim, begin, end, row offset) for each ParameterShard.
std::vector<ParameterShard> to_shards(const pyb::handle& parts) {
  std::vector<ParameterShard> out;
  for (const pyb::handle h : parts) {
    const auto s = h.cast<pyb::tuple>();
    out.push_back({s[0].cast<std::string>(), Slice{s[1].cast<size_t>(), s[2].cast<uint64_t>(), s[3].cast<uint64_t>()},
                   s[4].cast<uint64_t>()});
  }
  return out;
}

// params: (name, dtype, shape, data pointer, nbytes[, parts]) for every parameter, contiguous and
// writable, at `where`; parts (see to_shards), when given and not None, fill it instead of the
// whole tensor of its name.
Model to_model(const pyb::list& params, const Device& where) {
  Model model;
  for (const pyb::handle h : params) {
    const auto p = h.cast<pyb::tuple>();
    const DType dtype = dtype_from_name(p[1].cast<std::string>());
    const Shape shape = p[2].cast<Shape>();
    const uint64_t nbytes = p[4].cast<uint64_t>();
    if (shape_numel(shape) * dtype_size(dtype) != nbytes)
      throw Error(ErrorCode::InvalidArgument, fmt::format("parameter '{}': {} bytes for {} {}", p[0].cast<std::string>(),
                                                          nbytes, dtype_name(dtype), shape_to_string(shape)));
    auto storage =
        std::make_shared<BorrowedStorage>(reinterpret_cast<std::byte*>(p[3].cast<uintptr_t>()), nbytes, true, where);
    Parameter& param = model.add_parameter(p[0].cast<std::string>(), TensorView(storage, dtype, shape));
    if (p.size() > 5 && !p[5].is_none()) param.shards = to_shards(p[5]);
  }
  return model;
}

// The tensor-parallel shards of rank `rank` of `size` for the parameters (as `load` takes them),
// planned against the checkpoint under the names this loader's whole mapping (name_map=auto
// included) gives it for them; see shards_to_python.
pyb::dict rank_shards(const Loader& l, const WeightSource& source, const pyb::list& params, int64_t rank, int64_t size,
                      const std::vector<std::pair<std::string, std::optional<int64_t>>>& shard_dims,
                      const std::optional<FusedParts>& fused) {
  const Model model = to_model(params, l.loader->options().io.device);
  return shards_to_python(plan_rank_shards(model, source, l.loader->options(), to_rank_layout(rank, size, shard_dims, fused)));
}

// The parameters a zero-copy load backed by the file, as writable views of private mappings of
// their files (what Python installs in place of its tensors), where the file is local; elsewhere
// (tensors in memory) their bytes are copied into the memory the caller gave.
pyb::dict installed_views(const LoadPlan& plan, const LoadReport& report, const WeightSource& source,
                          const std::map<std::string, TensorView>& given) {
  const std::set<std::string> backed(report.zero_copy.begin(), report.zero_copy.end());
  PrivateMappings maps(source);
  pyb::dict views;
  for (const PlannedRead& read : plan.reads) {
    if (!backed.count(read.param->name)) continue;
    if (std::optional<MappedBytes> bytes = maps.bytes(*read.tensor)) {
      views[pyb::str(read.param->name)] = std::move(*bytes);
      continue;
    }
    const TensorView& memory = given.at(read.param->name);
    std::memcpy(memory.raw(), read.param->data.raw(), memory.nbytes());
  }
  return views;
}

// Fills the parameters (see to_model). strict: None keeps the loader's own setting. device: where
// every pointer is ("cpu", "cuda:N"; None keeps the loader's). replace: the caller may replace its
// tensors (a module built on the meta device, assign=True); with the loader's zero_copy, parameters
// whose stored bytes the rule accepts are then not read but returned as views (installed_views).
// Without it every parameter is read into the caller's memory, zero_copy or not.
// Returns (the LoadReport, {parameter: MappedBytes}).
pyb::tuple load(const Loader& l, const WeightSource& source, const pyb::list& params, std::optional<bool> strict,
                pyb::object progress, std::optional<std::string> device, bool replace) {
  const Device where = device ? Device::parse(*device) : l.loader->options().io.device;
  Model model = to_model(params, where);
  Interruptible call(std::move(progress));
  // This call's options: the loader, shared between threads, is not changed.
  LoadOptions options = l.loader->options();
  if (strict) options.strict = *strict;
  options.io.device = where;
  options.io.progress = call.progress();
  options.zero_copy = options.zero_copy && replace;
  LoadReport report;
  pyb::dict views;
  if (options.zero_copy) {  // the plan says which checkpoint tensor backs each parameter
    std::map<std::string, TensorView> given;
    for (const Parameter& p : model.parameters()) given.emplace(p.name, p.data);
    const LoadPlan plan = plan_load(model, source, options);
    report = call.run([&] { return execute_load(plan, source, options); });
    views = installed_views(plan, report, source, given);
  } else {
    report = call.run([&] { return l.loader->load_weights(model, source, options); });
  }
  return pyb::make_tuple(std::move(report), views);
}

}  // namespace

void register_loaders(pyb::module_& m) {
  pyb::class_<Loader>(m, "Loader")
      .def_readonly("name", &Loader::name)
      .def_property_readonly("dtype", [](const Loader& l) -> std::optional<std::string> {
        if (!l.loader->dtype()) return std::nullopt;
        return std::string(dtype_name(*l.loader->dtype()));
      })
      .def("get_weights", &get_weights, pyb::arg("path"), pyb::arg("progress") = pyb::none())
      .def("mirror", &mirror)
      .def("plan",
           [](const Loader& l, const WeightSource& source, unsigned tp, bool expert_parallel, bool mirror) {
             return plan_model(*l.loader, source, {tp, expert_parallel, mirror});
           },
           pyb::arg("source"), pyb::arg("tensor_parallel_size") = 1, pyb::arg("expert_parallel") = false,
           pyb::arg("mirror") = false)
      .def("rank_shards", &rank_shards, pyb::arg("source"), pyb::arg("params"), pyb::arg("rank"), pyb::arg("size"),
           pyb::arg("shard_dims"), pyb::arg("fused") = pyb::none())
      .def("load", &load, pyb::arg("source"), pyb::arg("params"), pyb::arg("strict") = pyb::none(),
           pyb::arg("progress") = pyb::none(), pyb::arg("device") = pyb::none(), pyb::arg("replace") = false);
  m.def("create_loader", [](const std::string& name, const pyb::dict& kwargs) {
    return Loader{name, module_registry().create(name, to_kwargs(kwargs))};
  });
  m.def("list_loaders", [] { return module_registry().list_available(); });
  m.def("loader_spec", [](const std::string& name) {
    const LoaderSpec spec = module_registry().spec(name);
    pyb::list kwargs;
    for (const std::vector<KwargSpec>* list : {&spec.kwargs, &WeightLoaderRegistry::common_kwargs()})
      for (const KwargSpec& k : *list) kwargs.append(pyb::make_tuple(k.name, static_cast<int>(k.type), k.help));
    return pyb::make_tuple(spec.description, kwargs);
  });
  m.def("detect_name_scheme", [](const std::vector<std::string>& names) {
    const DetectedScheme d = detect_name_scheme(names);
    pyb::dict out;
    out["scheme"] = d.scheme;
    out["prefix"] = d.prefix;
    out["matched"] = d.matched;
    out["total"] = d.total;
    out["summary"] = d.to_string();
    return out;
  });
  m.def("detect_loader", [](const std::string& path) {
    const Context& context = module_context();  // a remote path means requests: interruptible
    const LoaderChoice c = Interruptible().run([&] { return detect_loader(path, *context.files(), formats_of(context)); });
    return pyb::make_tuple(c.name, kwargs_to_python(c.kwargs));
  });
}

}  // namespace wl::py
