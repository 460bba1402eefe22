#include "compare/corpus_replay.h"

#include <chrono>

#include <fmt/format.h>

#include "cases/corpus.h"

namespace nvfp4::compare {
namespace {

// compare_backends lets exceptions other than the contract's errors (nvfp4::Error,
// io::FormatError) through: such a crash is a failure of the case, not of the replay.
Comparison compare_or_crash(const ReplayCase& rc, std::string_view expected_name, cases::Backend& a, cases::Backend& b,
                            const CompareMode& mode) {
  try {
    if (!rc.expected) return compare_backends(rc.record.c, a, b, mode);
    cases::Outcome stored;
    stored.outputs = *rc.expected;
    return compare_outcomes(expected_name, std::move(stored), b.name(), cases::run_outcome(b, rc.record.c),
                            compare_mode_for(mode, rc.record.c.op));
  } catch (const cases::BackendUnavailable&) {
    throw;
  } catch (const std::exception& e) {
    Comparison r;
    r.problem = fmt::format("a backend crashed: {}", e.what());
    return r;
  }
}

}  // namespace

std::string source_stem(const std::filesystem::path& file) {
  std::string name = file.filename().string();
  if (const std::size_t hash = name.find(".safetensors#"); hash != std::string::npos)
    return name.substr(0, hash) + "-" + name.substr(hash + 13);
  return file.stem().string();
}

std::vector<ReplaySource> case_file_sources(const std::vector<std::filesystem::path>& files) {
  std::vector<ReplaySource> out;
  for (const std::filesystem::path& file : files)
    out.push_back({file, [file] { return ReplayCase{cases::load_case(file), std::nullopt}; }});
  return out;
}

ReplayTally replay(const std::vector<ReplaySource>& sources, std::string_view expected_name, cases::Backend& expected,
                   cases::Backend& actual, const CompareMode& mode, const OutsideBackends& outside,
                   const std::function<void(const ReplayedFile&)>& on_file) {
  ReplayTally tally;
  tally.ulp.bound = mode.max_ulp;
  for (const ReplaySource& source : sources) {
    const std::filesystem::path& file = source.file;
    const auto start = std::chrono::steady_clock::now();
    ReplayedFile r;
    r.file = file;
    ReplayCase rc;
    const auto done = [&](ReplayedFile::Kind kind, std::size_t& count) {
      r.kind = kind;
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++count;
      on_file(r);
    };
    try {
      rc = source.load();
      r.record = rc.record;
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
    r.comparison = compare_or_crash(rc, expected_name, expected, actual, mode);
    for (const UlpReport& u : r.comparison.ulp) tally.ulp.add(u, file.filename().string());
    done(ReplayedFile::Kind::kCompared, r.comparison.agree ? tally.agreed : tally.differed);
  }
  return tally;
}

}  // namespace nvfp4::compare
