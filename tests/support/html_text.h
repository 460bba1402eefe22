// Reading HTML as text in tests: counts, slices and the text of an element by id.
#pragma once

#include <regex>
#include <string>
#include <string_view>

namespace nvfp4::test_support {

inline std::size_t count(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (std::size_t p = hay.find(needle); p != std::string_view::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

// The text from the first occurrence of `start` to the following `end` (inclusive); empty if absent.
inline std::string_view between(std::string_view hay, std::string_view start, std::string_view end) {
  const std::size_t a = hay.find(start);
  if (a == std::string_view::npos) return {};
  const std::size_t b = hay.find(end, a);
  if (b == std::string_view::npos) return {};
  return hay.substr(a, b + end.size() - a);
}

// The text content of the element with id `id`, when it holds text only.
inline std::string text_of(const std::string& html, const std::string& id) {
  std::smatch m;
  if (!std::regex_search(html, m, std::regex("id=\"" + id + "\"[^>]*>([^<]*)<"))) return "<missing>";
  return m[1];
}

}  // namespace nvfp4::test_support
