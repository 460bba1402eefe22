// Replaying cases on two backends, one at a time: the loop of `nvfp4-verify replay`, of the gate's
// corpus and vector steps and of `vectors --check`. A case comes from a case file or from a vector
// pack (docs/vectors.md), whose stored expected outputs then stand for the first backend. Each
// case's outcome goes to the caller as it happens, so that each command prints, reports and counts
// it in its own words; an unreadable file is an outcome too, and the cases after it still replay.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cases/case_io.h"
#include "compare/compare.h"

namespace nvfp4::compare {

// One case to replay: where it comes from, and how to read it (throwing io::FormatError).
struct ReplayCase {
  cases::CaseRecord record;
  std::optional<cases::TensorMap> expected;  // a vector's stored outputs: the first backend is not run
};
struct ReplaySource {
  std::filesystem::path file;  // a case file, or a vector: "PACK/quantize-te.safetensors#v0042"
  std::function<ReplayCase()> load;
};
// A source's name for its report page: the case file's stem, or FILE-ID for a vector
// ("quantize-te-v0042").
std::string source_stem(const std::filesystem::path& file);

// The sources of case files.
std::vector<ReplaySource> case_file_sources(const std::vector<std::filesystem::path>& files);

struct ReplayedFile {
  enum class Kind {
    kUnreadable,  // the file is not a readable case file (io::FormatError): `problem` says why
    kNotGemm,     // ulp mode, and not a GEMM operation: not run
    kOutside,     // outside what a backend declares it implements: `problem` says why; not run
    kCompared,    // run on both backends: `comparison`
  };
  std::filesystem::path file;
  Kind kind = Kind::kUnreadable;
  std::string problem;
  cases::CaseRecord record;  // every kind but kUnreadable
  Comparison comparison;     // kCompared
  double seconds = 0;        // from opening the file to its outcome
};

// How many files ended each way, and in ulp mode the distances of every compared case (each
// element named by its case's file name).
struct ReplayTally {
  std::size_t unreadable = 0, not_gemm = 0, outside = 0, agreed = 0, differed = 0;
  UlpTotals ulp;
};

// Why a backend does not implement c (an external backend's declaration leaves it out), or "".
using OutsideBackends = std::function<std::string(const cases::Case& c)>;

// Replays `sources` in order on `expected` (named `expected_name`; not run for a source with
// stored outputs) and `actual` under `mode`, calling on_file with each outcome. A backend that
// throws anything but its contract's errors fails that case ("a backend crashed: ..."); one that
// cannot run at all (BackendUnavailable) stops the replay.
ReplayTally replay(const std::vector<ReplaySource>& sources, std::string_view expected_name, cases::Backend& expected,
                   cases::Backend& actual, const CompareMode& mode, const OutsideBackends& outside,
                   const std::function<void(const ReplayedFile&)>& on_file);

}  // namespace nvfp4::compare
