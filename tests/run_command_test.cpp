// cli/run_command.h: whatever a command throws, of whatever type, ends as one line on stderr and
// exit status 2; --help and CLI11's parse errors keep their own handling.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

#include "cli/run_command.h"
#include "io/safetensors.h"
#include "reference/error.h"
#include "reference/exception.h"

namespace nvfp4 {
namespace {

struct Ran {
  int status;
  std::string err;
};

// Runs `nvfp4-verify boom` where boom's callback is `body`, stderr captured.
Ran run_throwing(const std::function<void()>& body, const std::string& command = "boom") {
  CLI::App app{"test"};
  app.require_subcommand(1);
  int exit_code = 7;  // what the command would have set had it finished
  app.add_subcommand("boom", "throws")->callback(body);
  std::FILE* err = std::tmpfile();
  const char* argv[] = {"nvfp4-verify", command.c_str()};
  const int status = cli::run_command(app, 2, argv, exit_code, err);
  std::rewind(err);
  std::string text;
  for (int ch; (ch = std::fgetc(err)) != EOF;) text += char(ch);
  std::fclose(err);
  return {status, text};
}

void expect_one_line(const Ran& r, const std::string& line) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err, line);
}

TEST(RunCommand, TheProjectsErrorsPrintTheirMessage) {
  expect_one_line(run_throwing([] { throw OutputError("--report x: cannot create it"); }),
                  "nvfp4-verify: --report x: cannot create it\n");
  expect_one_line(run_throwing([] { throw UsageError("--time: bad"); }), "nvfp4-verify: --time: bad\n");
  expect_one_line(run_throwing([] { throw io::FormatError("f: truncated"); }), "nvfp4-verify: f: truncated\n");
  expect_one_line(run_throwing([] { fail("quantize", ErrorCode::E_DIM16_K, "K={}", 3); }),
                  "nvfp4-verify: quantize: E_DIM16_K: K=3\n");
}

TEST(RunCommand, AnyOtherExceptionIsUnexpectedButStillOneLine) {
  expect_one_line(run_throwing([] { throw std::logic_error("a bug"); }), "nvfp4-verify: unexpected error: a bug\n");
  expect_one_line(
      run_throwing([] {
        throw std::filesystem::filesystem_error("cannot rename", "a", "b", std::make_error_code(std::errc::is_a_directory));
      }),
      std::string("nvfp4-verify: unexpected error: ") +
          std::filesystem::filesystem_error("cannot rename", "a", "b", std::make_error_code(std::errc::is_a_directory)).what() +
          "\n");
  expect_one_line(run_throwing([] { throw 42; }), "nvfp4-verify: unexpected error: an exception of unknown type\n");
  expect_one_line(run_throwing([] { throw std::string("not an exception"); }),
                  "nvfp4-verify: unexpected error: an exception of unknown type\n");
}

TEST(RunCommand, AMessageWithLineBreaksStaysOneLine) {
  expect_one_line(run_throwing([] { throw std::runtime_error("first\nsecond\r\nthird\n"); }),
                  "nvfp4-verify: unexpected error: first second  third \n");
  expect_one_line(run_throwing([] { throw InputError(""); }), "nvfp4-verify: (an error without a message)\n");
}

TEST(RunCommand, ACommandThatFinishesReturnsItsExitCodeAndParseErrorsExit2) {
  const Ran ok = run_throwing([] {});
  EXPECT_EQ(ok.status, 7);
  EXPECT_EQ(ok.err, "");
  const Ran unknown = run_throwing([] {}, "nosuch");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_EQ(std::count(unknown.err.begin(), unknown.err.end(), '\n'), 1) << unknown.err;
  EXPECT_EQ(unknown.err.rfind("nvfp4-verify: ", 0), 0u) << unknown.err;
}

}  // namespace
}  // namespace nvfp4
