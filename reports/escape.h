// The one escaping of text for markup: HTML pages (reports/report.h) and JUnit XML
// (reports/junit.h). Every piece of text that comes from a case, a backend, a file name or a
// checkpoint goes through it.
#pragma once

#include <string>
#include <string_view>

namespace nvfp4::reports {

// `text` made safe for an element's content and for a quoted attribute value, in HTML and in XML:
// & < > " ' become entities, and the control characters that XML 1.0 forbids (U+0000-U+0008,
// U+000B, U+000C, U+000E-U+001F; not even a character reference may name them) become U+FFFD.
// Tab, line feed, carriage return and every byte from 0x7F up pass through unchanged.
std::string escape_markup(std::string_view text);

}  // namespace nvfp4::reports
