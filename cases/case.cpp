#include "cases/case.h"

#include "reference/error.h"
#include "reference/profiles.h"

namespace nvfp4 {

const io::Tensor& case_input(const Case& c, const char* name) {
  const auto it = c.inputs.find(name);
  if (it == c.inputs.end()) fail(c.op, ErrorCode::E_UNSUPPORTED, "the case has no input tensor '{}'", name);
  return it->second;
}

const Profile& case_profile(const Case& c) {
  if (c.knobs) return *c.knobs;
  if (!c.params.has("profile")) fail(c.op, ErrorCode::E_UNSUPPORTED, "the operation has no profile parameter");
  const std::string& name = c.params.text("profile");
  const NamedProfile* p = find_profile(name);
  if (!p) fail(c.op, ErrorCode::E_UNSUPPORTED, "unknown profile '{}' (known: {})", name, profile_names(", "));
  return p->knobs;
}

std::string case_profile_name(const Case& c) { return c.params.has("profile") ? c.params.text("profile") : ""; }

}  // namespace nvfp4
