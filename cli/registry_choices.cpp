#include "cli/registry_choices.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <fmt/format.h>

#include "cases/registry.h"

namespace nvfp4::cli {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

const std::vector<std::string>& allowed(std::string_view op, std::string_view param) {
  const cases::OperationSpec* spec = cases::find_operation(op);
  const cases::ParamSpec* p = spec ? spec->param(param) : nullptr;
  if (!p || p->type != cases::ParamType::kEnum)
    throw std::logic_error(fmt::format("registry_choices: operation '{}' has no enum parameter '{}'", op, param));
  return p->allowed;
}

}  // namespace

std::vector<std::string> registry_choices(std::string_view op, std::string_view param, Spelling spelling) {
  std::vector<std::string> choices = allowed(op, param);
  if (spelling == Spelling::kLowerCase)
    for (std::string& c : choices) c = lower(c);
  return choices;
}

std::string registry_value(std::string_view op, std::string_view param, std::string_view choice) {
  for (const std::string& v : allowed(op, param))
    if (lower(v) == lower(std::string(choice))) return v;
  throw std::logic_error(fmt::format("registry_value: '{}' is not a value of {}.{}", choice, op, param));
}

}  // namespace nvfp4::cli
