// The summary page of a campaign, a replay, a gate or a checkpoint check (reports/report.h): its
// totals, failures with links to their pages, counts per operation and the passed entries.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "reports/escape.h"
#include "reports/page_style.h"
#include "reports/report.h"
#include "reports/ulp_section.h"

namespace nvfp4::reports {
namespace {

using Out = std::back_insert_iterator<std::string>;

// Passed entries beyond this go into a collapsed <details>.
constexpr std::size_t kMaxOpenPassed = 50;

// What the page counts: the entries that are not a campaign's failures, and the campaign's cases.
struct Totals {
  std::size_t cases = 0, failed = 0;
  std::size_t passed_entries = 0, listed_failures = 0;
};

Totals totals(const Summary& s) {
  Totals t;
  for (const SummaryEntry& e : s.entries) {
    t.listed_failures += e.passed ? 0 : 1;
    if (e.generated) continue;
    ++t.cases;
    (e.passed ? t.passed_entries : t.failed) += 1;
  }
  for (const auto& [op, g] : s.generated) t.cases += g.cases, t.failed += std::min(g.failed, g.cases);
  return t;
}

std::size_t generated_passed(const Summary& s) {
  std::size_t n = 0;
  for (const auto& [op, g] : s.generated) n += g.cases - std::min(g.failed, g.cases);
  return n;
}

bool safe_link(std::string_view link) {
  // Only relative links: the pages must not point anywhere outside the report directory tree.
  return !link.empty() && link.find("://") == std::string_view::npos && !link.starts_with("//") && !link.starts_with("/") &&
         link.find(':') == std::string_view::npos;
}

// The summary's header: its verdict, backends, facts and totals.
void summary_header(Out o, const Summary& s, std::size_t total, std::size_t failed) {
  fmt::format_to(o, "<header>\n<h1><span class=\"badge {}\">{}</span>{}</h1>\n", failed ? "fail" : "pass",
                 failed ? "FAIL" : "PASS", escape_markup(s.title));
  fmt::format_to(o, "<p class=\"meta\">backends: <b>{}</b> &#183; <span id=\"seconds\" class=\"mono\">{:.1f}</span> s</p>\n",
                 escape_markup(s.backends), s.seconds);
  if (!s.facts.empty()) {
    fmt::format_to(o, "<p class=\"meta\" id=\"facts\">");
    for (std::size_t i = 0; i < s.facts.size(); ++i)
      fmt::format_to(o, "{}{}: <b class=\"mono\">{}</b>", i ? " &#183; " : "", escape_markup(s.facts[i].first),
                     escape_markup(s.facts[i].second));
    fmt::format_to(o, "</p>\n");
  }
  fmt::format_to(o,
                 "<div class=\"totals\"><div><span class=\"v\" id=\"total-cases\">{}</span>cases</div>"
                 "<div class=\"ok\"><span class=\"v\" id=\"passed-cases\">{}</span>passed</div>"
                 "<div class=\"{}\"><span class=\"v\" id=\"failed-cases\">{}</span>failed</div></div>\n</header>\n",
                 total, total - failed, failed ? "bad" : "ok", failed);
  if (s.ulp) fmt::format_to(o, "{}", render_ulp_totals(*s.ulp));
}

// The failing cases, each linking to its report page.
void summary_failures(Out o, const Summary& s, std::size_t failed) {
  fmt::format_to(o, "<section>\n<h2>Failures</h2>\n");
  if (failed == 0) fmt::format_to(o, "<p class=\"muted\">none</p>\n");
  fmt::format_to(o,
                 "<table id=\"failures\">\n<thead><tr><th>case (link to its "
                 "report)</th><th>operation</th><th>profile</th><th>detail</th></tr></thead>\n<tbody>\n");
  for (const SummaryEntry& e : s.entries) {
    if (e.passed) continue;
    std::string name = escape_markup(e.name);
    if (safe_link(e.report_link))
      name = fmt::format("<a href=\"{}\">{}</a>", escape_markup(e.report_link), name);
    else if (!e.report_link.empty())
      name += fmt::format(" <span class=\"muted\">({})</span>", escape_markup(e.report_link));
    fmt::format_to(o, "<tr><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td>{}</td></tr>\n",
                   name, escape_markup(e.operation), escape_markup(e.profile), escape_markup(e.detail));
  }
  fmt::format_to(o, "</tbody>\n</table>\n</section>\n");
}

// A campaign's cases per operation: every case it ran.
void summary_generated(Out o, const Summary& s) {
  if (s.generated.empty()) return;
  fmt::format_to(o,
                 "<section>\n<h2>Generated cases by operation</h2>\n<table id=\"generated\">\n<thead><tr><th>operation</th>"
                 "<th class=\"n\">cases</th><th class=\"n\">passed</th><th class=\"n\">failed</th></tr></thead>\n<tbody>\n");
  for (const auto& [op, g] : s.generated)
    fmt::format_to(o,
                   "<tr{}><td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                   "<td class=\"n\">{}</td></tr>\n",
                   g.failed ? " class=\"bad\"" : "", escape_markup(op), g.cases, g.cases - std::min(g.failed, g.cases), g.failed);
  fmt::format_to(o, "</tbody>\n</table>\n</section>\n");
}

// Cases and failures per operation and profile of the entries (not a campaign's failures).
void summary_groups(Out o, const Summary& s) {
  struct Counts {
    std::size_t cases = 0, failed = 0;
  };
  std::map<std::pair<std::string, std::string>, Counts> groups;
  for (const SummaryEntry& e : s.entries) {
    if (e.generated) continue;  // in the campaign's own table
    Counts& c = groups[{e.operation, e.profile}];
    ++c.cases;
    if (!e.passed) ++c.failed;
  }
  if (groups.empty() && !s.generated.empty()) return;  // a campaign alone: its table says it all
  fmt::format_to(
      o,
      "<section>\n<h2>By operation and profile</h2>\n<table id=\"groups\">\n<thead><tr><th>operation</th><th>profile</th>"
      "<th class=\"n\">cases</th><th class=\"n\">failed</th></tr></thead>\n<tbody>\n");
  for (const auto& [key, c] : groups) {
    fmt::format_to(
        o, "<tr{}><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
        c.failed ? " class=\"bad\"" : "", escape_markup(key.first), escape_markup(key.second), c.cases, c.failed);
  }
  fmt::format_to(o, "</tbody>\n</table>\n</section>\n");
}

// Every entry with its verdict (check-checkpoint's tensors).
void summary_every_entry(Out o, const Summary& s) {
  fmt::format_to(o,
                 "<section>\n<h2>Every entry</h2>\n<table id=\"entries\">\n<thead><tr><th>name</th><th>verdict</th>"
                 "<th>profile</th><th>detail</th></tr></thead>\n<tbody>\n");
  for (const SummaryEntry& e : s.entries) {
    std::string name = escape_markup(e.name);
    if (safe_link(e.report_link)) name = fmt::format("<a href=\"{}\">{}</a>", escape_markup(e.report_link), name);
    fmt::format_to(o, "<tr{}><td class=\"mono\">{}</td><td>{}</td><td class=\"mono\">{}</td><td>{}</td></tr>\n",
                   e.passed ? "" : " class=\"bad\"", name, e.passed ? "match" : "MISMATCH", escape_markup(e.profile),
                   escape_markup(e.detail));
  }
  fmt::format_to(o, "</tbody>\n</table>\n</section>\n");
}

// The passed entries' names, collapsed when there are many.
void summary_passed(Out o, const Summary& s, std::size_t passed) {
  fmt::format_to(o, "<section>\n<h2>Passed</h2>\n");
  if (!s.generated.empty())
    fmt::format_to(o, "<p class=\"muted\">{} generated cases: counted by operation above, not listed</p>\n", generated_passed(s));
  if (passed == 0 && s.generated.empty())
    fmt::format_to(o, "<p class=\"muted\">none</p>\n");
  else if (passed > 0) {
    const bool collapse = passed > kMaxOpenPassed;
    if (collapse) fmt::format_to(o, "<details id=\"passed\"><summary>{} passed cases</summary>\n", passed);
    fmt::format_to(o, "<ul class=\"passed\"{}>\n", collapse ? "" : " id=\"passed\"");
    for (const SummaryEntry& e : s.entries) {
      if (!e.passed) continue;
      fmt::format_to(o, "<li title=\"{} {}{}{}\">{}</li>\n", escape_markup(e.operation), escape_markup(e.profile),
                     e.detail.empty() ? "" : ": ", escape_markup(e.detail), escape_markup(e.name));
    }
    fmt::format_to(o, "</ul>\n");
    if (collapse) fmt::format_to(o, "</details>\n");
  }
  fmt::format_to(o, "</section>\n");
}

}  // namespace

std::string render_summary(const Summary& s) {
  const Totals t = totals(s);
  std::string html;
  html.reserve(16 * 1024 + 128 * s.entries.size());
  Out o(html);
  page_head(o, s.title.empty() ? "nvfp4-verify summary" : s.title);
  summary_header(o, s, t.cases, t.failed);
  summary_failures(o, s, t.listed_failures);
  summary_generated(o, s);
  summary_groups(o, s);
  if (s.every_entry)
    summary_every_entry(o, s);
  else
    summary_passed(o, s, t.passed_entries);
  page_tail(o);
  return html;
}

}  // namespace nvfp4::reports
