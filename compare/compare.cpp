#include "compare/compare.h"

#include <fmt/format.h>

#include "io/safetensors.h"
#include "reference/error.h"

namespace nvfp4 {
namespace {

struct Outcome {
  TensorMap outputs;
  std::optional<ErrorCode> code;  // set when the backend rejected the case with an nvfp4::Error
  std::string error;              // any rejection's message
};

Outcome run(const Case& c, Backend& b) {
  Outcome o;
  try {
    o.outputs = b.run(c);
  } catch (const Error& e) {
    o.code = e.code();
    o.error = e.what();
  } catch (const io::FormatError& e) {
    o.error = e.what();
  }
  return o;
}

}  // namespace

Comparison compare_backends(const Case& c, Backend& expected, Backend& actual) {
  const Outcome e = run(c, expected), a = run(c, actual);
  Comparison r;
  if (!e.error.empty() || !a.error.empty()) {
    r.agree = !e.error.empty() && !a.error.empty() && e.code == a.code;
    if (!r.agree)
      r.problem = fmt::format("{}: {}; {}: {}", expected.name(), e.error.empty() ? "ran" : e.error, actual.name(),
                              a.error.empty() ? "ran" : a.error);
    return r;
  }
  r.expected = std::move(e.outputs);
  r.actual = std::move(a.outputs);
  r.diffs = diff_outputs(r.expected, r.actual);
  r.agree = r.diffs.empty();
  if (!r.agree) {
    const std::string d = describe(r.diffs);
    r.problem = d.substr(0, d.find('\n'));
  }
  return r;
}

}  // namespace nvfp4
