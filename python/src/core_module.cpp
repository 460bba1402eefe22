// nvfp4_verify._core: the registry, the reference backend and comparison, generically. Nothing here
// names an operation; the Python package builds one function per registry operation from
// registry_json(). Errors: nvfp4::Error becomes nvfp4_verify.Nvfp4Error (with .code),
// io::FormatError a ValueError.
#include <exception>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "comparison.h"
#include "reference/error.h"
#include "reference/profiles.h"
#include "tensors.h"

namespace nvfp4::python {
namespace {

using nlohmann::json;

// The case `op` with the parameters of params_json (the others at their defaults) and the inputs,
// validated against the registry.
cases::Case make_python_case(const std::string& op, const std::string& params_json, const std::vector<TensorTuple>& inputs) {
  cases::Case c = cases::make_case(op);
  const cases::OperationSpec& spec = cases::operation(op);
  const json params = json::parse(params_json);
  for (const auto& [name, value] : params.items()) {
    const cases::ParamSpec* p = spec.param(name);
    // An unknown name is kept (with any value) so that validate_case rejects it with the registry's
    // message, which lists the operation's parameters.
    c.params.set(name, p ? cases::param_from_json(spec, *p, value) : cases::ParamValue{});
  }
  c.inputs = tensors_from_python(inputs);
  cases::validate_case(c);
  return c;
}

std::string profiles_json() {
  json a = json::array();
  for (const NamedProfile& p : all_profiles()) {
    json knobs = json::object();
    for (const auto& [knob, value] : knob_values(p.knobs)) knobs[std::string(knob)] = value;
    a.push_back({{"name", p.name}, {"reproduces", p.reproduces}, {"unverified", p.unverified}, {"knobs", std::move(knobs)}});
  }
  return a.dump();
}

nb::list run(const std::string& op, const std::string& params_json, const std::vector<TensorTuple>& inputs) {
  const cases::Case c = make_python_case(op, params_json, inputs);
  cases::TensorMap outputs;
  {
    nb::gil_scoped_release unlocked;
    outputs = cases::ReferenceBackend().run(c);
  }
  return tensors_to_python(std::move(outputs));
}

std::string compare(const std::string& op, const std::string& params_json, const std::vector<TensorTuple>& inputs,
                    const std::vector<TensorTuple>& outputs, const std::string& report_dir, const std::string& report_stem) {
  const cases::Case c = make_python_case(op, params_json, inputs);
  cases::TensorMap actual = tensors_from_python(outputs);
  nb::gil_scoped_release unlocked;
  return compare_with_reference(c, std::move(actual), report_dir, report_stem).dump();
}

void translate_errors(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    // The class lives in Python (nvfp4_verify.errors) so that the worker can raise it without this module.
    const nb::object cls = nb::module_::import_("nvfp4_verify.errors").attr("Nvfp4Error");
    const nb::object error = cls(e.what(), std::string(error_code_name(e.code())));
    PyErr_SetObject(cls.ptr(), error.ptr());
  } catch (const io::FormatError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  }
}

}  // namespace
}  // namespace nvfp4::python

NB_MODULE(_core, m) {
  using namespace nvfp4::python;
  m.doc() = "nvfp4-verify's registry, reference backend and comparison (use the nvfp4_verify package)";
  nb::register_exception_translator(translate_errors);
  m.attr("__version__") = NVFP4_VERSION;
  m.def(
      "registry_json", [] { return nvfp4::cases::registry_json(NVFP4_VERSION).dump(); },
      "The registry: nvfp4-verify ops --json.");
  m.def("profiles_json", &profiles_json, "The numerics profiles: name, what each reproduces, knob values.");
  m.def("run", &run, nb::arg("op"), nb::arg("params_json"), nb::arg("inputs"),
        "Runs the reference backend: inputs and outputs are (name, dtype, shape, uint8 bytes) tuples.");
  m.def("compare", &compare, nb::arg("op"), nb::arg("params_json"), nb::arg("inputs"), nb::arg("outputs"), nb::arg("report_dir"),
        nb::arg("report_stem"),
        "Compares outputs with the reference's bit for bit; returns JSON, writes the report page when report_dir is set.");
}
