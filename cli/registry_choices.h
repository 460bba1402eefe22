// The choices of a CLI option that sets a registry parameter, taken from the registry's allowed
// values (cases/ops/), so that a value added there reaches the command line. The CLI spells dtype
// values in lower case (--out-dtype bf16); registry_value maps such a choice back.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nvfp4::cli {

enum class Spelling { kAsDeclared, kLowerCase };

// The allowed values of enum parameter `param` of operation `op`; std::logic_error when the
// registry has no such enum parameter (a programming error of the command).
std::vector<std::string> registry_choices(std::string_view op, std::string_view param, Spelling spelling = Spelling::kAsDeclared);

// The registry's spelling of a choice registry_choices gave in either spelling ("bf16" -> "BF16").
std::string registry_value(std::string_view op, std::string_view param, std::string_view choice);

}  // namespace nvfp4::cli
