// The HTML reports as text: escaping, the ids other tools and the browser test rely on, the
// counts, one heatmap rect per block (or per downsampled cell), the ULP sections of GEMM outputs,
// no external reference, and the atomic page writer.
#include <gtest/gtest.h>

#include "cases/registry.h"

#include "tests/support/html_text.h"
#include "tests/support/temp_dir.h"

#include <bit>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "reports/report.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using nvfp4::test_support::between;
using nvfp4::test_support::count;
using nvfp4::test_support::text_of;

compare::Explanation::BlockMap block_map(std::string tensor, std::int64_t rows, std::int64_t blocks,
                                         std::vector<std::pair<std::int64_t, std::int64_t>> bad) {
  compare::Explanation::BlockMap m;
  m.tensor = std::move(tensor);
  m.rows = rows;
  m.blocks = blocks;
  m.mismatching.assign(std::size_t(rows * blocks), 0);
  for (const auto& [r, b] : bad) m.mismatching[std::size_t(r * blocks + b)] = 1;
  return m;
}

reports::FailureReport sample_failure(std::size_t listed = 70, std::size_t total = 123) {
  reports::FailureReport r;
  r.title = "quantize te 48x80 bf16: device != reference";
  r.case_description = "{\n  \"operation\": \"quantize\",\n  \"profile\": \"te\"\n}";
  r.replay_command = "nvfp4-verify replay corpora/case-0001.safetensors";
  r.backends = "reference vs device";
  r.c = cases::make_case("quantize");
  io::Tensor x;
  x.dtype = io::DType::BF16;
  x.shape = {48, 80};
  x.bytes.assign(48 * 80 * 2, 0);
  r.c.inputs["x"] = x;
  for (std::size_t i = 0; i < listed; ++i) {
    compare::ElementMismatch m;
    m.tensor = "data";
    m.row = std::int64_t(i / 5);
    m.col = std::int64_t(16 * (i % 5) + 3);
    m.input_bits = std::bit_cast<std::uint32_t>(1.25f);
    m.expected = 0x2;
    m.actual = 0x3;
    m.kind = compare::MismatchKind::kTieFlipped;
    r.explanation.mismatches.push_back(m);
  }
  r.explanation.total_mismatches = total;
  r.explanation.maps.push_back(block_map("data", 48, 5, {{3, 1}, {3, 2}, {17, 4}}));
  r.explanation.maps.push_back(block_map("scale", 48, 5, {{17, 4}}));
  compare::BlockTrace t;
  t.direction = "rowwise";
  t.row = 3;
  t.block = 1;
  t.global_amax = 10.0f;
  t.S = 268.8f;
  t.Sd = 0.00372023811f;
  t.block_amax = 7.5f;
  t.precast = 4.6875f;
  t.scale_byte = 0x4A;
  t.encode_factor = 0.2f;
  for (int j = 0; j < 16; ++j) {
    t.inputs.push_back(0.25f * float(j));
    t.scaled.push_back(0.5f * float(j));
    t.expected_codes.push_back(std::uint8_t(j % 8));
    t.actual_codes.push_back(std::uint8_t(j == 5 || j == 9 ? (j + 1) % 8 : j % 8));
  }
  r.explanation.traces.push_back(t);
  r.explanation.kind_counts = {{compare::MismatchKind::kTieFlipped, 120}, {compare::MismatchKind::kScaleOffByOneCode, 3}};
  r.explanation.verdict = "actual matches profile te-2.13 on 3/3 mismatching blocks";
  compare::TensorDiff d;
  d.tensor = "data";
  d.mismatches = 120;
  d.first_index = 26;
  d.first_expected = "0x32";
  d.first_actual = "0x33";
  r.diffs.push_back(d);
  compare::TensorDiff s;
  s.tensor = "scale";
  s.mismatches = 3;
  s.first_index = 1089;
  s.first_expected = "0x4A";
  s.first_actual = "0x4B";
  r.diffs.push_back(s);
  return r;
}

