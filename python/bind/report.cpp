// wl::LoadReport for Python: read-only attributes (loaded, converted, missing, ..., gbps, names),
// str() its to_string(), and the read side of a dict (report["loaded"], keys(), dict(report)) over
// the same fields in to_json()'s order. Attributes that Python adds (load_into's tp_rank and tp_size)
// are items too.
#include <functional>
#include <utility>
#include <vector>

#include "bind/bindings.hpp"
#include "weightloader/report.hpp"

namespace wl::py {

namespace pyb = pybind11;

namespace {

pyb::object converted(const LoadReport& r) {
  pyb::list out;
  for (const ConvertedTensor& c : r.converted) {
    pyb::dict d;
    d["name"] = c.name;
    d["from"] = c.from;
    d["to"] = std::string(dtype_name(c.to));
    out.append(d);
  }
  return out;
}

pyb::object reshaped(const LoadReport& r) {
  pyb::list out;
  for (const ReshapedTensor& s : r.reshaped) {
    pyb::dict d;
    d["name"] = s.name;
    d["from"] = s.from;
    d["to"] = s.to;
    out.append(d);
  }
  return out;
}

pyb::object names(const LoadReport& r) {
  if (!r.names) return pyb::none();
  pyb::dict d;
  d["summary"] = r.names->to_string();
  d["from"] = r.names->from;
  d["from_prefix"] = r.names->from_prefix;
  d["to"] = r.names->to;
  d["to_prefix"] = r.names->to_prefix;
  d["matched"] = r.names->matched;
  d["total"] = r.names->total;
  return d;
}

template <typename T>
std::function<pyb::object(const LoadReport&)> member(T LoadReport::*field) {
  return [field](const LoadReport& r) { return pyb::cast(r.*field); };
}

// The fields, in to_json()'s order.
const std::vector<std::pair<const char*, std::function<pyb::object(const LoadReport&)>>>& fields() {
  static const std::vector<std::pair<const char*, std::function<pyb::object(const LoadReport&)>>> all = {
      {"source", member(&LoadReport::source)},
      {"format", member(&LoadReport::format)},
      {"loaded", member(&LoadReport::loaded)},
      {"converted", converted},
      {"reshaped", reshaped},
      {"skipped", member(&LoadReport::skipped)},
      {"missing", member(&LoadReport::missing)},
      {"unexpected", member(&LoadReport::unexpected)},
      {"bytes_read", member(&LoadReport::bytes_read)},
      {"bytes_written", member(&LoadReport::bytes_written)},
      {"bytes_fetched", member(&LoadReport::bytes_fetched)},
      {"seconds", member(&LoadReport::seconds)},
      {"gbps", [](const LoadReport& r) { return pyb::cast(r.gbps()); }},
      {"concurrency", member(&LoadReport::concurrency)},
      {"staging_bytes", member(&LoadReport::staging_bytes)},
      {"staging_bound", member(&LoadReport::staging_bound)},
      {"io_mode", member(&LoadReport::io_mode)},
      {"io_mode_reason", member(&LoadReport::io_mode_reason)},
      {"zero_copy", member(&LoadReport::zero_copy)},
      {"names", names},
  };
  return all;
}

// The names of the fields, then those of the attributes Python added.
pyb::list keys(const pyb::object& self) {
  pyb::list out;
  for (const auto& [name, get] : fields()) out.append(pyb::str(name));
  for (const auto& [name, value] : pyb::cast<pyb::dict>(self.attr("__dict__"))) out.append(name);
  return out;
}

pyb::object item(const pyb::object& self, const std::string& key) {
  for (const auto& [name, get] : fields())
    if (key == name) return get(self.cast<const LoadReport&>());
  const pyb::dict added = self.attr("__dict__");
  if (added.contains(key)) return added[pyb::str(key)];
  throw pyb::key_error(key);
}

}  // namespace

void register_report(pyb::module_& m) {
  pyb::class_<LoadReport> report(m, "LoadReport", pyb::dynamic_attr(),
                                 "What a load did (the C++ LoadReport): read-only attributes, also items (report[\"loaded\"]).");
  for (const auto& [name, get] : fields()) report.def_property_readonly(name, get);
  report.def("keys", &keys)
      .def("__getitem__", &item, pyb::arg("key"))
      .def("__contains__", [](const pyb::object& self, const pyb::object& key) { return keys(self).contains(key); })
      .def("__iter__", [](const pyb::object& self) { return pyb::iter(keys(self)); })
      .def("__len__", [](const pyb::object& self) { return pyb::len(keys(self)); })
      .def("to_string", &LoadReport::to_string, pyb::arg("verbose") = false, "a human-readable summary")
      .def("to_json", &LoadReport::to_json)
      .def("__str__", [](const LoadReport& r) { return r.to_string(); })
      .def("__repr__", [](const LoadReport& r) {
        return "<LoadReport " + r.source + ": " + std::to_string(r.loaded.size()) + " loaded, " +
               std::to_string(r.missing.size()) + " missing, " + std::to_string(r.unexpected.size()) + " unexpected>";
      });
}

}  // namespace wl::py
