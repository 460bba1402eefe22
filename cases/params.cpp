#include "cases/params.h"

#include <bit>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace nvfp4::cases {

std::string_view param_type_name(ParamType t) {
  switch (t) {
    case ParamType::kEnum:
      return "enum";
    case ParamType::kBool:
      return "bool";
    case ParamType::kInt:
      return "int";
    case ParamType::kUInt:
      return "uint";
    case ParamType::kIntList:
      return "int_list";
    case ParamType::kF32Bits:
      return "f32_bits";
  }
  return "unknown";
}

template <class T>
const T& Params::get(std::string_view name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error(fmt::format("the case has no parameter '{}'", name));
  const T* v = std::get_if<T>(&it->second);
  if (!v) throw std::logic_error(fmt::format("parameter '{}' is read with the wrong type", name));
  return *v;
}

template const std::string& Params::get<std::string>(std::string_view) const;
template const bool& Params::get<bool>(std::string_view) const;
template const std::int64_t& Params::get<std::int64_t>(std::string_view) const;
template const std::uint64_t& Params::get<std::uint64_t>(std::string_view) const;
template const std::vector<std::int64_t>& Params::get<std::vector<std::int64_t>>(std::string_view) const;

std::optional<float> Params::f32(std::string_view name) const {
  const F32Bits& b = get<F32Bits>(name);
  if (!b.bits) return std::nullopt;
  return std::bit_cast<float>(*b.bits);
}

std::string Params::display(std::string_view name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return "";
  struct Show {
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(std::uint64_t u) const { return std::to_string(u); }
    std::string operator()(const std::vector<std::int64_t>& v) const { return fmt::format("[{}]", fmt::join(v, ",")); }
    std::string operator()(const F32Bits& b) const { return b.bits ? fmt::format("0x{:08X}", *b.bits) : "none"; }
  };
  return std::visit(Show{}, it->second);
}

}  // namespace nvfp4::cases