reports::Summary sample_summary(std::size_t passed, std::size_t failed) {
  reports::Summary s;
  s.title = "nvfp4-verify gate";
  s.backends = "reference vs device";
  s.seconds = 12.5;
  for (std::size_t i = 0; i < passed; ++i)
    s.entries.push_back(
        {fmt::format("case-{:04}", i), i % 2 ? "quantize" : "dequantize", i % 3 ? "te" : "torchao", true, "ok", ""});
  for (std::size_t i = 0; i < failed; ++i)
    s.entries.push_back({fmt::format("bad-{:04}", i), "quantize", "te", false, fmt::format("data: {} mismatches", i + 1),
                         fmt::format("failures/bad-{:04}.html", i)});
  return s;
}

void expect_self_contained(const std::string& html) {
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(ReportFailure, HasTheIdsAndSections) {
  const std::string html = reports::render_failure(sample_failure());
  for (const char* id : {"replay", "verdict", "mismatches", "mismatch-count", "case", "diffs", "kinds"})
    EXPECT_EQ(count(html, fmt::format("id=\"{}\"", id)), 1u) << id;
  EXPECT_NE(html.find("<title>quantize te 48x80 bf16: device != reference</title>"), std::string::npos);
  EXPECT_NE(html.find("reference vs device"), std::string::npos);
  EXPECT_EQ(text_of(html, "replay"), "nvfp4-verify replay corpora/case-0001.safetensors");
  EXPECT_EQ(text_of(html, "verdict"), "actual matches profile te-2.13 on 3/3 mismatching blocks");
  EXPECT_NE(html.find("<pre id=\"case\">{\n  &quot;operation&quot;: &quot;quantize&quot;"), std::string::npos);
}

TEST(ReportFailure, CountsAndFirst64Mismatches) {
  const std::string html = reports::render_failure(sample_failure(70, 123));
  EXPECT_EQ(text_of(html, "mismatch-count"), "123");
  const std::string_view table = between(html, "id=\"mismatches\"", "</table>");
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(count(between(table, "<tbody>", "</tbody>"), "<tr>"), 64u);

  const std::string few = reports::render_failure(sample_failure(5, 5));
  EXPECT_EQ(text_of(few, "mismatch-count"), "5");
  EXPECT_EQ(count(between(between(few, "id=\"mismatches\"", "</table>"), "<tbody>", "</tbody>"), "<tr>"), 5u);
}

TEST(ReportFailure, MismatchRowShowsInputExpectedActualAndKind) {
  reports::FailureReport r = sample_failure(0, 0);
  compare::ElementMismatch m;
  m.tensor = "data_t";
  m.row = 7;
  m.col = 37;
  m.input_bits = 0x3FA00001u;  // 1.25000012
  m.expected = 0x3;
  m.actual = 0xC;
  m.kind = compare::MismatchKind::kRoundingOther;
  r.explanation.mismatches.push_back(m);
  compare::ElementMismatch s;
  s.tensor = "scale";
  s.row = 2;
  s.col = 4;
  s.expected = 0x4A;
  s.actual = 0x4B;
  s.kind = compare::MismatchKind::kScaleOffByOneCode;
  r.explanation.mismatches.push_back(s);
  r.explanation.total_mismatches = 2;
  const std::string html = reports::render_failure(r);
  const std::string row = std::string(between(between(html, "id=\"mismatches\"", "</table>"), "<tbody>", "</tr>"));
  EXPECT_NE(row.find(">data_t<"), std::string::npos) << row;
  EXPECT_NE(row.find(">7<"), std::string::npos) << row;
  EXPECT_NE(row.find(">37<"), std::string::npos) << row;
  EXPECT_NE(row.find(">2<"), std::string::npos) << row;  // block 37 / 16
  EXPECT_NE(row.find(">1.25000012<"), std::string::npos) << row;
  EXPECT_NE(row.find(">0x3FA00001<"), std::string::npos) << row;
  EXPECT_NE(row.find(">0x3 (1.5)<"), std::string::npos) << row;
  EXPECT_NE(row.find(">0xC (-2)<"), std::string::npos) << row;
  EXPECT_NE(row.find(std::string(compare::mismatch_kind_name(compare::MismatchKind::kRoundingOther))), std::string::npos) << row;
  // The scale byte row: hex bytes with their E4M3 values (0x4A = 1.25 * 2^2 = 5, 0x4B = 5.5).
  EXPECT_NE(html.find(">0x4A (5)<"), std::string::npos);
  EXPECT_NE(html.find(">0x4B (5.5)<"), std::string::npos);
}

TEST(ReportFailure, ClassificationTable) {
  const std::string html = reports::render_failure(sample_failure());
  const std::string_view table = between(html, "id=\"kinds\"", "</table>");
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(count(between(table, "<tbody>", "</tbody>"), "<tr>"), 2u);
  EXPECT_NE(
      table.find(fmt::format(">{}</td><td class=\"n\">120<", compare::mismatch_kind_name(compare::MismatchKind::kTieFlipped))),
      std::string::npos)
      << table;
  EXPECT_NE(table.find(fmt::format(">{}</td><td class=\"n\">3<",
                                   compare::mismatch_kind_name(compare::MismatchKind::kScaleOffByOneCode))),
            std::string::npos)
      << table;
}

TEST(ReportFailure, DiffSummaryOneRowPerTensor) {
  const std::string html = reports::render_failure(sample_failure());
  const std::string_view table = between(html, "id=\"diffs\"", "</table>");
  EXPECT_EQ(count(between(table, "<tbody>", "</tbody>"), "<tr>"), 2u);
  EXPECT_NE(table.find("0x4B"), std::string::npos);
  EXPECT_NE(table.find(">1089<"), std::string::npos);
}

TEST(ReportFailure, HeatmapHasOneRectPerBlock) {
  const std::string html = reports::render_failure(sample_failure());
  EXPECT_EQ(count(html, "<svg class=\"heatmap\""), 2u);
  const std::string_view data = between(html, "<svg class=\"heatmap\" data-tensor=\"data\"", "</svg>");
  ASSERT_FALSE(data.empty());
  EXPECT_EQ(count(data, "<rect"), 48u * 5u);
  EXPECT_EQ(count(data, "class=\"m\""), 3u);
  EXPECT_NE(data.find("<title>row 17 block 4</title>"), std::string::npos);
  const std::string_view scale = between(html, "<svg class=\"heatmap\" data-tensor=\"scale\"", "</svg>");
  EXPECT_EQ(count(scale, "<rect"), 48u * 5u);
  EXPECT_EQ(count(scale, "class=\"m\""), 1u);
  // Axis labels.
  EXPECT_NE(data.find("blocks"), std::string::npos);
  EXPECT_NE(data.find("rows"), std::string::npos);
  EXPECT_EQ(html.find("Downsampled"), std::string::npos);
}

TEST(ReportFailure, LargeHeatmapIsDownsampledWithOr) {
  reports::FailureReport r = sample_failure();
  // 300 x 200 blocks -> groups of 3 rows x 2 blocks -> 100 x 100 cells.
  r.explanation.maps = {block_map("data", 300, 200, {{0, 0}, {1, 1}, {299, 199}, {150, 7}})};
  const std::string html = reports::render_failure(r);
  const std::string_view svg = between(html, "<svg class=\"heatmap\"", "</svg>");
  EXPECT_EQ(count(svg, "<rect"), 100u * 100u);
  EXPECT_EQ(count(svg, "class=\"m\""), 3u);  // (0,0) and (1,1) fall into the same cell
  EXPECT_NE(svg.find("<title>rows 297-299 blocks 198-199</title>"), std::string::npos);
  EXPECT_NE(svg.find("data-cell-rows=\"3\" data-cell-blocks=\"2\""), std::string::npos);
  EXPECT_NE(html.find("Downsampled</b> to 100 &#215; 100 cells"), std::string::npos);

  // Exactly 128 is kept; 129 rows become 65 cells of 2 rows.
  r.explanation.maps = {block_map("data", 128, 128, {}), block_map("scale", 129, 1, {{128, 0}})};
  const std::string two = reports::render_failure(r);
  EXPECT_EQ(count(between(two, "data-tensor=\"data\"", "</svg>"), "<rect"), 128u * 128u);
  EXPECT_EQ(count(between(two, "data-tensor=\"scale\"", "</svg>"), "<rect"), 65u);
  EXPECT_EQ(count(between(two, "data-tensor=\"scale\"", "</svg>"), "class=\"m\""), 1u);
}

TEST(ReportFailure, BlockTraceTable) {
  const std::string html = reports::render_failure(sample_failure());
  const std::string_view trace = between(html, "id=\"trace-0\"", "</table></div>");
  ASSERT_FALSE(trace.empty());
  EXPECT_NE(trace.find("rowwise row 3, block 1"), std::string::npos);
  // Intermediates in decimal and hex bits.
  EXPECT_NE(trace.find(">268.799988<"), std::string::npos);
  EXPECT_NE(trace.find(fmt::format(">0x{:08X}<", std::bit_cast<std::uint32_t>(268.8f))), std::string::npos);
  EXPECT_NE(trace.find(fmt::format(">0x{:08X}<", std::bit_cast<std::uint32_t>(0.00372023811f))), std::string::npos);
  EXPECT_NE(trace.find(">0x4A<"), std::string::npos);
  // 16 columns: header, then input, scaled, expected, actual rows.
  const std::string_view elems = between(trace, "<table class=\"elems\">", "</table>");
  EXPECT_EQ(count(between(elems, "<thead>", "</thead>"), "<th class=\"n"), 16u);
  EXPECT_EQ(count(between(elems, "<tbody>", "</tbody>"), "<tr>"), 4u);
  EXPECT_EQ(count(between(elems, "<tbody>", "</tbody>"), "<td"), 64u);
  EXPECT_NE(elems.find(">16<"), std::string::npos);  // first element column of block 1
  EXPECT_NE(elems.find(">31<"), std::string::npos);
  // Elements 5 and 9 differ: highlighted in the header and the 4 rows.
  EXPECT_EQ(count(elems, " bad\""), 2u * 3u);         // header + 2 code rows
  EXPECT_EQ(count(elems, "class=\"bad\""), 2u * 2u);  // input and scaled rows
}

// Stochastic rounding: the mismatch table gains each element's random byte and threshold, the
// block trace a row of each.
TEST(ReportFailure, StochasticRoundingShowsRandomByteAndThreshold) {
  reports::FailureReport r = sample_failure(3, 3);
  for (std::size_t i = 0; i < r.explanation.mismatches.size(); ++i)
    r.explanation.mismatches[i].sr = compare::SrElement{std::uint8_t(200 + i), 103};
  for (int j = 0; j < 16; ++j) r.explanation.traces[0].sr.push_back({std::uint8_t(j * 11), j == 5 ? 77 : 256});
  const std::string html = reports::render_failure(r);
  const std::string_view table = between(html, "id=\"mismatches\"", "</table>");
  EXPECT_NE(table.find("<th class=\"n\">r8</th><th class=\"n\">threshold</th>"), std::string::npos);
  const std::string_view first = between(between(table, "<tbody>", "</tbody>"), "<tr>", "</tr>");
  EXPECT_NE(first.find("<td class=\"n\">200</td><td class=\"n\">103</td>"), std::string::npos) << first;
  const std::string_view elems =
      between(between(html, "id=\"trace-0\"", "</table></div>"), "<table class=\"elems\">", "</table>");
  EXPECT_EQ(count(between(elems, "<tbody>", "</tbody>"), "<tr>"), 6u);
  EXPECT_NE(elems.find("random byte r8"), std::string::npos);
  EXPECT_NE(elems.find("<td class=\"n bad\">55</td>"), std::string::npos);  // element 5's byte, highlighted
  EXPECT_NE(elems.find("<td class=\"n bad\">77</td>"), std::string::npos);  // and its threshold
  // Without stochastic rounding, neither the columns nor the rows.
  const std::string rn = reports::render_failure(sample_failure(3, 3));
  EXPECT_EQ(rn.find(">r8<"), std::string::npos);
  EXPECT_EQ(rn.find("random byte r8"), std::string::npos);
}

TEST(ReportFailure, RhtSectionShowsTheExactSumAndBothRoundings) {
  reports::FailureReport r = sample_failure(0, 1);
  compare::RhtTrace t;
  t.tensor = "x_t";
  t.row = 1;
  t.col = 16;
  t.mask = 0xD7E8;
  t.inputs.assign(16, 0.0f);
  t.inputs[0] = 1.0f;
  t.exact_sum = "0x1.0100000004p-2";
  t.binary32 = std::bit_cast<float>(0x3E808000u);
  t.expected = 0.25f;
  t.actual = t.single_rounding = std::bit_cast<float>(0x3E810000u);
  r.explanation.rht_traces.push_back(t);
  const std::string html = reports::render_failure(r);
  const std::string_view row = between(between(html, "id=\"rht\"", "</table>"), "<tbody>", "</tbody>");
  EXPECT_EQ(count(row, "<tr>"), 1u);
  for (const char* want : {">0x1.0100000004p-2<", ">0x3E808000<", ">0x3E800000<", ">0x3E810000<", ">0xD7E8<", ">x_t<"})
    EXPECT_NE(row.find(want), std::string::npos) << want << " in " << row;
  EXPECT_EQ(reports::render_failure(sample_failure()).find("id=\"rht\""), std::string::npos);
}

TEST(ReportFailure, EscapesAllText) {
  reports::FailureReport r = sample_failure(3, 3);
  const std::string evil = "<script>alert('x')</script>";
  r.title = evil;
  r.backends = evil;
  r.case_description = evil;
  r.replay_command = "nvfp4-verify replay 'a&b' \"<c>\"";
  r.explanation.verdict = evil;
  r.explanation.maps[0].tensor = evil;
  for (auto& m : r.explanation.mismatches) m.tensor = evil;
  r.explanation.traces[0].direction = evil;
  r.diffs[0].tensor = evil;
  r.diffs[1].problem = evil;
  r.diffs[1].first_expected = evil;
  r.c.params.set("profile", evil);
  r.c.inputs[evil] = r.c.inputs["x"];
  const std::string html = reports::render_failure(r);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("alert('x')"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("data-tensor=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\""), std::string::npos);
  EXPECT_EQ(text_of(html, "replay"), "nvfp4-verify replay &#39;a&amp;b&#39; &quot;&lt;c&gt;&quot;");
  expect_self_contained(html);
}

TEST(ReportFailure, NoExternalReference) {
  expect_self_contained(reports::render_failure(sample_failure()));
  expect_self_contained(reports::render_failure(reports::FailureReport{}));
}

TEST(ReportFailure, WithoutElementExplanationCountsTheDiffs) {
  reports::FailureReport r = sample_failure();
  r.explanation = compare::Explanation{};
  const std::string html = reports::render_failure(r);
  EXPECT_EQ(text_of(html, "mismatch-count"), "123");
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("id=\"verdict\""), std::string::npos);
}

