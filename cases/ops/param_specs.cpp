#include "cases/ops/param_specs.h"

#include "reference/profiles.h"

namespace nvfp4::cases {

ParamSpec profile_param() {
  ParamSpec p{"profile", ParamType::kEnum, {}, std::string("te"), "numerics profile (docs/spec/profiles.md)"};
  for (const NamedProfile& n : all_profiles()) p.allowed.emplace_back(n.name);
  return p;
}

ParamSpec enum_param(std::string_view name, std::initializer_list<std::string> allowed, std::string_view doc) {
  return ParamSpec{name, ParamType::kEnum, allowed, *allowed.begin(), doc};
}

ParamSpec int_param(std::string_view name, std::string_view doc) {
  return ParamSpec{name, ParamType::kInt, {}, std::int64_t(0), doc};
}

}  // namespace nvfp4::cases
