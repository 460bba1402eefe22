// Self-contained HTML pages: everything (style, heatmaps, one line of script for the copy
// button) is inline, nothing is loaded from anywhere, so a page can be attached to a CI run or
// mailed and still open offline. Every piece of text that comes from a case or a backend goes
// through escape_markup().
#include "reports/report.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <map>
#include <system_error>

#include <fmt/format.h>

#include "io/atomic_file.h"
#include "reference/e2m1.h"
#include "reference/e4m3.h"
#include "reference/exception.h"
#include "reports/escape.h"
#include "reports/page_style.h"
#include "reports/ulp_section.h"

namespace nvfp4::reports {
namespace {

// Rows of #mismatches; the rest are counted, not listed.
constexpr std::size_t kMaxMismatchRows = 64;
// A heatmap larger than this many cells per side is downsampled (OR over groups of blocks).
constexpr std::int64_t kMaxCells = 128;

using Out = std::back_insert_iterator<std::string>;

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
std::string dec(float f) { return fmt::format("{:.9g}", double(f)); }
std::string hex32(float f) { return fmt::format("0x{:08X}", bits(f)); }
std::string hex32(std::uint32_t u) { return fmt::format("0x{:08X}", u); }
std::string dec(std::uint32_t u) { return dec(std::bit_cast<float>(u)); }

// A value cell of the 16-column table: the shortest decimal that reads back as the same binary32
// (narrower than %.9g and still exact), and its bits underneath.
std::string float_cell(float f) {
  return fmt::format("<span class=\"d\">{}</span><span class=\"h\">{}</span>", escape_markup(fmt::format("{}", f)), hex32(f));
}

// |y| on a rounding tie of the E2M1 grid (where encoders most often disagree).
bool e2m1_tie(float y) {
  const float a = y < 0 ? -y : y;
  return a == 0.25f || a == 0.75f || a == 1.25f || a == 1.75f || a == 2.5f || a == 3.5f || a == 5.0f;
}

// "0x5 (3)" for an E2M1 code, "0x7E (1.75)" for an E4M3 scale byte.
std::string code_text(std::uint8_t c) { return fmt::format("0x{:X} ({})", c & 0xF, dec(e2m1_decode(c & 0xF))); }
std::string byte_text(std::uint8_t b) { return fmt::format("0x{:02X} ({})", b, dec(e4m3_decode(b))); }

bool is_data_tensor(std::string_view t) { return t.starts_with("data"); }
bool is_scale_tensor(std::string_view t) { return t.starts_with("scale"); }

std::size_t total_mismatches(const FailureReport& r) {
  const compare::Explanation& e = r.explanation;
  if (e.total_mismatches != 0 || !e.mismatches.empty()) return std::max(e.total_mismatches, e.mismatches.size());
  // No element-level explanation (e.g. an operation explain() does not cover): count the diffs.
  std::size_t n = 0;
  for (const compare::TensorDiff& d : r.diffs) n += d.mismatches;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Heatmap of one BlockMap.

void heatmap(Out o, const compare::Explanation::BlockMap& m) {
  const std::int64_t rows = std::max<std::int64_t>(m.rows, 0), blocks = std::max<std::int64_t>(m.blocks, 0);
  // Group sizes: each cell is the OR over fr rows x fb blocks.
  const std::int64_t fr = std::max<std::int64_t>(1, (rows + kMaxCells - 1) / kMaxCells);
  const std::int64_t fb = std::max<std::int64_t>(1, (blocks + kMaxCells - 1) / kMaxCells);
  const std::int64_t gr = (rows + fr - 1) / fr, gb = (blocks + fb - 1) / fb;
  std::vector<std::uint8_t> cell(std::size_t(gr * gb), 0);
  std::int64_t bad_blocks = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::size_t i = std::size_t(r * blocks + b);
      if (i < m.mismatching.size() && m.mismatching[i] != 0) {
        cell[std::size_t((r / fr) * gb + b / fb)] = 1;
        ++bad_blocks;
      }
    }
  }