// A GEMM output of 300 x 200 F32 elements, all 1.0 except: 7 ulps at [0, 1], 1 ulp at [2, 0]
// (both in cell (0, 0) of 3 x 2 elements), a NaN mismatch at [299, 199].
compare::UlpReport gemm_ulp_report(std::optional<std::uint64_t> bound) {
  std::vector<std::uint32_t> e(300 * 200, 0x3F800000u), a = e;
  a[0 * 200 + 1] += 7;
  a[2 * 200 + 0] += 1;
  a[299 * 200 + 199] = 0x7FC00000u;
  return compare::ulp_report("d", io::make_tensor_from<std::uint32_t>(io::DType::F32, {300, 200}, e),
                             io::make_tensor_from<std::uint32_t>(io::DType::F32, {300, 200}, a), bound);
}

TEST(ReportFailure, UlpSectionHasTheHeatmapHistogramAndWorstElements) {
  reports::FailureReport r = sample_failure();
  EXPECT_EQ(reports::render_failure(r).find("id=\"ulp\""), std::string::npos);  // only GEMM outputs have one
  r.ulp = {gemm_ulp_report(3)};
  const std::string html = reports::render_failure(r);
  const std::string_view section = between(html, "<section id=\"ulp\">", "</section>\n<section id=\"heatmaps\">");
  ASSERT_FALSE(section.empty());
  // 300 x 200 elements in cells of 3 x 2: 100 x 100 rects, coloured by the largest distance.
  const std::string_view svg = between(section, "<svg class=\"ulpmap\"", "</svg>");
  EXPECT_NE(svg.find("data-tensor=\"d\" data-rows=\"300\" data-cols=\"200\" data-cell-rows=\"3\" data-cell-cols=\"2\""),
            std::string::npos);
  EXPECT_EQ(count(svg, "<rect"), 100u * 100u);
  EXPECT_EQ(count(svg, "fill=\"#e4e4e7\""), 100u * 100u - 2);
  EXPECT_NE(svg.find("fill=\"#fc4e2a\"><title>rows 0-2, columns 0-1: max 7 ulps</title>"), std::string::npos);  // 5-8
  EXPECT_NE(svg.find("fill=\"#111111\"><title>rows 297-299, columns 198-199: max nan ulps</title>"), std::string::npos);
  EXPECT_NE(section.find("Downsampled</b> to 100 &#215; 100 cells of 3 &#215; 2 elements"), std::string::npos);
  // The histogram: one row per non-empty bucket (0, 1, 5-8, nan).
  const std::string_view hist = between(section, "class=\"ulp-histogram\" data-tensor=\"d\"", "</table>");
  EXPECT_EQ(count(hist, "<tr><td class=\"mono\">"), 4u);
  EXPECT_NE(hist.find(">5-8</td><td class=\"n\">1</td>"), std::string::npos);
  EXPECT_NE(hist.find(">0</td><td class=\"n\">59997</td>"), std::string::npos);
  // The worst elements, worst first, with exact and actual values and their bits.
  const std::string_view worst = between(section, "class=\"ulp-worst\" data-tensor=\"d\"", "</table>");
  EXPECT_EQ(count(between(worst, "<tbody>", "</tbody>"), "<tr>"), 3u);
  EXPECT_LT(worst.find(">nan</td>"), worst.find(">7</td>"));
  EXPECT_NE(worst.find("<span class=\"d\">1.0000008</span><span class=\"h\">0x3F800007</span>"), std::string::npos);
  // The bound's verdict: two elements beyond 3 ulps.
  EXPECT_NE(section.find("--max-ulp 3: 2 elements beyond it"), std::string::npos);
  expect_self_contained(html);
}

