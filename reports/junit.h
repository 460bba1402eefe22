// JUnit XML, the file CI dashboards read: `gate --junit` (the corpus and the campaign) and
// `check-checkpoint --junit` (one testcase per quantized module).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace nvfp4::reports {

struct JunitCase {
  std::string name;
  std::optional<double> seconds = std::nullopt;  // its time attribute; none when not measured
  std::string failure = {};                      // the failure message; "" when it passed
};

struct JunitSuite {
  std::string name;
  std::string classname;  // every testcase's classname
  std::vector<JunitCase> cases;
};

// <testsuites name="name"> holding each suite in order, with its tests and failures counted.
std::string junit_xml(const std::string& name, const std::vector<JunitSuite>& suites);

// junit_xml written to `file` atomically (io/atomic_file.h). Throws OutputError.
void write_junit(const std::filesystem::path& file, const std::string& name, const std::vector<JunitSuite>& suites);

}  // namespace nvfp4::reports
