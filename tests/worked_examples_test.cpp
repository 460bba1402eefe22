// Every worked example of NUMERICS.md §6 (reference/worked_examples.cpp) as its own test case.
#include <gtest/gtest.h>

#include <cctype>

#include "reference/worked_examples.h"

namespace nvfp4 {
namespace {

class WorkedExampleTest : public ::testing::TestWithParam<std::size_t> {};

TEST_P(WorkedExampleTest, MatchesSpecificationBits) {
  const WorkedExample& e = worked_examples()[GetParam()];
  EXPECT_EQ(e.compute(), e.expected) << "§" << e.section << ": " << e.name << std::hex << " expected 0x" << e.expected
                                     << " got 0x" << e.compute();
}

std::string case_name(const ::testing::TestParamInfo<std::size_t>& info) {
  const WorkedExample& e = worked_examples()[info.param];
  std::string name = e.section + "_" + e.name;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name + "_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(Numerics, WorkedExampleTest, ::testing::Range<std::size_t>(0, worked_examples().size()), case_name);

}  // namespace
}  // namespace nvfp4