TEST(ReportSummary, UlpTotalsOfTheRun) {
  EXPECT_EQ(reports::render_summary(sample_summary(3, 0)).find("ulp-totals"), std::string::npos);
  reports::Summary s = sample_summary(3, 1);
  compare::UlpTotals t;
  t.bound = 3;
  t.add(gemm_ulp_report(3), "case-<1>");
  s.ulp = t;
  const std::string html = reports::render_summary(s);
  const std::string_view section = between(html, "<section id=\"ulp-totals\">", "</section>");
  ASSERT_FALSE(section.empty());
  EXPECT_NE(section.find("60000 elements of 1 output tensor: max 7 ulps"), std::string::npos) << section;
  EXPECT_NE(section.find("--max-ulp 3: 1 output tensor beyond it"), std::string::npos) << section;
  EXPECT_EQ(count(between(between(section, "id=\"ulp-histogram\"", "</table>"), "<tbody>", "</tbody>"), "<tr>"), 4u);
  const std::string_view worst = between(section, "id=\"ulp-worst\"", "</table>");
  EXPECT_EQ(count(worst, "case-&lt;1&gt;"), 3u);  // the case of each element, escaped
  expect_self_contained(html);
}

TEST(ReportSummary, TotalsGroupsAndFailures) {
  reports::Summary s = sample_summary(10, 3);
  const std::string html = reports::render_summary(s);
  EXPECT_EQ(text_of(html, "total-cases"), "13");
  EXPECT_EQ(text_of(html, "failed-cases"), "3");
  EXPECT_EQ(text_of(html, "passed-cases"), "10");
  EXPECT_NE(html.find("reference vs device"), std::string::npos);
  EXPECT_NE(html.find(">12.5<"), std::string::npos);
  // Groups: dequantize/te, dequantize/torchao, quantize/te, quantize/torchao.
  const std::string_view groups = between(html, "id=\"groups\"", "</table>");
  EXPECT_EQ(count(between(groups, "<tbody>", "</tbody>"), "<tr"), 4u);
  // quantize te: passed i = 1, 5, 7 (odd, not a multiple of 3) + 3 failed = 6 cases, 3 failed.
  EXPECT_NE(groups.find(">quantize</td><td class=\"mono\">te</td><td class=\"n\">6</td><td class=\"n\">3<"), std::string::npos)
      << groups;
  const std::string_view failures = between(html, "id=\"failures\"", "</table>");
  EXPECT_EQ(count(between(failures, "<tbody>", "</tbody>"), "<tr>"), 3u);
  EXPECT_NE(failures.find("<a href=\"failures/bad-0002.html\">"), std::string::npos);
  EXPECT_NE(failures.find("data: 3 mismatches"), std::string::npos);
  // Passed entries listed openly.
  EXPECT_EQ(html.find("<details"), std::string::npos);
  EXPECT_EQ(count(between(html, "<ul class=\"passed\"", "</ul>"), "<li"), 10u);
  expect_self_contained(html);
}

