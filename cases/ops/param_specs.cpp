#include "cases/ops/param_specs.h"

#include "reference/hadamard.h"
#include "reference/mma.h"
#include "reference/profiles.h"

namespace nvfp4::cases {

ParamSpec profile_param() {
  ParamSpec p{"profile", ParamType::kEnum, {}, std::string("te"), "numerics profile (docs/spec/profiles.md)"};
  for (const NamedProfile& n : all_profiles()) p.allowed.emplace_back(n.name);
  return p;
}

ParamSpec accumulation_param() {
  ParamSpec p{"accumulation",
              ParamType::kEnum,
              {"exact"},
              std::string("exact"),
              "exact: one rounding of the exact result (§3.20.3); mma-*: the modelled Blackwell MMA instruction chained along K "
              "from +0, then fma32(beta, C, RN(alpha*acc)) (§3.20.6)"};
  for (const MmaModel& m : mma_models()) p.allowed.emplace_back(m.name);
  p.omit_default = true;  // case files from before the parameter keep their bytes and hashes
  return p;
}

ParamSpec rht_accumulation_param() {
  ParamSpec p{"accumulation",
              ParamType::kEnum,
              {std::string(rht_sum_name(RhtSum::EXACT)), std::string(rht_sum_name(RhtSum::MMA_SM90))},
              std::string(rht_sum_name(RhtSum::EXACT)),
              "exact: the exact sum rounded to nearest binary32 (§3.19); mma-sm90: one BF16 tensor-core instruction's sum "
              "(25 fraction bits, toward zero), [knob RHT] MMA_SM90"};
  p.omit_default = true;  // case files from before the parameter keep their bytes and hashes
  return p;
}

ParamSpec enum_param(std::string_view name, std::initializer_list<std::string> allowed, std::string_view doc) {
  return ParamSpec{name, ParamType::kEnum, allowed, *allowed.begin(), doc};
}

ParamSpec int_param(std::string_view name, std::string_view doc) {
  return ParamSpec{name, ParamType::kInt, {}, std::int64_t(0), doc};
}

}  // namespace nvfp4::cases
