// Test entry point: RapidCheck's listener makes RC_ASSERT failures inside RC_GTEST_PROP shrink
// and report as one GoogleTest failure each (docs/design/toolchain.md).
#include <gmock/gmock.h>
#include <rapidcheck/gmock.h>
#include <rapidcheck/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleMock(&argc, argv);
  rc::gmock::RapidCheckListener::install();
  return RUN_ALL_TESTS();
}
