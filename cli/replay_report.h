// Replaying cases on two backends with what `replay` prints, the HTML report it writes and the exit
// code it returns: shared by `replay` (case files) and `vectors --check` (a pack's vectors, whose
// stored outputs stand for the first backend).
#pragma once

#include <string>
#include <vector>

#include "cases/case.h"
#include "compare/compare_mode.h"
#include "compare/corpus_replay.h"

namespace nvfp4::cli {

struct ReplayRun {
  std::string command;        // the prefix of its lines: "replay", "vectors"
  std::string title;          // the summary page's
  std::string expected_name;  // the first backend's name, or "pack" for stored outputs
  cases::Backend& expected;
  cases::Backend& actual;
  compare::CompareMode mode;
  std::string report;  // the HTML report's directory, or "" for none (checked writable by the caller)
};

// Replays the sources, printing a PASS, FAIL or SKIP line each and a closing line; `errors` counts
// problems found before (bad paths). Returns 0 when every case agreed, 1 when some differed, 2 when
// some could not be read.
int replay_and_report(const ReplayRun& run, const std::vector<compare::ReplaySource>& sources, int errors);

}  // namespace nvfp4::cli
