#include "compare/corpus_replay.h"

#include <chrono>

#include <fmt/format.h>

#include "cases/corpus.h"

namespace nvfp4::compare {
namespace {

// compare_backends lets exceptions other than the contract's errors (nvfp4::Error,
// io::FormatError) through: such a crash is a failure of the case, not of the replay.
Comparison compare_or_crash(const cases::Case& c, cases::Backend& a, cases::Backend& b, const CompareMode& mode) {
  try {
    return compare_backends(c, a, b, mode);
  } catch (const cases::BackendUnavailable&) {
    throw;
  } catch (const std::exception& e) {
    Comparison r;
    r.problem = fmt::format("a backend crashed: {}", e.what());
    return r;
  }
}

}  // namespace

ReplayTally replay_files(const std::vector<std::filesystem::path>& files, cases::Backend& expected, cases::Backend& actual,
                         const CompareMode& mode, const OutsideBackends& outside,
                         const std::function<void(const ReplayedFile&)>& on_file) {
  ReplayTally tally;
  tally.ulp.bound = mode.max_ulp;
  for (const std::filesystem::path& file : files) {
    const auto start = std::chrono::steady_clock::now();
    ReplayedFile r;
    r.file = file;
    const auto done = [&](ReplayedFile::Kind kind, std::size_t& count) {
      r.kind = kind;
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++count;
      on_file(r);
    };
    try {
      r.record = cases::load_case(file);
    } catch (const io::FormatError& e) {
      r.problem = e.what();
      done(ReplayedFile::Kind::kUnreadable, tally.unreadable);
      continue;
    }
    if (mode.ulp && !is_gemm_operation(r.record.c.op)) {
      done(ReplayedFile::Kind::kNotGemm, tally.not_gemm);
      continue;
    }
    if (r.problem = outside(r.record.c); !r.problem.empty()) {
      done(ReplayedFile::Kind::kOutside, tally.outside);
      continue;
    }
    r.comparison = compare_or_crash(r.record.c, expected, actual, mode);
    for (const UlpReport& u : r.comparison.ulp) tally.ulp.add(u, file.filename().string());
    done(ReplayedFile::Kind::kCompared, r.comparison.agree ? tally.agreed : tally.differed);
  }
  return tally;
}

}  // namespace nvfp4::compare
