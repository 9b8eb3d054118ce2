// weightloader.plan: ModelPlan and RankPlan as read-only Python objects (str() prints the plan).
#include <pybind11/stl.h>

#include "bind/bindings.hpp"
#include "weightloader/engine/plan.hpp"

namespace wl::py {

namespace pyb = pybind11;

void register_plan(pyb::module_& m) {
  pyb::class_<RankPlan>(m, "RankPlan")
      .def_readonly("rank", &RankPlan::rank)
      .def_readonly("parameters", &RankPlan::parameters)
      .def_readonly("missing", &RankPlan::missing)
      .def_property_readonly("files", [](const RankPlan& r) { return r.cost.file_bytes; })
      .def_property_readonly("bytes_read", [](const RankPlan& r) { return r.cost.bytes_read; })
      .def_property_readonly("host_parameters", [](const RankPlan& r) { return r.cost.host_parameters; })
      .def_property_readonly("device_parameters", [](const RankPlan& r) { return r.cost.device_parameters; })
      .def_property_readonly("io_host_bytes", [](const RankPlan& r) { return r.cost.io.host_bytes; })
      .def_property_readonly("threads", [](const RankPlan& r) { return r.cost.io.threads; })
      .def_property_readonly("staging_bytes", [](const RankPlan& r) { return r.cost.io.staging_bytes; })
      .def_property_readonly("io_mode", [](const RankPlan& r) { return std::string(io_mode_name(r.cost.io.mode)); })
      .def_property_readonly("peak_host", [](const RankPlan& r) { return r.cost.peak_host; })
      .def_property_readonly("min_host", [](const RankPlan& r) { return r.cost.min_host; })
      .def_property_readonly("peak_device", [](const RankPlan& r) { return r.cost.peak_device; })
      .def_property_readonly("seconds", [](const RankPlan& r) { return r.cost.seconds; })
      .def_property_readonly("rate_from", [](const RankPlan& r) { return r.cost.seconds ? r.cost.io.rate_from : "not measured"; })
      .def("__repr__", [](const RankPlan& r) {
        return "<RankPlan rank " + std::to_string(r.rank) + ": reads " + std::to_string(r.cost.bytes_read) + " bytes, peak host " +
               std::to_string(r.cost.peak_host) + ">";
      });
  pyb::class_<ModelPlan>(m, "ModelPlan")
      .def_readonly("source", &ModelPlan::source)
      .def_readonly("format", &ModelPlan::format)
      .def_readonly("model", &ModelPlan::model)
      .def_readonly("tensor_parallel_size", &ModelPlan::tensor_parallel_size)
      .def_readonly("expert_parallel", &ModelPlan::expert_parallel)
      .def_readonly("dtype", &ModelPlan::dtype)
      .def_readonly("device", &ModelPlan::device)
      .def_readonly("max_host_memory", &ModelPlan::max_host_memory)
      .def_readonly("ranks", &ModelPlan::ranks)
      .def("to_json", &ModelPlan::to_json)
      .def("__str__", &ModelPlan::to_string);
}

}  // namespace wl::py
