// Running the nvfp4-verify binary from a test as a user would, capturing exit code and output.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace nvfp4::test_support {

struct CliRun {
  int exit_code;
  std::string out, err;
};

inline std::string slurp_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `NVFP4_CLI_PATH args` with stdout and stderr captured through files in `scratch`; with
// `timeout_s`, under timeout(1), so that a hang ends as exit code 124 instead of stalling the test.
inline CliRun run_cli(const std::string& args, const std::filesystem::path& scratch, int timeout_s = 0) {
  const std::filesystem::path out = scratch / "stdout.txt", err = scratch / "stderr.txt";
  const std::string limit = timeout_s > 0 ? "timeout -k 5 " + std::to_string(timeout_s) + " " : "";
  const std::string cmd = limit + std::string(NVFP4_CLI_PATH) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  CliRun r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp_text(out), slurp_text(err)};
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace nvfp4::test_support
