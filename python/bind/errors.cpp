// wl::Error → the weightloader.Error hierarchy (python/weightloader/errors.py), raised with the
// code, file and tensor as attributes. Every other C++ exception becomes a Python exception too:
// nothing thrown by the library can abort the interpreter.
#include "bind/bindings.hpp"

#include "weightloader/error.hpp"

namespace wl::py {

namespace {

// Text from a file (a hostile name, a message quoting it) may not be UTF-8: undecodable bytes are
// kept as \xNN escapes rather than failing the translation.
pybind11::str text(const std::string& s) {
  return pybind11::reinterpret_steal<pybind11::str>(
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "backslashreplace"));
}

}  // namespace

void register_errors(pybind11::module_& m) {
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      pybind11::object make = pybind11::module_::import("weightloader.errors").attr("_from_core");
      pybind11::object error = make(std::string(error_code_name(e.code())), text(e.message()), text(e.file()), text(e.tensor()),
                                    e.retryable(), std::string(error_category_name(e.category())),
                                    e.os_errno() ? pybind11::object(pybind11::int_(e.os_errno())) : pybind11::none());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    }
  });
  // The category of a code by name (the Python layer's own errors); "format" for a name C++ lacks.
  m.def("error_category", [](const std::string& code) {
    const std::optional<ErrorCode> c = error_code_named(code);
    return std::string(error_category_name(c ? error_category(*c) : ErrorCategory::Format));
  });
  m.def("error_code_names", [] {
    std::vector<std::string> names;
    for (int c = 0; c <= static_cast<int>(ErrorCode::TokenOutOfRange); ++c)
      names.emplace_back(error_code_name(static_cast<ErrorCode>(c)));
    return names;
  });
}

}  // namespace wl::py
