// io/output_path.h, io/atomic_file.h, io/atomic_directory.h: output paths checked before work (for
// root too), files and directories that appear whole or not at all, and the temporaries of an
// interrupted writer removed once its process is gone.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/atomic_directory.h"
#include "io/atomic_file.h"
#include "io/output_path.h"
#include "reference/exception.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

namespace nvfp4::io {
namespace {

namespace fs = std::filesystem;

// Every entry of `dir`, hidden ones included, sorted.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The pid of a process that has exited (and been reaped): no process runs under it now.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

// The message of the OutputError `f` throws ("" if it throws none).
template <class F>
std::string output_error(F&& f) {
  try {
    f();
  } catch (const OutputError& e) {
    return e.what();
  }
  return "";
}

class AtomicOutputTest : public test_support::TempDirTest {
 protected:
  void SetUp() override { std::ofstream(dir_ / "file") << "x"; }
};

TEST_F(AtomicOutputTest, AnOutputFileUnderARegularFileOrInProcIsRefusedBeforeWork) {
  EXPECT_EQ(output_error([&] { prepare_output_file(dir_ / "file" / "out.safetensors", "--output"); }),
            "--output " + (dir_ / "file" / "out.safetensors").string() + ": cannot write it: " + (dir_ / "file").string() +
                " is not a directory");
  EXPECT_NE(output_error([&] { prepare_output_file(dir_ / "missing" / "out", "--junit"); }).find("no directory"),
            std::string::npos);
  EXPECT_NE(output_error([&] { prepare_output_file(dir_, "--junit"); }).find("is a directory"), std::string::npos);
  // /proc takes no new file, not even from root.
  EXPECT_NE(output_error([&] { prepare_output_file("/proc/nvfp4-out.xml", "--junit"); }).find("cannot write it"),
            std::string::npos);
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"file"}) << "the checks leave nothing behind";
}

TEST_F(AtomicOutputTest, AnOutputDirectoryIsCreatableOrWritableOrRefused) {
  EXPECT_EQ(output_error([&] { prepare_output_directory(dir_ / "file" / "report", "--report"); }),
            "--report " + (dir_ / "file" / "report").string() + ": cannot create it: " + (dir_ / "file").string() +
                " is not a directory");
  EXPECT_NE(output_error([&] { prepare_output_directory(dir_ / "file" / "a" / "b", "--report"); }).find("not a directory"),
            std::string::npos);
  EXPECT_NE(output_error([&] { prepare_output_directory(dir_ / "file", "--corpus"); }).find("exists and is not a directory"),
            std::string::npos);
  EXPECT_NE(output_error([&] { prepare_output_directory("/proc/nvfp4-report", "--report"); }).find("cannot create it"),
            std::string::npos);
  EXPECT_EQ(output_error([&] { prepare_output_directory(dir_ / "new" / "deeper", "--report"); }), "");
  EXPECT_EQ(output_error([&] { prepare_output_directory(dir_, "--report"); }), "");
  EXPECT_EQ(entries(dir_), std::vector<std::string>{"file"}) << "nothing is created by a check";
}

TEST_F(AtomicOutputTest, TemporariesAreHiddenAndUniquePerCall) {
  const fs::path a = temporary_path(dir_ / "x.safetensors"), b = temporary_path(dir_ / "x.safetensors");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.parent_path(), dir_);
  EXPECT_EQ(a.filename().string()[0], '.');
  EXPECT_NE(a.extension(), ".safetensors") << "a corpus scan must not take it for a case";
  const fs::path long_name = temporary_path(dir_ / std::string(255, 'n'));
  EXPECT_LE(long_name.filename().string().size(), 255u);
}

