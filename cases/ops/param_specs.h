// Parameter declarations shared by several operation families.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "cases/params.h"

namespace nvfp4::cases {

// The numerics profile (every named profile allowed; default "te").
ParamSpec profile_param();

// The GEMM's accumulation along K: "exact" (default, omitted from case files) or an MMA model's name.
ParamSpec accumulation_param();
// The Hadamard transform's sum rule: "exact" (default, omitted from case files) or "mma-sm90".
ParamSpec rht_accumulation_param();

ParamSpec enum_param(std::string_view name, std::initializer_list<std::string> allowed, std::string_view doc);  // default: first
ParamSpec int_param(std::string_view name, std::string_view doc);                                               // default 0

}  // namespace nvfp4::cases
