// What the report pages share: HTML escaping (every piece of text that comes from a case or a
// backend goes through it).
#pragma once

#include <string>
#include <string_view>

namespace nvfp4::report_html {

// Text and attribute-value escaping (both contexts: quotes are escaped too).
inline std::string esc(std::string_view s) {
  std::string r;
  r.reserve(s.size() + s.size() / 8);
  for (const char ch : s) {
    switch (ch) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      case '\'': r += "&#39;"; break;
      default: r += ch;
    }
  }
  return r;
}

}  // namespace nvfp4::report_html
