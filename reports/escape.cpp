#include "reports/escape.h"

namespace nvfp4::reports {

std::string escape_markup(std::string_view text) {
  std::string r;
  r.reserve(text.size() + text.size() / 8);
  for (const char ch : text) {
    switch (ch) {
      case '&':
        r += "&amp;";
        break;
      case '<':
        r += "&lt;";
        break;
      case '>':
        r += "&gt;";
        break;
      case '"':
        r += "&quot;";
        break;
      case '\'':
        r += "&#39;";
        break;
      case '\t':
      case '\n':
      case '\r':
        r += ch;
        break;
      default:
        // A document with such a character is not XML; a browser shows it as nothing.
        if (static_cast<unsigned char>(ch) < 0x20)
          r += "\xEF\xBF\xBD";
        else
          r += ch;
    }
  }
  return r;
}

}  // namespace nvfp4::reports