  // Cell size: the map within about 560 x 400 px; cells wider than tall (a block is 16 elements
  // of one row), 4 to 24 px wide and 3 to 14 px tall, with a 1 px gap where they are large.
  const int cw = int(std::clamp<std::int64_t>(560 / std::max<std::int64_t>(gb, 1), 4, 24));
  const int ch = int(std::clamp<std::int64_t>(400 / std::max<std::int64_t>(gr, 1), 3, 14));
  const int gx = cw >= 6 ? 1 : 0, gy = ch >= 6 ? 1 : 0;
  const int left = 52, top = 34, right = 8, bottom = 6;
  const std::int64_t w = std::max<std::int64_t>(left + gb * cw + right, left + 80), h = top + gr * ch + bottom;

  fmt::format_to(o, "<figure style=\"width:{}px\">\n", std::max<std::int64_t>(w, 300));
  fmt::format_to(o,
                 "<svg class=\"heatmap\" data-tensor=\"{}\" data-rows=\"{}\" data-blocks=\"{}\" "
                 "data-cell-rows=\"{}\" data-cell-blocks=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
                 "role=\"img\" aria-label=\"mismatching blocks of {}\">\n",
                 escape_markup(m.tensor), rows, blocks, fr, fb, w, h, w, h, escape_markup(m.tensor));
  // Axis labels and ticks (in original row / block indices).
  fmt::format_to(o, "<text class=\"axis\" x=\"{}\" y=\"11\">blocks &#8594;</text>\n", left);
  fmt::format_to(o, "<text class=\"axis\" x=\"2\" y=\"{}\">rows</text><text class=\"axis\" x=\"2\" y=\"{}\">&#8595;</text>\n",
                 top + 10, top + 24);
  auto ticks = [](std::int64_t n, int cs, int min_px) {
    // About one tick per 2 * min_px, on round numbers of cells, plus the last cell when it fits.
    std::vector<std::int64_t> t;
    if (n <= 0) return t;
    std::int64_t step = 1;
    for (const std::int64_t s : {1, 2, 4, 8, 16, 32, 64, 128})
      if (s * cs >= 2 * min_px || s == 128) {
        step = s;
        break;
      }
    for (std::int64_t i = 0; i < n; i += step) t.push_back(i);
    if (t.back() != n - 1 && (n - 1 - t.back()) * cs >= min_px) t.push_back(n - 1);
    return t;
  };
  for (const std::int64_t c : ticks(gb, cw, 36))
    fmt::format_to(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + c * cw + cw / 2, top - 5, c * fb);
  for (const std::int64_t r : ticks(gr, ch, 28))
    fmt::format_to(o, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left - 4, top + r * ch + ch / 2 + 4, r * fr);
  // One rect per (downsampled) block; mismatching ones carry a tooltip.
  for (std::int64_t r = 0; r < gr; ++r) {
    for (std::int64_t b = 0; b < gb; ++b) {
      const bool bad = cell[std::size_t(r * gb + b)] != 0;
      fmt::format_to(o, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"", left + b * cw, top + r * ch, cw - gx, ch - gy);
      if (!bad) {
        fmt::format_to(o, "/>");
      } else if (fr == 1 && fb == 1) {
        fmt::format_to(o, " class=\"m\"><title>row {} block {}</title></rect>", r, b);
      } else {
        fmt::format_to(o, " class=\"m\"><title>rows {}-{} blocks {}-{}</title></rect>", r * fr, std::min(rows, (r + 1) * fr) - 1,
                       b * fb, std::min(blocks, (b + 1) * fb) - 1);
      }
    }
    fmt::format_to(o, "\n");
  }
  fmt::format_to(o, "</svg>\n<figcaption><b class=\"mono\">{}</b>: {} rows &#215; {} blocks, {} mismatching block{}",
                 escape_markup(m.tensor), rows, blocks, bad_blocks, bad_blocks == 1 ? "" : "s");
  if (fr > 1 || fb > 1)
    fmt::format_to(o,
                   ". <b>Downsampled</b> to {} &#215; {} cells: each cell is {} row{} &#215; {} block{}, red if any of "
                   "them mismatches (OR)",
                   gr, gb, fr, fr == 1 ? "" : "s", fb, fb == 1 ? "" : "s");
  fmt::format_to(o, ".</figcaption>\n</figure>\n");
}

// ---------------------------------------------------------------------------------------------
// Failure page sections.

void section_maps(Out o, const compare::Explanation& e) {
  if (e.maps.empty()) return;
  fmt::format_to(o,
                 "<section id=\"heatmaps\">\n<h2>Mismatching blocks</h2>\n"
                 "<div class=\"legend\">one cell per 16-element block (or its scale byte)"
                 "<span class=\"sw\" style=\"background:var(--bad)\"></span>mismatch"
                 "<span class=\"sw\" style=\"background:var(--grey)\"></span>equal</div>\n"
                 "<div class=\"maps\">\n");
  for (const auto& m : e.maps) heatmap(o, m);
  fmt::format_to(o, "</div>\n</section>\n");
}

void section_kinds(Out o, const compare::Explanation& e, std::size_t total) {
  if (e.kind_counts.empty()) return;
  fmt::format_to(o,
                 "<section id=\"classification\">\n<h2>Classification</h2>\n"
                 "<table id=\"kinds\">\n<thead><tr><th>kind</th><th class=\"n\">count</th><th "
                 "class=\"n\">share</th></tr></thead>\n<tbody>\n");
  for (const auto& [kind, n] : e.kind_counts) {
    const double share = total == 0 ? 0.0 : 100.0 * double(n) / double(total);
    fmt::format_to(o, "<tr><td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1f}%</td></tr>\n",
                   escape_markup(compare::mismatch_kind_name(kind)), n, share);
  }
  fmt::format_to(o, "</tbody>\n</table>\n</section>\n");
}

void section_diffs(Out o, const std::vector<compare::TensorDiff>& diffs) {
  fmt::format_to(o, "<section id=\"diffs-section\">\n<h2>Differing outputs</h2>\n");
  if (diffs.empty()) {
    fmt::format_to(o, "<p class=\"muted\">no output tensor differs</p>\n</section>\n");
    return;
  }
  fmt::format_to(o,
                 "<table id=\"diffs\">\n<thead><tr><th>tensor</th><th class=\"n\">mismatches</th><th class=\"n\">first index</th>"
                 "<th>expected</th><th>actual</th><th>problem</th></tr></thead>\n<tbody>\n");
  for (const compare::TensorDiff& d : diffs) {
    fmt::format_to(o,
                   "<tr><td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"mono\">{}</td>"
                   "<td class=\"mono\">{}</td><td>{}</td></tr>\n",
                   escape_markup(d.tensor), d.mismatches,
                   d.problem.empty() && d.mismatches > 0 ? std::to_string(d.first_index) : "", escape_markup(d.first_expected),
                   escape_markup(d.first_actual), escape_markup(d.problem));
  }
  fmt::format_to(o, "</tbody>\n</table>\n</section>\n");
}

void section_mismatches(Out o, const compare::Explanation& e, std::size_t total) {
  if (e.mismatches.empty()) return;
  const std::size_t shown = std::min(e.mismatches.size(), kMaxMismatchRows);
  fmt::format_to(o, "<section id=\"mismatches-section\">\n<h2>First mismatches</h2>\n<p class=\"muted\">the first {} of {}",
                 shown, total);
  if (e.mismatches.size() < total) fmt::format_to(o, " (the explanation lists {})", e.mismatches.size());
  fmt::format_to(o,
                 "; data tensors: stored row and element column, block = col / 16; inputs as binary32; codes with "
                 "their E2M1 value, scale bytes with their E4M3 value.</p>\n");
  // Stochastically rounded cases add each element's random byte and the byte from which it rounds up.
  const bool sr =
      std::any_of(e.mismatches.begin(), e.mismatches.end(), [](const compare::ElementMismatch& m) { return m.sr.has_value(); });
  if (sr)
    fmt::format_to(o,
                   "<p class=\"muted\">stochastic rounding: r8 is the element's random byte (§3.18.3); it rounds up "
                   "iff r8 &#8805; its threshold (256: never, the value is on the grid).</p>\n");
  fmt::format_to(o,
                 "<div class=\"scroll\"><table id=\"mismatches\">\n<thead><tr><th class=\"n\">#</th><th>tensor</th>"
                 "<th class=\"n\">row</th><th class=\"n\">col</th><th class=\"n\">block</th><th class=\"n\">input</th>"
                 "<th class=\"n\">input bits</th><th class=\"n\">expected</th><th class=\"n\">actual</th>{}<th>kind</th></tr>"
                 "</thead>\n<tbody>\n",
                 sr ? "<th class=\"n\">r8</th><th class=\"n\">threshold</th>" : "");
  for (std::size_t i = 0; i < shown; ++i) {
    const compare::ElementMismatch& m = e.mismatches[i];
    const bool data = is_data_tensor(m.tensor);
    std::string input, input_bits, expected, actual, block;
    if (data) {
      input = dec(m.input_bits);
      input_bits = hex32(m.input_bits);
      expected = code_text(m.expected);
      actual = code_text(m.actual);
      block = std::to_string(m.col / 16);
    } else if (is_scale_tensor(m.tensor)) {
      expected = byte_text(m.expected);
      actual = byte_text(m.actual);
      block = std::to_string(m.col);
    } else {
      expected = fmt::format("0x{:02X}", m.expected);
      actual = fmt::format("0x{:02X}", m.actual);
    }
    std::string sr_cells;
    if (sr)
      sr_cells = m.sr ? fmt::format("<td class=\"n\">{}</td><td class=\"n\">{}</td>", m.sr->random_byte, m.sr->threshold)
                      : "<td></td><td></td>";
    fmt::format_to(o,
                   "<tr><td class=\"n\">{}</td><td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                   "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                   "<td class=\"n bad\">{}</td>{}<td class=\"mono\">{}</td></tr>\n",
                   i, escape_markup(m.tensor), m.row, m.col, block, escape_markup(input), input_bits, escape_markup(expected),
                   escape_markup(actual), sr_cells, escape_markup(compare::mismatch_kind_name(m.kind)));
  }
  fmt::format_to(o, "</tbody>\n</table></div>\n</section>\n");
}

void trace(Out o, const compare::BlockTrace& t, std::size_t index) {
  fmt::format_to(
      o,
      "<div class=\"trace\" id=\"trace-{}\">\n<h3>{} row {}, block {} <span class=\"muted\">(elements {}&#8211;{})</span></h3>\n",
      index, escape_markup(t.direction), t.row, t.block, t.block * 16, t.block * 16 + 15);
  // The intermediates in one row: decimal (%.9g) over binary32 bits.
  const std::pair<const char*, float> values[] = {
      {"global amax", t.global_amax}, {"S", t.S}, {"Sd", t.Sd}, {"block amax", t.block_amax}, {"pre-cast scale", t.precast}};
  fmt::format_to(o, "<table class=\"inter\">\n<thead><tr>");
  for (const auto& [name, v] : values) fmt::format_to(o, "<th class=\"n\">{}</th>", name);
  fmt::format_to(o, "<th class=\"n\">scale byte (E4M3)</th><th class=\"n\">encode factor</th></tr></thead>\n<tbody><tr>");
  auto cell = [&](float v) {
    fmt::format_to(o, "<td class=\"n\"><span class=\"d\">{}</span><span class=\"h\">{}</span></td>", escape_markup(dec(v)),
                   hex32(v));
  };
  for (const auto& [name, v] : values) cell(v);
  fmt::format_to(o, "<td class=\"n\"><span class=\"d\">{}</span><span class=\"h\">0x{:02X}</span></td>",
                 escape_markup(dec(e4m3_decode(t.scale_byte))), t.scale_byte);
  cell(t.encode_factor);
  fmt::format_to(o, "</tr></tbody>\n</table>\n");

  const std::size_t n = std::max({t.inputs.size(), t.scaled.size(), t.expected_codes.size(), t.actual_codes.size()});
  if (n == 0) {
    fmt::format_to(o, "</div>\n");
    return;
  }
  auto differs = [&](std::size_t j) {
    return j < t.expected_codes.size() && j < t.actual_codes.size() && t.expected_codes[j] != t.actual_codes[j];
  };
  fmt::format_to(o, "<div class=\"scroll\"><table class=\"elems\">\n<thead><tr><th></th>");
  for (std::size_t j = 0; j < n; ++j)
    fmt::format_to(o, "<th class=\"n{}\">{}</th>", differs(j) ? " bad" : "", std::int64_t(j) + t.block * 16);
  fmt::format_to(o, "</tr></thead>\n<tbody>\n");
  auto float_row = [&](std::string_view name, const std::vector<float>& v, bool mark_ties) {
    fmt::format_to(o, "<tr><th scope=\"row\">{}</th>", name);
    for (std::size_t j = 0; j < n; ++j) {
      if (j < v.size())
        fmt::format_to(o, "<td{}>{}</td>",
                       differs(j)                    ? " class=\"bad\""
                       : mark_ties && e2m1_tie(v[j]) ? " class=\"tie\""
                                                     : "",
                       float_cell(v[j]));
      else
        fmt::format_to(o, "<td></td>");
    }
    fmt::format_to(o, "</tr>\n");
  };
  auto code_row = [&](std::string_view name, const std::vector<std::uint8_t>& v) {
    fmt::format_to(o, "<tr><th scope=\"row\">{}</th>", name);
    for (std::size_t j = 0; j < n; ++j) {
      if (j < v.size())
        fmt::format_to(o, "<td class=\"code{}\"><span class=\"d\">0x{:X}</span><span class=\"h\">{}</span></td>",
                       differs(j) ? " bad" : "", v[j] & 0xF, escape_markup(dec(e2m1_decode(v[j] & 0xF))));
      else
        fmt::format_to(o, "<td></td>");
    }
    fmt::format_to(o, "</tr>\n");
  };
  auto int_row = [&](std::string_view name, auto value) {
    fmt::format_to(o, "<tr><th scope=\"row\">{}</th>", name);
    for (std::size_t j = 0; j < n; ++j)
      fmt::format_to(o, "<td class=\"n{}\">{}</td>", differs(j) ? " bad" : "",
                     j < t.sr.size() ? std::to_string(value(t.sr[j])) : "");
    fmt::format_to(o, "</tr>\n");
  };
  float_row("input x", t.inputs, false);
  float_row("scaled y", t.scaled, true);
  if (!t.sr.empty()) {  // stochastic rounding: y rounds up iff r8 >= threshold
    int_row("random byte r8", [](const compare::SrElement& s) { return int(s.random_byte); });
    int_row("rounds up from r8", [](const compare::SrElement& s) { return s.threshold; });
  }
  code_row("expected", t.expected_codes);
  code_row("actual", t.actual_codes);
  fmt::format_to(o, "</tbody>\n</table></div>\n</div>\n");
}

void section_traces(Out o, const compare::Explanation& e) {
  if (e.traces.empty()) return;
  fmt::format_to(o,
                 "<section id=\"traces\">\n<h2>Reference intermediates of the first mismatching blocks</h2>\n"
                 "<p class=\"note\"><span class=\"sw\" style=\"background:var(--bad-bg);outline:2px solid var(--bad)\"></span> "
                 "expected &#8800; actual &#160; <span class=\"sw\" style=\"background:var(--tie)\"></span> y on an E2M1 "
                 "rounding tie &#160; element values: the shortest decimal that reads back as the same binary32, its bits "
                 "below; intermediates: %.9g and bits</p>\n");
  for (std::size_t i = 0; i < e.traces.size(); ++i) trace(o, e.traces[i], i);
  fmt::format_to(o, "</section>\n");
}

// The Hadamard transform's mismatching outputs: the 16 inputs, the exact sum and both roundings.
void section_rht(Out o, const compare::Explanation& e) {
  if (e.rht_traces.empty()) return;
  fmt::format_to(o,
                 "<section id=\"rht-traces\">\n<h2>Transform sums of the first mismatching outputs</h2>\n"
                 "<p class=\"note\">x_t[row][col] is output col % 16 of the 16-vector x[16&#183;(col / 16) + k][row], "
                 "k = 0..15 (§3.19): the exact sum of the 16 signed products, rounded to binary32, then to BF16. "
                 "&#8220;single rounding&#8221; is the exact sum rounded straight to BF16, which the definition does not "
                 "do.</p>\n<div class=\"scroll\"><table id=\"rht\">\n<thead><tr><th>tensor</th><th class=\"n\">row</th>"
                 "<th class=\"n\">col</th><th class=\"n\">mask</th><th>exact sum</th><th class=\"n\">binary32</th>"
                 "<th class=\"n\">expected BF16</th><th class=\"n\">actual</th><th class=\"n\">single rounding</th>"
                 "<th>inputs</th></tr></thead>\n<tbody>\n");
  for (const compare::RhtTrace& t : e.rht_traces) {
    std::string inputs;
    for (std::size_t k = 0; k < t.inputs.size(); ++k) inputs += (k ? " " : "") + fmt::format("{}", t.inputs[k]);
    fmt::format_to(o,
                   "<tr><td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">0x{:04X}</td>"
                   "<td class=\"mono\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n bad\">{}</td>"
                   "<td class=\"n\">{}</td><td class=\"mono\">{}</td></tr>\n",
                   escape_markup(t.tensor), t.row, t.col, t.mask, escape_markup(t.exact_sum), float_cell(t.binary32),
                   float_cell(t.expected), float_cell(t.actual), float_cell(t.single_rounding), escape_markup(inputs));
  }
  fmt::format_to(o, "</tbody>\n</table></div>\n</section>\n");
}

void section_inputs(Out o, const cases::Case& c) {
  if (c.inputs.empty()) return;
  fmt::format_to(o, "<p class=\"meta\">inputs:");
  bool first = true;
  for (const auto& [name, t] : c.inputs) {
    std::string shape;
    for (std::size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
    fmt::format_to(o, "{} <b class=\"mono\">{}</b> {} [{}]", first ? "" : ",", escape_markup(name),
                   escape_markup(io::dtype_name(t.dtype)), shape);
    first = false;
  }
  fmt::format_to(o, "</p>\n");
}

// The fault catalogue's patterns (and profiles, knob variants) that reproduce the actual outputs, best first.
void section_causes(Out o, const compare::Explanation& e) {
  if (e.causes.empty()) return;
  fmt::format_to(o,
                 "<section id=\"causes-section\">\n<h2>Causes</h2>\n<table id=\"causes\">\n"
                 "<tr><th>#</th><th>cause</th><th>what the kernel does</th><th>reproduces</th></tr>\n");
  for (std::size_t i = 0; i < e.causes.size(); ++i)
    fmt::format_to(o, "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n", i + 1,
                   escape_markup(e.causes[i].name), escape_markup(e.causes[i].summary),
                   e.causes[i].exact ? "every output byte" : "every differing byte");
  fmt::format_to(o, "</table>\n</section>\n");
}

}  // namespace

std::string render_failure(const FailureReport& r) {
  const compare::Explanation& e = r.explanation;
  const std::size_t total = total_mismatches(r);
  std::string html;
  html.reserve(64 * 1024);
  Out o(html);
  page_head(o, r.title.empty() ? "nvfp4-verify failure" : r.title);

  fmt::format_to(o, "<header>\n<h1><span class=\"badge fail\">FAIL</span>{}</h1>\n", escape_markup(r.title));
  fmt::format_to(o, "<p class=\"meta\">backends: <b>{}</b> &#183; operation <b>{}</b> &#183; profile <b>{}</b></p>\n",
                 escape_markup(r.backends), escape_markup(r.c.op), escape_markup(cases::case_profile_name(r.c)));
  section_inputs(o, r.c);
  fmt::format_to(o, "<p class=\"count\"><span id=\"mismatch-count\">{}</span> mismatching element{} / byte{}</p>\n", total,
                 total == 1 ? "" : "s", total == 1 ? "" : "s");
  fmt::format_to(o, "<p class=\"verdict\" id=\"verdict\">{}</p>\n",
                 e.verdict.empty()
                     ? std::string("no catalogue pattern, profile or single-knob variant reproduces the actual outputs")
                     : escape_markup(e.verdict));
  fmt::format_to(o,
                 "<div class=\"replay\"><span class=\"muted\">replay</span><code id=\"replay\">{}</code>"
                 "<button type=\"button\" "
                 "onclick=\"navigator.clipboard.writeText(document.getElementById('replay').textContent)\">copy</button></div>\n"
                 "</header>\n",
                 escape_markup(r.replay_command));

  section_causes(o, e);
  fmt::format_to(o, "{}", render_ulp_reports(r.ulp));
  section_maps(o, e);
  fmt::format_to(o, "<div class=\"row\">\n");
  section_kinds(o, e, total);
  section_diffs(o, r.diffs);
  fmt::format_to(o, "</div>\n");
  section_mismatches(o, e, total);
  section_traces(o, e);
  section_rht(o, e);

  fmt::format_to(o, "<section id=\"case-section\">\n<h2>Case</h2>\n<pre id=\"case\">{}</pre>\n</section>\n",
                 escape_markup(r.case_description));
  page_tail(o);
  return html;
}

void write_page(const std::filesystem::path& dir, const std::string& name, const std::string& html) {
  const std::filesystem::path path = dir / name;
  if (name.empty() || name.find('/') != std::string::npos)
    throw OutputError(fmt::format("cannot write report {}: invalid page name", path.string()));
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec)
    throw OutputError(
        fmt::format("cannot write report {}: cannot create directory {}: {}", path.string(), dir.string(), ec.message()));
  io::write_file_atomic(path, html);
}

}  // namespace nvfp4::reports