// A campaign's page: its failures are entries, its cases are counted per operation. With 2 corpus
// entries (1 failed) and a campaign of 156 + 19 cases, 6 failed: 177 cases, 7 failed, 170 passed.
TEST(ReportSummary, CountsEveryGeneratedCaseOfACampaign) {
  reports::Summary s = sample_summary(1, 1);
  s.generated = {{"amax_global", {156, 0}}, {"quantize", {19, 6}}};
  for (int i = 0; i < 6; ++i)
    s.entries.push_back({fmt::format("case-{}.safetensors", i), "quantize", "te", false, "scale: 1 elements differ",
                         fmt::format("case-{}.html", i), true});
  const std::string html = reports::render_summary(s);
  EXPECT_EQ(text_of(html, "total-cases"), "177");
  EXPECT_EQ(text_of(html, "passed-cases"), "170");
  EXPECT_EQ(text_of(html, "failed-cases"), "7");
  const std::string_view generated = between(html, "id=\"generated\"", "</table>");
  EXPECT_NE(generated.find(">amax_global</td><td class=\"n\">156</td><td class=\"n\">156</td><td class=\"n\">0<"),
            std::string::npos)
      << generated;
  EXPECT_NE(generated.find(">quantize</td><td class=\"n\">19</td><td class=\"n\">13</td><td class=\"n\">6<"), std::string::npos)
      << generated;
  // Every failure listed; the groups count the corpus entries only (quantize te: 1 case, 1 failed).
  EXPECT_EQ(count(between(between(html, "id=\"failures\"", "</table>"), "<tbody>", "</tbody>"), "<tr>"), 7u);
  const std::string_view groups = between(html, "id=\"groups\"", "</table>");
  EXPECT_NE(groups.find(">quantize</td><td class=\"mono\">te</td><td class=\"n\">1</td><td class=\"n\">1<"), std::string::npos)
      << groups;
  EXPECT_NE(html.find("169 generated cases"), std::string::npos);
  // A campaign alone (fuzz, merge): no groups table, its own says it all.
  std::erase_if(s.entries, [](const reports::SummaryEntry& e) { return !e.generated; });
  const std::string alone = reports::render_summary(s);
  EXPECT_EQ(text_of(alone, "total-cases"), "175");
  EXPECT_EQ(text_of(alone, "failed-cases"), "6");
  EXPECT_EQ(alone.find("id=\"groups\""), std::string::npos);
  expect_self_contained(html);
}

