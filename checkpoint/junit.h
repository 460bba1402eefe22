// A checkpoint check as JUnit XML, for CI dashboards: one testcase per quantized module.
#pragma once

#include <string>

#include "checkpoint/verify.h"

namespace nvfp4::checkpoint {

std::string junit_xml(const CheckpointCheck& c);

}  // namespace nvfp4::checkpoint
