// Operation parameters: typed values under their registry names. An operation's descriptor
// (cases/operation.h) declares which parameters it has, their types, allowed values and
// defaults; a case holds exactly those, validated against the descriptor.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace nvfp4::cases {

enum class ParamType {
  kEnum,  // one of a fixed set of strings
  kBool,
  kInt,      // signed 64-bit
  kUInt,     // unsigned 64-bit (seeds, offsets)
  kIntList,  // list of signed 64-bit integers
  kF32Bits,  // null or an exact binary32 value, stored as its bits ("0x40C00000")
};
std::string_view param_type_name(ParamType t);

// An optional binary32 value kept by its bits (never a decimal: NaN payloads and -0.0 survive).
struct F32Bits {
  std::optional<std::uint32_t> bits;
  friend bool operator==(const F32Bits&, const F32Bits&) = default;
};

using ParamValue = std::variant<std::string, bool, std::int64_t, std::uint64_t, std::vector<std::int64_t>, F32Bits>;

// The parameter values of one case, by name.
class Params {
 public:
  void set(std::string_view name, ParamValue v) { values_[std::string(name)] = std::move(v); }
  bool has(std::string_view name) const { return values_.find(name) != values_.end(); }
  void erase(std::string_view name) { values_.erase(std::string(name)); }

  // Typed reads. Asking for a parameter the case lacks, or with the wrong type, is a programming
  // error of the caller (the registry validated the case): std::logic_error naming the parameter.
  const std::string& text(std::string_view name) const { return get<std::string>(name); }
  bool flag(std::string_view name) const { return get<bool>(name); }
  std::int64_t integer(std::string_view name) const { return get<std::int64_t>(name); }
  std::uint64_t unsigned_integer(std::string_view name) const { return get<std::uint64_t>(name); }
  const std::vector<std::int64_t>& integers(std::string_view name) const { return get<std::vector<std::int64_t>>(name); }
  std::optional<float> f32(std::string_view name) const;

  // The value of `name` as text for labels and reports ("2d", "true", "0x40C00000", "[1,2]").
  std::string display(std::string_view name) const;

  const std::map<std::string, ParamValue, std::less<>>& values() const { return values_; }
  friend bool operator==(const Params&, const Params&) = default;

 private:
  template <class T>
  const T& get(std::string_view name) const;
  std::map<std::string, ParamValue, std::less<>> values_;
};

// One parameter of an operation, as the registry declares it.
struct ParamSpec {
  std::string_view name;
  ParamType type = ParamType::kEnum;
  std::vector<std::string> allowed;  // kEnum: every allowed value, in a fixed order
  ParamValue default_value;
  std::string_view doc;
  // Written to case files only when it differs from its default: parameters added after case
  // files existed, so that those files (and their content hashes) stay as they were.
  bool omit_default = false;
};

}  // namespace nvfp4::cases