TEST_F(AtomicOutputTest, StaleTemporariesOfDeadProcessesAreRemovedOthersKept) {
  const pid_t dead = dead_pid();
  const std::string stale_file = ".case.safetensors.nvfp4-tmp-" + std::to_string(dead) + "-3-0badcafe";
  const std::string stale_dir = ".q.nvfp4-tmp-" + std::to_string(dead) + "-0-00000001";
  const std::string live = ".case.safetensors.nvfp4-tmp-" + std::to_string(::getppid()) + "-0-00000002";
  const std::string own = ".case.safetensors.nvfp4-tmp-" + std::to_string(::getpid()) + "-0-00000003";
  const std::string users = ".notes.nvfp4-tmp-" + std::to_string(dead) + "-x";  // not our pattern
  for (const std::string& f : {stale_file, live, own, users}) std::ofstream(dir_ / f) << "partial";
  fs::create_directories(dir_ / stale_dir / "sub");
  std::ofstream(dir_ / stale_dir / "sub" / "model.safetensors") << "partial";

  EXPECT_EQ(remove_stale_temporaries(dir_), 2u);
  std::vector<std::string> kept = {"file", live, own, users};
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(entries(dir_), kept);

  // The checks of an output path remove them too: in the directory of a file, in and beside a directory.
  std::ofstream(dir_ / stale_file) << "partial";
  fs::create_directories(dir_ / "report");
  std::ofstream(dir_ / "report" / stale_file) << "partial";
  prepare_output_file(dir_ / "out.xml", "--junit");
  EXPECT_FALSE(fs::exists(dir_ / stale_file));
  std::ofstream(dir_ / stale_file) << "partial";
  prepare_output_directory(dir_ / "report", "--report");
  EXPECT_FALSE(fs::exists(dir_ / stale_file));
  EXPECT_TRUE(fs::is_empty(dir_ / "report"));
}

TEST_F(AtomicOutputTest, AnAtomicFileAppearsWholeAtCommitAndNeverOtherwise) {
  {
    AtomicFile f(dir_ / "a.txt");
    f.write(std::string_view("hello "));
    EXPECT_FALSE(fs::exists(dir_ / "a.txt")) << "not before commit";
    f.write(std::string_view("world"));
    f.commit();
  }
  EXPECT_EQ(test_support::slurp_text(dir_ / "a.txt"), "hello world");
  {
    AtomicFile f(dir_ / "a.txt");
    f.write(std::string_view("partial"));
  }  // abandoned: the old content stays, the temporary goes
  EXPECT_EQ(test_support::slurp_text(dir_ / "a.txt"), "hello world");
  fs::create_directories(dir_ / "d" / "child");
  EXPECT_NE(output_error([&] { write_file_atomic(dir_ / "d", std::string_view("x")); }).find("cannot rename"), std::string::npos);
  EXPECT_NE(output_error([&] { write_file_atomic(dir_ / "file" / "x", std::string_view("x")); }).find("cannot create"),
            std::string::npos);
  EXPECT_EQ(entries(dir_), (std::vector<std::string>{"a.txt", "d", "file"}));
}

TEST_F(AtomicOutputTest, AnAtomicDirectoryAppearsWholeAtCommitAndNeverOtherwise) {
  const fs::path out = dir_ / "sub" / "out";
  {
    AtomicDirectory d(out);
    write_file_atomic(d.path() / "index.html", std::string_view("one"));
    EXPECT_FALSE(fs::exists(out)) << "not before commit";
  }  // abandoned
  EXPECT_TRUE(fs::is_empty(dir_ / "sub"));
  {
    AtomicDirectory d(out);
    write_file_atomic(d.path() / "index.html", std::string_view("one"));
    d.commit(AtomicDirectory::Existing::kRefuse);
  }
  EXPECT_EQ(test_support::slurp_text(out / "index.html"), "one");
  {
    AtomicDirectory d(out);
    write_file_atomic(d.path() / "other.html", std::string_view("two"));
    EXPECT_NE(output_error([&] { d.commit(AtomicDirectory::Existing::kRefuse); }).find("left as it is"), std::string::npos);
  }
  EXPECT_EQ(entries(out), std::vector<std::string>{"index.html"});
  {
    AtomicDirectory d(out.string() + "/");  // "OUT/" names OUT
    write_file_atomic(d.path() / "other.html", std::string_view("two"));
    d.commit(AtomicDirectory::Existing::kReplace);
  }
  EXPECT_EQ(entries(out), std::vector<std::string>{"other.html"});
  EXPECT_EQ(entries(dir_ / "sub"), std::vector<std::string>{"out"}) << "the replaced directory is gone";
  {
    AtomicDirectory d(dir_ / "file");
    EXPECT_NE(output_error([&] { d.commit(AtomicDirectory::Existing::kReplace); }).find("not a directory"), std::string::npos);
  }
  EXPECT_EQ(test_support::slurp_text(dir_ / "file"), "x");
  EXPECT_EQ(entries(dir_), (std::vector<std::string>{"file", "sub"}));
}

}  // namespace
}  // namespace nvfp4::io
