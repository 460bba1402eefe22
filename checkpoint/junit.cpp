#include "checkpoint/junit.h"

#include <fmt/format.h>

namespace nvfp4::checkpoint {
namespace {

std::string escaped(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

}  // namespace

std::string junit_xml(const CheckpointCheck& c) {
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites><testsuite name=\"check-checkpoint ({})\" tests=\"{}\" failures=\"{}\">\n",
                   escaped(c.profile), c.tensors.size(), c.mismatches());
  for (const TensorVerdict& v : c.tensors) {
    x += fmt::format("  <testcase classname=\"check-checkpoint\" name=\"{}\"", escaped(v.module));
    if (v.match()) {
      x += "/>\n";
    } else {
      x += fmt::format("><failure message=\"{}\"/></testcase>\n", escaped(v.line()));
    }
  }
  return x + "</testsuite></testsuites>\n";
}

}  // namespace nvfp4::checkpoint