TEST(ReportSummary, CollapsesManyPassedEntries) {
  const std::string html = reports::render_summary(sample_summary(51, 0));
  EXPECT_NE(html.find("<details id=\"passed\">"), std::string::npos);
  EXPECT_EQ(html.find("<details open"), std::string::npos);
  EXPECT_EQ(count(between(html, "<ul class=\"passed\"", "</ul>"), "<li"), 51u);
  EXPECT_EQ(text_of(html, "failed-cases"), "0");
  EXPECT_EQ(count(between(between(html, "id=\"failures\"", "</table>"), "<tbody>", "</tbody>"), "<tr>"), 0u);
  EXPECT_EQ(html.find("<details"), html.rfind("<details"));
  const std::string fifty = reports::render_summary(sample_summary(50, 1));
  EXPECT_EQ(fifty.find("<details"), std::string::npos);
}

TEST(ReportSummary, EscapesAndKeepsLinksRelative) {
  reports::Summary s = sample_summary(1, 2);
  s.title = "<b>gate</b>";
  s.entries[1].name = "<img src=x>";
  s.entries[1].detail = "a & b";
  s.entries[1].report_link = "fail\"ures/x.html";
  s.entries[2].report_link = "https://example.com/x.html";
  const std::string html = reports::render_summary(s);
  EXPECT_EQ(html.find("<b>gate"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x&gt;"), std::string::npos);
  EXPECT_NE(html.find("a &amp; b"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"fail&quot;ures/x.html\">"), std::string::npos);
  // An absolute URL is shown as text, never as a link.
  EXPECT_EQ(html.find("href=\"https"), std::string::npos);
  EXPECT_EQ(count(html, "<a href="), 1u);
  EXPECT_EQ(reports::render_summary(reports::Summary{}).find("http"), std::string::npos);
}

class ReportWritePage : public test_support::TempDirTest {
 protected:
  static std::string slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  static std::vector<std::string> files(const fs::path& d) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

TEST_F(ReportWritePage, CreatesDirectoryAndLeavesNoTemporaryFile) {
  const fs::path sub = dir_ / "a" / "b";
  const std::string html = reports::render_failure(sample_failure());
  reports::write_page(sub, "failure.html", html);
  EXPECT_EQ(slurp(sub / "failure.html"), html);
  reports::write_page(sub, "index.html", "first");
  reports::write_page(sub, "index.html", "second");  // replaces
  EXPECT_EQ(slurp(sub / "index.html"), "second");
  EXPECT_EQ(files(sub), (std::vector<std::string>{"failure.html", "index.html"}));
}

TEST_F(ReportWritePage, FailsCleanlyForAnUnwritablePath) {
  const fs::path file = dir_ / "regular";
  std::ofstream(file) << "x";
  // A directory under a regular file cannot be created, even by root.
  try {
    reports::write_page(file / "x", "index.html", "<html></html>");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((file / "x" / "index.html").string()), std::string::npos) << e.what();
  }
  if (fs::is_regular_file("/etc/hostname")) {
    EXPECT_THROW(reports::write_page("/etc/hostname/x", "index.html", "y"), std::runtime_error);
  }
  // The target is a directory: rename fails, and the temporary file is removed.
  fs::create_directories(dir_ / "out" / "page.html");
  EXPECT_THROW(reports::write_page(dir_ / "out", "page.html", "z"), std::runtime_error);
  EXPECT_EQ(files(dir_ / "out"), (std::vector<std::string>{"page.html"}));
  EXPECT_EQ(files(dir_), (std::vector<std::string>{"out", "regular"}));
}

}  // namespace
}  // namespace nvfp4
