// Self-contained HTML reports (inline CSS and SVG, no network): one page per failing case, and a
// summary page for a campaign or a replay.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cases/case.h"
#include "compare/explain.h"
#include "compare/ulp_report.h"

namespace nvfp4::reports {

struct FailureReport {
  std::string title;             // e.g. "quantize te 48x80 bf16: device != reference"
  std::string case_description;  // the case as pretty JSON (operation, parameters, input recipe)
  std::string replay_command;    // one line, e.g. "nvfp4-verify replay corpora/case-....safetensors"
  std::string backends;          // "reference vs device"
  cases::Case c;                 // inputs (for the element table's input values)
  std::vector<compare::TensorDiff> diffs;
  compare::Explanation explanation;
  std::vector<compare::UlpReport> ulp;  // GEMM outputs: each one's ULP distances to EXACT
};

// The page for one failure: case, replay command, heatmap of mismatching blocks (SVG), table of
// the first mismatches with input value (decimal and hex), expected and actual code, scale
// bytes, block amax and the reference's intermediates, the classification and the verdict; for
// GEMM outputs, the ULP heatmap, histogram and worst elements.
std::string render_failure(const FailureReport& r);

struct SummaryEntry {
  std::string name;       // case name or file
  std::string operation;  // "quantize"
  std::string profile;
  bool passed = true;
  std::string detail;       // one line
  std::string report_link;  // relative link to the failure page, empty when passed
  bool generated = false;   // a campaign's failure: counted in Summary::generated, listed as an entry
};

// The cases of one operation that a campaign generated: every one it ran, passed or failed.
struct GeneratedCases {
  std::size_t cases = 0, failed = 0;
};

struct Summary {
  std::string title;  // "nvfp4-verify gate" / "replay of corpora/"
  std::string backends;
  double seconds = 0;
  std::vector<SummaryEntry> entries;
  std::optional<compare::UlpTotals> ulp = std::nullopt;  // --compare ulp: the distances over every case
  // Lines under the title, label and value (check-checkpoint: source, quantized, format, profile).
  std::vector<std::pair<std::string, std::string>> facts = {};
  // A table of every entry with its verdict and detail, after the failures (check-checkpoint:
  // every tensor), instead of the list of passed entries' names.
  bool every_entry = false;
  // fuzz, gate and merge: the campaign's cases per operation. The totals count them and the
  // entries that are not `generated` (the gate's corpus cases), so that a campaign's page counts
  // every case it ran, not only the failures it lists.
  std::map<std::string, GeneratedCases> generated = {};
};

// The summary page: totals, a campaign's cases per operation, per operation/profile counts of the
// other entries, links to each failure page, and in ulp mode the ULP histogram and worst elements
// of the whole run; with `every_entry`, every entry's verdict and detail.
std::string render_summary(const Summary& s);

// Writes `html` to dir/name atomically (io/atomic_file.h); creates dir. Throws OutputError.
void write_page(const std::filesystem::path& dir, const std::string& name, const std::string& html);

}  // namespace nvfp4::reports
