// `nvfp4-verify replay` and `seed-corpus`, run as a user runs them, and the library-level
// comparison that replay rests on, against deliberately broken backends (a backend cannot be
// broken from the command line).
#include <gtest/gtest.h>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cases/corpus.h"
#include "cases/reference_backend.h"
#include "cases/seeds/seed_corpus.h"
#include "compare/compare.h"
#include "reference/error.h"
#include "reports/failure_page.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;

const fs::path kSeedDir = fs::path(NVFP4_SOURCE_DIR) / "corpora" / "seed";

using RunResult = test_support::CliRun;
std::string slurp(const fs::path& p) { return test_support::slurp_text(p); }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::size_t count_prefix(const std::string& text, const std::string& prefix) {
  std::size_t n = 0;
  for (const std::string& l : lines(text)) n += l.rfind(prefix, 0) == 0;
  return n;
}

std::size_t case_files_in(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.path().extension() == ".safetensors";
  return n;
}

class ReplayTest : public test_support::TempDirTest {
 protected:
  RunResult run(const std::string& args) { return test_support::run_cli(args, dir_); }

  // A few seed cases saved into dir_/name.
  fs::path small_corpus(const std::string& name, std::size_t n) {
    const std::vector<cases::CaseRecord> seed = cases::seed_corpus();
    for (std::size_t i = 0; i < n; ++i) cases::save_case(dir_ / name, seed[i * seed.size() / n]);
    return dir_ / name;
  }
};

TEST_F(ReplayTest, CommittedSeedCorpusPassesOnReferenceAndMetamorphic) {
  ASSERT_TRUE(fs::is_directory(kSeedDir)) << kSeedDir;
  const std::size_t n = case_files_in(kSeedDir);
  ASSERT_GE(n, 60u);
  const RunResult r = run("replay " + kSeedDir.string() + " --backends reference,metamorphic");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> out = lines(r.out);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.front(), "replay: reference vs metamorphic");
  EXPECT_EQ(out.back(), "replay: " + std::to_string(n) + " passed, 0 failed");
  EXPECT_EQ(count_prefix(r.out, "PASS  "), n);
  EXPECT_EQ(count_prefix(r.out, "FAIL  "), 0u) << r.out;
  // The odd-M transpose is rejected by both backends with the same error code: agreement.
  EXPECT_NE(r.out.find("(both reject: transpose_packed: E_EVEN"), std::string::npos) << r.out;
}

TEST_F(ReplayTest, DefaultBackendsAreNamedOnTheFirstLineWithTheReasonWhenThereIsNoGpu) {
  const fs::path corpus = small_corpus("c", 2);
  const RunResult r = run("replay " + corpus.string());
  const std::vector<std::string> out = lines(r.out);
  ASSERT_FALSE(out.empty()) << r.err;
  if (out.front().find("metamorphic") != std::string::npos) {
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(out.front().rfind("replay: reference vs metamorphic (no device backend: ", 0), 0u) << out.front();
  } else {
    EXPECT_EQ(out.front(), "replay: reference vs device");
  }
}

TEST_F(ReplayTest, ACorruptFileIsReportedAndTheOtherCasesStillReplay) {
  const fs::path corpus = small_corpus("c", 3);
  const std::string bytes = slurp(fs::directory_iterator(corpus)->path());
  { std::ofstream(corpus / "truncated.safetensors", std::ios::binary) << bytes.substr(0, bytes.size() / 3); }
  const RunResult r = run("replay " + corpus.string() + " --backends reference,metamorphic");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(count_prefix(r.out, "PASS  "), 3u) << r.out;
  EXPECT_EQ(lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find((corpus / "truncated.safetensors").string()), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.out).back(), "replay: 3 passed, 0 failed, 1 unreadable or missing");
}

TEST_F(ReplayTest, AMissingPathExitsTwoAndTheOtherPathsStillReplay) {
  const fs::path corpus = small_corpus("c", 2);
  const RunResult r = run("replay " + (dir_ / "nowhere").string() + " " + corpus.string() + " --backends reference,metamorphic");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find((dir_ / "nowhere").string()), std::string::npos) << r.err;
  EXPECT_EQ(count_prefix(r.out, "PASS  "), 2u) << r.out;
}

