// The command line takes its lists from the tables that define them: the backends a command can
// name from cli/backends.cpp's table, and the choices of every option that sets a registry
// parameter from that parameter's allowed values (cases/ops/). The lists are read back from the
// built binary's help and errors, as a user sees them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/registry.h"
#include "tests/support/cli_runner.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;

class CliTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nvfp4_cli_tables_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  test_support::CliRun run(const std::string& args) { return test_support::run_cli(args, dir_); }

  // "nvfp4-verify: --backends: unknown backend 'x' (known: A, B, C)" -> {A, B, C}: the backends the CLI knows.
  std::vector<std::string> known_backends() {
    const test_support::CliRun r = run("replay " + dir_.string() + " --backends frobnicate,reference");
    EXPECT_EQ(r.exit_code, 2);
    const std::string prefix = "nvfp4-verify: --backends: unknown backend 'frobnicate' (known: ";
    EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    std::vector<std::string> names;
    std::stringstream list(r.err.substr(prefix.size(), r.err.find(')') - prefix.size()));
    for (std::string n; std::getline(list, n, ',');) names.push_back(n.substr(n.find_first_not_of(' ')));
    return names;
  }

  // Every option of a subcommand that lists its choices: "--block" -> {"1d", "2d"}.
  std::map<std::string, std::vector<std::string>> choice_options(const std::string& command) {
    const test_support::CliRun r = run(command + " --help");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, std::vector<std::string>> options;
    const std::regex option(R"(^\s+(--[\w-]+) \w+:\{([^}]*)\})");
    std::stringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      if (std::smatch m; std::regex_search(line, m, option)) {
        std::stringstream values(m[2].str());
        for (std::string v; std::getline(values, v, ',');) options[m[1]].push_back(v);
      }
    return options;
  }

  // The subcommands `nvfp4-verify --help` lists.
  std::vector<std::string> subcommands() {
    const test_support::CliRun r = run("--help");
    std::vector<std::string> names;
    std::stringstream lines(r.out.substr(r.out.find("Subcommands:")));
    std::string line;
    std::getline(lines, line);  // the heading
    while (std::getline(lines, line))
      if (std::smatch m; std::regex_search(line, m, std::regex(R"(^  (\S+))"))) names.push_back(m[1]);
    return names;
  }

  fs::path dir_;
};

std::vector<std::string> allowed(std::string_view op, std::string_view param, bool lower = false) {
  std::vector<std::string> v = cases::operation(op).param(param)->allowed;
  if (lower)
    for (std::string& s : v) std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return v;
}

TEST_F(CliTablesTest, UnknownBackendNamesEveryBackendOnOneLine) {
  const std::vector<std::string> expected = {"reference", "metamorphic", "device", "worker", "plugin"};
  EXPECT_EQ(known_backends(), expected);
}

TEST_F(CliTablesTest, EveryBackendIsInTheHelpOfEveryComparingCommandAndInTheReadme) {
  const std::vector<std::string> known = known_backends();
  ASSERT_FALSE(known.empty());
  for (const char* command : {"fuzz", "gate", "replay"}) {
    const test_support::CliRun help = run(std::string(command) + " --help");
    for (const std::string& b : known) EXPECT_NE(help.out.find(b + " ("), std::string::npos) << command << " --help lacks " << b;
  }
  std::string list;
  for (const std::string& b : known) list += (list.empty() ? "" : ", ") + b;
  const std::string readme = test_support::slurp_text(fs::path(NVFP4_SOURCE_DIR) / "README.md");
  EXPECT_NE(readme.find("A,B of " + list + ","), std::string::npos) << "README.md's --backends line should list " << list;
}

TEST_F(CliTablesTest, TheRegistrysPerOperationBackendsAreKnownBackends) {
  const std::vector<std::string> known = known_backends();
  const test_support::CliRun r = run("ops --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json registry = nlohmann::json::parse(r.out);  // outlives the loop over its operations
  for (const auto& op : registry.at("operations"))
    for (const auto& [name, _] : op.at("backends").items())
      EXPECT_NE(std::find(known.begin(), known.end(), name), known.end()) << op.at("name") << " names backend " << name;
}

// Every option with a list of choices, in every command: either it sets a registry parameter and
// lists exactly that parameter's allowed values, or it is the CLI's own and says why.
TEST_F(CliTablesTest, EveryChoiceListIsTheRegistrysOrTheCliOwn) {
  using Key = std::pair<std::string, std::string>;  // command, option
  const std::map<Key, std::vector<std::string>> from_registry = {
      {{"quantize", "--profile"}, allowed("quantize", "profile")},
      {{"quantize", "--block"}, allowed("quantize", "block")},
      {{"quantize", "--direction"}, allowed("quantize", "direction")},
      {{"quantize", "--scale-layout"}, allowed("quantize", "scale_layout")},
      {{"quantize", "--rounding"}, allowed("quantize", "rounding")},
      {{"dequantize", "--profile"}, allowed("dequantize", "profile")},
      {{"dequantize", "--dtype"}, allowed("dequantize", "output_dtype", true)},
      {{"gemm", "--out-dtype"}, allowed("gemm", "output_dtype", true)},
      {{"gemm", "--accumulation"}, allowed("gemm", "accumulation")},
  };
  const std::map<Key, std::string> cli_own = {
      {{"gemm", "--backend"}, "what computes a one-shot command's output: the backend table's rows"},
      {{"cast-master-weights", "--backend"}, "as gemm's"},
      {{"convert-checkpoint", "--backend"}, "as gemm's"},
      {{"cast-master-weights", "--profile"}, "the flow's one profile, narrower than the registry on purpose"},
      {{"check-checkpoint", "--format"}, "the checkpoint formats' table"},
      {{"fuzz", "--compare"}, "how two backends' outputs compare"},
      {{"gate", "--compare"}, "as fuzz's"},
      {{"replay", "--compare"}, "as fuzz's"},
      {{"vectors", "--level"}, "the vector pack's levels (docs/vectors.md)"},
  };
  std::set<Key> seen;
  for (const std::string& command : subcommands())
    for (const auto& [option, choices] : choice_options(command)) {
      const Key key{command, option};
      seen.insert(key);
      if (const auto it = from_registry.find(key); it != from_registry.end())
        EXPECT_EQ(choices, it->second) << command << " " << option << " differs from the registry's allowed values";
      else
        EXPECT_TRUE(cli_own.count(key)) << command << " " << option
                                        << " lists choices that are neither a registry parameter's nor stated as the CLI's own";
    }
  for (const auto& [key, _] : from_registry)
    EXPECT_TRUE(seen.count(key)) << key.first << " " << key.second << " lists no choices";
}

}  // namespace
}  // namespace nvfp4
