#include "reports/junit.h"

#include <fmt/format.h>

#include "io/atomic_file.h"
#include "reports/escape.h"

namespace nvfp4::reports {

std::string junit_xml(const std::string& name, const std::vector<JunitSuite>& suites) {
  std::string xml = fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{}\">\n", escape_markup(name));
  for (const JunitSuite& s : suites) {
    std::size_t failures = 0;
    for (const JunitCase& c : s.cases) failures += !c.failure.empty();
    xml +=
        fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">\n", escape_markup(s.name), s.cases.size(), failures);
    for (const JunitCase& c : s.cases) {
      xml += fmt::format("    <testcase classname=\"{}\" name=\"{}\"", escape_markup(s.classname), escape_markup(c.name));
      if (c.seconds) xml += fmt::format(" time=\"{:.3f}\"", *c.seconds);
      if (c.failure.empty())
        xml += "/>\n";
      else
        xml += fmt::format("><failure message=\"{}\"/></testcase>\n", escape_markup(c.failure));
    }
    xml += "  </testsuite>\n";
  }
  return xml + "</testsuites>\n";
}

void write_junit(const std::filesystem::path& file, const std::string& name, const std::vector<JunitSuite>& suites) {
  io::write_file_atomic(file, junit_xml(name, suites));
}

}  // namespace nvfp4::reports
