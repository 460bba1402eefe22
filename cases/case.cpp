#include "cases/case.h"

#include <chrono>

#include "reference/error.h"
#include "reference/profiles.h"

namespace nvfp4::cases {

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

std::string_view fault_kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::kCrash:
      return "crash";
    case FaultKind::kTimeout:
      return "timeout";
    case FaultKind::kProtocol:
      return "protocol";
  }
  return "?";
}

Outcome run_outcome(Backend& b, const Case& c) {
  Outcome o;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    o.outputs = b.run(c);
  } catch (const Error& e) {
    o.rejected = true;
    o.code = e.code();
    o.message = e.what();
  } catch (const io::FormatError& e) {
    o.rejected = true;
    o.message = e.what();
  } catch (const UncodedRejection& e) {
    o.rejected = true;
    o.any_code = true;
    o.message = e.what();
  } catch (const BackendFault& e) {
    o.fault = e.kind();
    o.message = e.what();
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

std::vector<Outcome> Backend::run_many(std::span<const Case> cases) {
  std::vector<Outcome> out;
  out.reserve(cases.size());
  for (const Case& c : cases) out.push_back(run_outcome(*this, c));
  return out;
}

}  // namespace nvfp4::cases
