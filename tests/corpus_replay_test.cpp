// The one loop that replays case files on two backends (compare/corpus_replay.h): each file's
// outcome in order, the tally, and a crash or an unavailable backend.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cases/metamorphic_backend.h"
#include "cases/reference_backend.h"
#include "compare/corpus_replay.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using Kind = compare::ReplayedFile::Kind;

// A backend whose every run throws `E` with "boom".
template <class E>
class ThrowingBackend : public cases::Backend {
 public:
  std::string_view name() const override { return "throwing"; }
  cases::TensorMap run(const cases::Case&) override { throw E("boom"); }
};

class CorpusReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nvfp4_corpus_replay_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // In path order: a file that is no case file, a GEMM case, a transpose_packed case.
    std::ofstream(dir_ / "a-junk.safetensors") << "junk";
    fs::copy_file(seed("case-07242ba72e712686.safetensors"), dir_ / "b-gemm.safetensors");
    fs::copy_file(seed("case-bd95ddf9a902c1fa.safetensors"), dir_ / "c-transpose.safetensors");
    files_ = {dir_ / "a-junk.safetensors", dir_ / "b-gemm.safetensors", dir_ / "c-transpose.safetensors"};
  }
  void TearDown() override { fs::remove_all(dir_); }
  static fs::path seed(const std::string& name) { return fs::path(NVFP4_SOURCE_DIR) / "corpora" / "seed" / name; }

  // Every outcome, in the order the loop reported them.
  compare::ReplayTally replay(cases::Backend& a, cases::Backend& b, const compare::CompareMode& mode,
                              const compare::OutsideBackends& outside) {
    return compare::replay(compare::case_file_sources(files_), a.name(), a, b, mode, outside,
                           [&](const compare::ReplayedFile& f) { seen_.push_back(f); });
  }

  fs::path dir_;
  std::vector<fs::path> files_;
  std::vector<compare::ReplayedFile> seen_;
};

TEST_F(CorpusReplayTest, EachFileEndsOneWayInOrderAndIsCounted) {
  cases::ReferenceBackend a;
  cases::MetamorphicBackend b;
  const auto outside = [](const cases::Case& c) { return c.op == "transpose_packed" ? std::string("declared out") : ""; };
  const compare::ReplayTally t = replay(a, b, {}, outside);
  ASSERT_EQ(seen_.size(), 3u);
  EXPECT_EQ(seen_[0].file, files_[0]);
  EXPECT_EQ(seen_[0].kind, Kind::kUnreadable);
  EXPECT_NE(seen_[0].problem.find("a-junk.safetensors"), std::string::npos) << seen_[0].problem;
  EXPECT_EQ(seen_[1].kind, Kind::kCompared);
  EXPECT_EQ(seen_[1].record.c.op, "gemm");
  EXPECT_TRUE(seen_[1].comparison.agree) << seen_[1].comparison.problem;
  EXPECT_FALSE(seen_[1].comparison.expected.empty());
  EXPECT_EQ(seen_[2].kind, Kind::kOutside);
  EXPECT_EQ(seen_[2].problem, "declared out");
  EXPECT_EQ(seen_[2].record.c.op, "transpose_packed");
  for (const compare::ReplayedFile& f : seen_) EXPECT_GE(f.seconds, 0.0);
  EXPECT_EQ(t.unreadable, 1u);
  EXPECT_EQ(t.agreed, 1u);
  EXPECT_EQ(t.outside, 1u);
  EXPECT_EQ(t.differed + t.not_gemm, 0u);
  EXPECT_EQ(t.ulp.tensors, 0u);  // bitwise: no ULP reports
}

TEST_F(CorpusReplayTest, UlpModeSkipsWhatIsNotGemmBeforeAskingTheBackendsAndAddsUpTheDistances) {
  cases::ReferenceBackend a, b;
  std::vector<std::string> asked;
  const auto outside = [&](const cases::Case& c) {
    asked.push_back(c.op);
    return std::string();
  };
  const compare::ReplayTally t = replay(a, b, {true, 3}, outside);
  ASSERT_EQ(seen_.size(), 3u);
  EXPECT_EQ(seen_[1].kind, Kind::kCompared);
  EXPECT_EQ(seen_[2].kind, Kind::kNotGemm);
  EXPECT_EQ(asked, std::vector<std::string>{"gemm"});
  EXPECT_EQ(t.not_gemm, 1u);
  EXPECT_EQ(t.agreed, 1u);
  EXPECT_EQ(t.ulp.bound, std::optional<std::uint64_t>(3));
  ASSERT_FALSE(seen_[1].comparison.ulp.empty());
  EXPECT_EQ(t.ulp.tensors, seen_[1].comparison.ulp.size());
  EXPECT_EQ(t.ulp.max, 0u);
}

TEST_F(CorpusReplayTest, ABackendThatCrashesFailsItsCaseAndOneThatCannotRunStopsTheReplay) {
  cases::ReferenceBackend a;
  ThrowingBackend<std::runtime_error> crashing;
  const auto none = [](const cases::Case&) { return std::string(); };
  const compare::ReplayTally t = replay(a, crashing, {}, none);
  ASSERT_EQ(seen_.size(), 3u);
  EXPECT_EQ(seen_[1].kind, Kind::kCompared);
  EXPECT_FALSE(seen_[1].comparison.agree);
  EXPECT_EQ(seen_[1].comparison.problem, "a backend crashed: boom");
  EXPECT_EQ(t.differed, 2u);

  seen_.clear();
  ThrowingBackend<cases::BackendUnavailable> unavailable;
  EXPECT_THROW(replay(a, unavailable, {}, none), cases::BackendUnavailable);
  EXPECT_EQ(seen_.size(), 1u);  // the unreadable file; the first case stopped it
}

}  // namespace
}  // namespace nvfp4