TEST_F(ReplayTest, AFileWithoutACaseDescriptionExitsTwo) {
  io::File plain;
  plain.tensors["x"] = io::make_tensor(io::DType::U8, {1}, std::vector<std::uint8_t>{0});
  io::write_file_atomic(dir_ / "plain.safetensors", plain);
  const RunResult r = run("replay " + (dir_ / "plain.safetensors").string() + " --backends reference,metamorphic");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("plain.safetensors"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nvfp4_case"), std::string::npos) << r.err;
}

TEST_F(ReplayTest, AnUnknownBackendExitsTwo) {
  const fs::path corpus = small_corpus("c", 1);
  const RunResult r = run("replay " + corpus.string() + " --backends reference,frobnicator");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(lines(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find("frobnicator"), std::string::npos) << r.err;
  EXPECT_EQ(count_prefix(r.out, "PASS  "), 0u);
  EXPECT_EQ(run("replay " + corpus.string() + " --backends reference").exit_code, 2);
}

TEST_F(ReplayTest, MaxCasesReplaysTheFirstCasesOnly) {
  const fs::path corpus = small_corpus("c", 5);
  const RunResult r = run("replay " + corpus.string() + " --backends reference,metamorphic --max-cases 2");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(count_prefix(r.out, "PASS  "), 2u) << r.out;
  EXPECT_EQ(lines(r.out).back(), "replay: 2 passed, 0 failed");
}

TEST_F(ReplayTest, ReportWritesASummaryPage) {
  const fs::path corpus = small_corpus("c", 3);
  const RunResult r =
      run("replay " + corpus.string() + " --backends reference,metamorphic --report " + (dir_ / "report").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find((dir_ / "report" / "index.html").string()), std::string::npos) << r.out;
  const std::string html = slurp(dir_ / "report" / "index.html");
  EXPECT_NE(html.find("<html"), std::string::npos);
}

TEST_F(ReplayTest, SeedCorpusCommandIsIdempotentAndNeverDeletes) {
  const RunResult first = run("seed-corpus --output " + (dir_ / "seed").string());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::size_t n = cases::seed_corpus().size();
  EXPECT_EQ(case_files_in(dir_ / "seed"), n);
  EXPECT_NE(first.out.find(std::to_string(n) + " written, 0 already present"), std::string::npos) << first.out;
  std::ofstream(dir_ / "seed" / "keep.txt") << "x";
  const RunResult second = run("seed-corpus --output " + (dir_ / "seed").string());
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("0 written, " + std::to_string(n) + " already present"), std::string::npos) << second.out;
  EXPECT_TRUE(fs::exists(dir_ / "seed" / "keep.txt"));
  EXPECT_EQ(case_files_in(dir_ / "seed"), n);
}

// ---- library level: the comparison replay rests on, against broken backends ----------------

// The reference with one output bit flipped: a wrong kernel.
class FlippingBackend : public cases::Backend {
 public:
  explicit FlippingBackend(std::string tensor) : tensor_(std::move(tensor)) {}
  std::string_view name() const override { return "flipping"; }
  cases::TensorMap run(const cases::Case& c) override {
    cases::TensorMap out = cases::ReferenceBackend().run(c);
    out.at(tensor_).bytes.at(0) ^= 0x01;
    return out;
  }

 private:
  std::string tensor_;
};

// Rejects every case with one error code.
class RejectingBackend : public cases::Backend {
 public:
  explicit RejectingBackend(ErrorCode code) : code_(code) {}
  std::string_view name() const override { return "rejecting"; }
  cases::TensorMap run(const cases::Case& c) override { fail(c.op, code_, "rejected by the test backend"); }

 private:
  ErrorCode code_;
};

cases::CaseRecord committed_case(std::string_view op) {
  for (const fs::path& p : cases::collect_case_files({kSeedDir})) {
    cases::CaseRecord r = cases::load_case(p);
    if (r.c.op == op) return r;
  }
  throw std::runtime_error("no committed seed case for this operation");
}

TEST_F(ReplayTest, LibraryComparisonCatchesABrokenBackendOnACommittedCase) {
  const cases::CaseRecord r = committed_case("quantize");
  cases::ReferenceBackend ref;
  FlippingBackend broken(r.c.params.text("direction") == "columnwise" ? "data_t" : "data");
  const compare::Comparison cmp = compare::compare_backends(r.c, ref, broken);
  EXPECT_FALSE(cmp.agree);
  ASSERT_EQ(cmp.diffs.size(), 1u);
  EXPECT_EQ(cmp.diffs[0].mismatches, 1u);
  EXPECT_EQ(cmp.diffs[0].first_index, 0u);
  EXPECT_FALSE(cmp.problem.empty());
  // The failure page replay --report writes for it.
  const std::string page = reports::write_failure_page(dir_ / "report", "broken", r, cmp, compare::explain_comparison(r.c, cmp),
                                                       "reference vs flipping", "case.safetensors");
  EXPECT_TRUE(fs::is_regular_file(dir_ / "report" / page));
}

TEST_F(ReplayTest, LibraryComparisonRejectionRules) {
  const cases::CaseRecord ok = committed_case("swizzle");
  cases::ReferenceBackend ref;
  RejectingBackend reject_shape(ErrorCode::E_SCALE_SHAPE), reject_even(ErrorCode::E_EVEN);
  // One backend rejecting a case the other runs: a failure.
  EXPECT_FALSE(compare::compare_backends(ok.c, ref, reject_shape).agree);
  EXPECT_FALSE(compare::compare_backends(ok.c, reject_shape, ref).agree);
  // Both rejecting with different codes: a failure; with the same code: agreement.
  EXPECT_FALSE(compare::compare_backends(ok.c, reject_shape, reject_even).agree);
  EXPECT_TRUE(compare::compare_backends(ok.c, reject_even, reject_even).agree);
  // The committed odd-M transpose: the reference rejects it with E_EVEN.
  for (const fs::path& p : cases::collect_case_files({kSeedDir})) {
    const cases::CaseRecord r = cases::load_case(p);
    if (r.c.op != "transpose_packed" || r.c.inputs.at("data").shape[0] % 2 == 0) continue;
    EXPECT_TRUE(compare::compare_backends(r.c, ref, reject_even).agree);
    EXPECT_FALSE(compare::compare_backends(r.c, ref, reject_shape).agree);
  }
}

}  // namespace
}  // namespace nvfp4
