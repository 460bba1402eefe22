// The worked examples of NUMERICS.md §6 as data: each names its section, computes one value with
// the reference and states the bits the specification gives. The unit tests and the CLI's
// self-check both run this one list.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nvfp4 {

struct WorkedExample {
  std::string section;  // "6.7 Example A"
  std::string name;     // what is computed, e.g. "te y"
  std::uint32_t expected;
  std::function<std::uint32_t()> compute;  // bits of the computed value (float bits, byte, code)
};

const std::vector<WorkedExample>& worked_examples();

}  // namespace nvfp4
