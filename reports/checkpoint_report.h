// What check-checkpoint reports (docs/guides/checkpoints.md#commands). --report DIR: index.html listing
// every checked tensor with its verdict, and for each mismatching tensor a failure page
// (reports/report.h) with its mismatching blocks classified and explained (compare/explain.h) on
// the tensor's quantize case (checkpoint/tensor_case.h). --junit FILE: one testcase per module.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/format.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/verify.h"
#include "compare/explain.h"
#include "reports/junit.h"

namespace nvfp4::reports {

// The explanation of each mismatching 2-D module of c (compare/explain.h, on its quantize case),
// by module: computed once for the console lines, the JUnit file and the report. 3-D expert
// tensors have none.
using CheckpointExplanations = std::map<std::string, compare::Explanation>;
CheckpointExplanations explain_checkpoint(const checkpoint::HfCheckpoint& source, const checkpoint::HfCheckpoint& quantized,
                                          const checkpoint::CheckpointFormat& f, const checkpoint::CheckpointCheck& c);

struct CheckpointReportInfo {
  std::string source, quantized, format;
  std::string repeat_command;  // the check-checkpoint command line, for each page's replay line
  // --identify: every profile's check (c is the best of them); empty otherwise.
  std::vector<checkpoint::CheckpointCheck> identify = {};
  CheckpointExplanations explanations = {};  // explain_checkpoint's
};

// Writes the report of `c` into a temporary directory beside `dir` and renames it to `dir`,
// replacing a previous report there (io/atomic_directory.h); returns the path of its index.html.
// Throws OutputError when it cannot be written.
std::filesystem::path write_checkpoint_report(const std::filesystem::path& dir, const checkpoint::HfCheckpoint& source,
                                              const checkpoint::HfCheckpoint& quantized, const checkpoint::CheckpointFormat& f,
                                              const checkpoint::CheckpointCheck& c, const CheckpointReportInfo& info);

// The JUnit suite of `c`: a testcase per module, failing with the module's verdict line and its
// explanation's verdict.
JunitSuite checkpoint_junit_suite(const checkpoint::CheckpointCheck& c, const CheckpointExplanations& explanations);

}  // namespace nvfp4::reports
