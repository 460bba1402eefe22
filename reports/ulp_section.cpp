#include "reports/ulp_section.h"

#include <algorithm>
#include <array>
#include <bit>
#include <iterator>

#include <fmt/format.h>

#include "reports/escape.h"

namespace nvfp4::reports {
namespace {

using Out = std::back_insert_iterator<std::string>;

// Cell colours by log2 of the distance: equal, 1, 2, 3-4, ..., 33-64, more, and a NaN mismatch.
constexpr std::array<std::string_view, 10> kShadeColour = {"#e4e4e7", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a",
                                                           "#e31a1c", "#bd0026", "#800026", "#4d0013", "#111111"};
constexpr std::array<std::string_view, 10> kShadeLabel = {"0",    "1",     "2",     "3-4", "5-8",
                                                          "9-16", "17-32", "33-64", ">64", "NaN mismatch"};
constexpr std::size_t kNanShade = kShadeColour.size() - 1;

std::size_t shade(std::uint64_t ulps) {
  if (ulps == compare::kUlpNan) return kNanShade;
  return ulps == 0 ? 0 : std::min<std::size_t>(kNanShade - 1, 1 + std::bit_width(ulps - 1));
}

// A histogram bucket's colour: its distances' shade (the buckets above 64 share the darkest).
std::string_view bucket_colour(std::size_t bucket) {
  if (bucket == compare::UlpHistogram::kNan) return kShadeColour[kNanShade];
  return kShadeColour[std::min<std::size_t>(bucket, kNanShade - 1)];
}

std::string value_cell(io::DType dtype, std::uint32_t bits) {
  return fmt::format("<td class=\"n\"><span class=\"d\">{}</span><span class=\"h\">0x{:0{}X}</span></td>",
                     float(compare::ulp_value(dtype, bits)), bits, 2 * io::dtype_size(dtype));
}

void legend(Out o) {
  fmt::format_to(o, "<div class=\"legend\">largest distance in the cell, in ULPs:");
  for (std::size_t i = 0; i < kShadeColour.size(); ++i)
    fmt::format_to(o, "<span class=\"sw\" style=\"background:{}\"></span>{}", kShadeColour[i], kShadeLabel[i]);
  fmt::format_to(o, "</div>\n");
}

void ulp_map(Out o, const compare::UlpReport& r) {
  const compare::UlpGrid& g = r.grid;
  // The map within about 560 x 400 px, cells 4 to 24 px wide and 3 to 14 px tall.
  const int cw = int(std::clamp<std::int64_t>(560 / std::max<std::int64_t>(g.cols, 1), 4, 24));
  const int ch = int(std::clamp<std::int64_t>(400 / std::max<std::int64_t>(g.rows, 1), 3, 14));
  const int gx = cw >= 6 ? 1 : 0, gy = ch >= 6 ? 1 : 0;
  const int left = 52, top = 34, right = 8, bottom = 6;
  const std::int64_t w = std::max<std::int64_t>(left + g.cols * cw + right, left + 120), h = top + g.rows * ch + bottom;
  fmt::format_to(o, "<figure style=\"width:{}px\">\n", std::max<std::int64_t>(w, 300));
  fmt::format_to(o,
                 "<svg class=\"ulpmap\" data-tensor=\"{}\" data-rows=\"{}\" data-cols=\"{}\" data-cell-rows=\"{}\" "
                 "data-cell-cols=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
                 "aria-label=\"ULP distances of {}\">\n",
                 escape_markup(r.tensor), r.rows, r.cols, g.cell_rows, g.cell_cols, w, h, w, h, escape_markup(r.tensor));
  fmt::format_to(o, "<text class=\"axis\" x=\"{}\" y=\"11\">columns (n) &#8594;</text>\n", left);
  fmt::format_to(o, "<text class=\"axis\" x=\"2\" y=\"{}\">rows</text><text class=\"axis\" x=\"2\" y=\"{}\">(m) &#8595;</text>\n",
                 top + 10, top + 24);
  // A tick on the first cell and then every `step` cells, at least about 60 px (columns) or 28 px (rows) apart.
  auto ticks = [&](std::int64_t cells, int size, int min_px, auto&& put) {
    std::int64_t step = 1;
    while (step * size < min_px) step *= 2;
    for (std::int64_t i = 0; i < cells; i += step) put(i);
  };
  ticks(g.cols, cw, 60, [&](std::int64_t c) {
    fmt::format_to(o, "<text x=\"{}\" y=\"{}\">{}</text>\n", left + c * cw, top - 5, c * g.cell_cols);
  });
  ticks(g.rows, ch, 28, [&](std::int64_t row) {
    fmt::format_to(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 4, top + row * ch + ch / 2 + 4,
                   row * g.cell_rows);
  });
  const bool single = g.cell_rows == 1 && g.cell_cols == 1;
  for (std::int64_t row = 0; row < g.rows; ++row) {
    for (std::int64_t col = 0; col < g.cols; ++col) {
      const std::uint64_t d = g.max[std::size_t(row * g.cols + col)];
      fmt::format_to(o, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"", left + col * cw, top + row * ch,
                     cw - gx, ch - gy, kShadeColour[shade(d)]);
      if (d == 0)
        fmt::format_to(o, "/>");
      else if (single)
        fmt::format_to(o, "><title>[{}, {}]: {} ulps</title></rect>", row, col, compare::ulps_text(d));
      else
        fmt::format_to(o, "><title>rows {}-{}, columns {}-{}: max {} ulps</title></rect>", row * g.cell_rows,
                       std::min(r.rows, (row + 1) * g.cell_rows) - 1, col * g.cell_cols,
                       std::min(r.cols, (col + 1) * g.cell_cols) - 1, compare::ulps_text(d));
    }
    fmt::format_to(o, "\n");
  }
  fmt::format_to(o, "</svg>\n<figcaption><b class=\"mono\">{}</b> {}: {} &#215; {} elements", escape_markup(r.tensor),
                 io::dtype_name(r.dtype), r.rows, r.cols);
  if (!single)
    fmt::format_to(o,
                   ". <b>Downsampled</b> to {} &#215; {} cells of {} &#215; {} elements, each coloured by its largest distance",
                   g.rows, g.cols, g.cell_rows, g.cell_cols);
  fmt::format_to(o, ".</figcaption>\n</figure>\n");
}

void histogram(Out o, const compare::UlpHistogram& h, std::string_view attributes) {
  const std::uint64_t n = h.total();
  fmt::format_to(o,
                 "<table {}>\n<thead><tr><th>ulps</th><th class=\"n\">elements</th><th class=\"n\">share</th><th></th></tr>"
                 "</thead>\n<tbody>\n",
                 attributes);
  for (std::size_t b = 0; b < h.count.size(); ++b) {
    if (h.count[b] == 0) continue;
    const double share = 100.0 * double(h.count[b]) / double(n);
    fmt::format_to(o,
                   "<tr><td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.3f}%</td><td><span class=\"bar\" "
                   "style=\"width:{}px;background:{}\"></span></td></tr>\n",
                   escape_markup(compare::UlpHistogram::label(b)), h.count[b], share, std::max(1, int(2 * share)),
                   bucket_colour(b));
  }
  fmt::format_to(o, "</tbody>\n</table>\n");
}

void worst_table(Out o, const std::vector<compare::UlpElement>& worst, std::string_view attributes, bool with_case) {
  if (worst.empty()) {
    fmt::format_to(o, "<p class=\"muted\">every element equals EXACT</p>\n");
    return;
  }
  fmt::format_to(o,
                 "<div class=\"scroll\"><table {}>\n<thead><tr><th class=\"n\">#</th>{}<th>tensor</th><th class=\"n\">row</th>"
                 "<th class=\"n\">col</th><th class=\"n\">ulps</th><th class=\"n\">exact</th><th class=\"n\">actual</th></tr>"
                 "</thead>\n<tbody>\n",
                 attributes, with_case ? "<th>case</th>" : "");
  for (std::size_t i = 0; i < worst.size(); ++i) {
    const compare::UlpElement& e = worst[i];
    fmt::format_to(o,
                   "<tr><td class=\"n\">{}</td>{}<td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                   "<td class=\"n bad\">{}</td>{}{}</tr>\n",
                   i, with_case ? fmt::format("<td class=\"mono\">{}</td>", escape_markup(e.where)) : "", escape_markup(e.tensor),
                   e.row, e.col, compare::ulps_text(e.ulps), value_cell(e.dtype, e.expected), value_cell(e.dtype, e.actual));
  }
  fmt::format_to(o, "</tbody>\n</table></div>\n");
}

// "3 elements", "1 output tensor".
std::string plural(std::uint64_t n, std::string_view noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

std::string bound_text(const std::optional<std::uint64_t>& bound, std::uint64_t beyond, std::string_view noun) {
  if (!bound) return "no bound (--max-ulp): reported only";
  return fmt::format("--max-ulp {}: {} beyond it", *bound, plural(beyond, noun));
}

}  // namespace

std::string render_ulp_reports(const std::vector<compare::UlpReport>& reports) {
  if (reports.empty()) return "";
  std::string html;
  Out o(html);
  fmt::format_to(o,
                 "<section id=\"ulp\">\n<h2>ULP distance to EXACT</h2>\n<p class=\"note\">each element's distance to the "
                 "reference's correctly rounded value, counted on the output format's ordered line (+0 and &#8722;0 "
                 "are one value, infinity follows the largest finite value, NaN against NaN is 0).</p>\n");
  legend(o);
  for (const compare::UlpReport& r : reports) {
    fmt::format_to(o, "<h3 class=\"mono\">{}</h3>\n<p class=\"verdict{}\">{}; {}</p>\n", escape_markup(r.tensor),
                   r.passed() ? " ok" : "", escape_markup(r.brief()), escape_markup(bound_text(r.bound, r.beyond, "element")));
    fmt::format_to(o, "<div class=\"row\">\n<section>\n");
    ulp_map(o, r);
    fmt::format_to(o, "</section>\n<section>\n");
    histogram(o, r.histogram, fmt::format("class=\"ulp-histogram\" data-tensor=\"{}\"", escape_markup(r.tensor)));
    fmt::format_to(o, "</section>\n</div>\n<h3>Worst elements of {}</h3>\n", escape_markup(r.tensor));
    worst_table(o, r.worst, fmt::format("class=\"ulp-worst\" data-tensor=\"{}\"", escape_markup(r.tensor)), false);
  }
  fmt::format_to(o, "</section>\n");
  return html;
}

std::string render_ulp_totals(const compare::UlpTotals& t) {
  std::string html;
  Out o(html);
  fmt::format_to(o, "<section id=\"ulp-totals\">\n<h2>ULP distance to EXACT, every case</h2>\n");
  fmt::format_to(o, "<p class=\"verdict{}\">{} of {}: max {}, mean {:.4g} ulp; {}</p>\n", t.failed ? "" : " ok",
                 plural(t.histogram.total(), "element"), plural(t.tensors, "output tensor"), plural(t.max, "ulp"), t.mean(),
                 escape_markup(bound_text(t.bound, t.failed, "output tensor")));
  histogram(o, t.histogram, "id=\"ulp-histogram\"");
  fmt::format_to(o, "<h3>Worst elements</h3>\n");
  worst_table(o, t.worst, "id=\"ulp-worst\"", true);
  fmt::format_to(o, "</section>\n");
  return html;
}

}  // namespace nvfp4::reports
