// The HTML reports as a browser sees them: headless Chromium parses a failure page and a summary
// page (--dump-dom gives the DOM after parsing), the test checks the elements a reader relies
// on, and a screenshot of each page is kept for a person to look at (NVFP4_TEST_ARTIFACTS, or
// <build>/test-artifacts). Skipped, saying why, where Chromium is not installed.
#include <gtest/gtest.h>

#include "cases/registry.h"

#include "tests/support/cli_runner.h"
#include "tests/support/html_text.h"
#include "tests/support/temp_dir.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include "reference/e2m1.h"
#include "reference/e4m3.h"

#include "reports/report.h"

#ifndef NVFP4_TEST_ARTIFACTS_DEFAULT
#define NVFP4_TEST_ARTIFACTS_DEFAULT ""
#endif

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using nvfp4::test_support::between;
using nvfp4::test_support::count;
using nvfp4::test_support::text_of;

std::optional<fs::path> find_chromium() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  for (const char* name : {"chromium", "chromium-browser"}) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (dir.empty()) continue;
      const fs::path p = fs::path(dir) / name;
      if (::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p)) return p;
    }
  }
  return std::nullopt;
}

fs::path artifacts_dir() {
  const char* env = std::getenv("NVFP4_TEST_ARTIFACTS");
  if (env != nullptr && *env != '\0') return env;
  if (*NVFP4_TEST_ARTIFACTS_DEFAULT != '\0') return NVFP4_TEST_ARTIFACTS_DEFAULT;
  return fs::temp_directory_path() / "nvfp4-test-artifacts";
}

std::string slurp(const fs::path& p) { return test_support::slurp_text(p); }

std::string quote(const std::string& s) {
  std::string r = "'";
  for (const char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

// A plausible te-profile failure: the reference's numbers for a few blocks, a device that
// flips ties in some blocks, and one scale byte off by one code.
reports::FailureReport sample_failure() {
  reports::FailureReport r;
  r.title = "quantize te 256x512 bf16: device != reference";
  r.backends = "reference vs device (H100, sm_90)";
  r.replay_command = "nvfp4-verify replay corpora/case-quantize-te-256x512-7f3a9c.safetensors --backend device";
  r.case_description =
      "{\n  \"operation\": \"quantize\",\n  \"profile\": \"te\",\n  \"block\": \"1d\",\n  \"direction\": \"both\",\n"
      "  \"input\": {\"recipe\": \"normal\", \"seed\": 7, \"shape\": [256, 512], \"dtype\": \"bf16\"}\n}";
  r.c = cases::make_case("quantize");
  r.c.params.set("direction", std::string("both"));
  io::Tensor x;
  x.dtype = io::DType::BF16;
  x.shape = {256, 512};
  x.bytes.assign(256 * 512 * 2, 0);
  r.c.inputs["x"] = x;

  compare::Explanation& e = r.explanation;
  auto map = [](std::string name, std::int64_t rows, std::int64_t blocks) {
    compare::Explanation::BlockMap m;
    m.tensor = std::move(name);
    m.rows = rows;
    m.blocks = blocks;
    m.mismatching.assign(std::size_t(rows * blocks), 0);
    return m;
  };
  compare::Explanation::BlockMap data = map("data", 256, 32), scale = map("scale", 256, 32), data_t = map("data_t", 512, 16);
  const float gamax = 4.0f, S = 2688.0f / gamax;
  std::uint32_t seed = 12345;
  auto rnd = [&] {  // deterministic values in (-4, 4)
    seed = seed * 1664525u + 1013904223u;
    return (float(seed >> 8) / 16777216.0f - 0.5f) * 8.0f;
  };
  std::size_t total = 0;
  std::vector<std::pair<compare::MismatchKind, std::size_t>> kinds = {{compare::MismatchKind::kTieFlipped, 0},
                                                                      {compare::MismatchKind::kScaleOffByOneCode, 0}};
  for (std::int64_t row = 0; row < 256; ++row) {
    for (std::int64_t block = 0; block < 32; ++block) {
      const bool bad = (row % 37 == 3 && block % 5 == 1) || (row == 200 && block >= 24);
      if (!bad) continue;
      data.mismatching[std::size_t(row * 32 + block)] = 1;
      data_t.mismatching[std::size_t((block * 16) * 16 + row / 16)] = 1;
      compare::BlockTrace t;
      t.direction = "rowwise";
      t.row = row;
      t.block = block;
      t.global_amax = gamax;
      t.S = S;
      for (int j = 0; j < 16; ++j) t.inputs.push_back(rnd());
      // Put exact ties on the E2M1 grid into the block: y = 2.5 and y = 0.75.
      t.block_amax = 0;
      for (const float v : t.inputs) t.block_amax = std::max(t.block_amax, std::fabs(v));
      t.precast = t.block_amax / 6.0f * S;
      t.scale_byte = e4m3sat(t.precast);
      t.Sd = e4m3_decode(t.scale_byte);
      t.encode_factor = S / t.Sd;
      t.inputs[3] = 2.5f / t.encode_factor;
      t.inputs[10] = -0.75f / t.encode_factor;
      for (int j = 0; j < 16; ++j) {
        const float y = t.inputs[std::size_t(j)] * t.encode_factor;
        t.scaled.push_back(y);
        const std::uint8_t code = e2m1_hw(y);
        t.expected_codes.push_back(code);
        const bool tie = y == 2.5f || y == -0.75f || y == 0.25f || y == 1.25f;
        const std::uint8_t flipped = std::uint8_t(code + (tie && (code & 7) < 7 ? 1 : 0));
        t.actual_codes.push_back(flipped);
        if (flipped != code) {
          ++total;
          ++kinds[0].second;
          compare::ElementMismatch m;
          m.tensor = "data";
          m.row = row;
          m.col = block * 16 + j;
          m.input_bits = std::bit_cast<std::uint32_t>(t.inputs[std::size_t(j)]);
          m.expected = code;
          m.actual = flipped;
          m.kind = compare::MismatchKind::kTieFlipped;
          e.mismatches.push_back(m);
        }
      }
      if (row == 200) {
        scale.mismatching[std::size_t(row * 32 + block)] = 1;
        ++total;
        ++kinds[1].second;
        compare::ElementMismatch m;
        m.tensor = "scale";
        m.row = row;
        m.col = block;
        m.expected = t.scale_byte;
        m.actual = std::uint8_t(t.scale_byte + 1);
        m.kind = compare::MismatchKind::kScaleOffByOneCode;
        e.mismatches.push_back(m);
      }
      if (e.traces.size() < 2) e.traces.push_back(std::move(t));
    }
  }
  total += 2 * 37;  // the columnwise copy's mismatches, not listed
  e.total_mismatches = total;
  e.kind_counts = kinds;
  e.kind_counts[0].second += 2 * 37;
  e.maps = {data, scale, data_t};
  e.verdict = "actual matches known variant \"e2m1 ties away from zero\" on 22/22 mismatching blocks";
  compare::TensorDiff d;
  d.tensor = "data";
  d.mismatches = 44;
  d.first_index = 897;
  d.first_expected = "0x24";
  d.first_actual = "0x25";
  r.diffs = {d};
  d.tensor = "data_t";
  d.mismatches = 74;
  d.first_index = 3;
  d.first_expected = "0x4C";
  d.first_actual = "0x5C";
  r.diffs.push_back(d);
  d.tensor = "scale";
  d.mismatches = 8;
  d.first_index = 6424;
  d.first_expected = "0x3B";
  d.first_actual = "0x3C";
  r.diffs.push_back(d);
  return r;
}

reports::Summary sample_summary() {
  reports::Summary s;
  s.title = "nvfp4-verify gate";
  s.backends = "reference vs device (H100, sm_90)";
  s.seconds = 83.4;
  const char* profiles[] = {"te", "torchao", "modelopt", "vllm"};
  const char* ops[] = {"quantize", "dequantize", "swizzle", "amax_global"};
  for (int i = 0; i < 120; ++i) {
    reports::SummaryEntry e;
    e.operation = ops[i % 4];
    e.profile = profiles[(i / 4) % 4];
    e.name = fmt::format("{}-{}-{:03}", e.operation, e.profile, i);
    e.passed = !(i == 8 || i == 44 || i == 76);
    e.detail = e.passed ? "identical" : fmt::format("data: {} mismatches, scale: 1 mismatch", 3 * i + 1);
    if (!e.passed) e.report_link = fmt::format("failures/{}.html", e.name);
    s.entries.push_back(e);
  }
  return s;
}

class ReportBrowser : public test_support::TempDirTest {
 protected:
  void SetUp() override {
    const auto chromium = find_chromium();
    if (!chromium) GTEST_SKIP() << "chromium not installed (scripts/install-deps installs it)";
    chromium_ = *chromium;
  }

  // Runs headless Chromium on `page` with `args`; returns stdout, fails the test on a non-zero
  // exit (with the tail of its stderr).
  std::string chromium(const fs::path& page, const std::string& args) {
    const test_support::TempDir profile("chromium");
    const fs::path out = dir_ / "chromium.out", err = dir_ / "chromium.err";
    const std::string cmd = "timeout 60 " + quote(chromium_.string()) +
                            " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
                            " --disable-component-update --disable-sync --disable-dev-shm-usage --hide-scrollbars"
                            " --user-data-dir=" +
                            quote(profile.path().string()) + " " + args + " " + quote("file://" + fs::absolute(page).string()) +
                            " >" + quote(out.string()) + " 2>" + quote(err.string()) + " </dev/null";
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::string e = slurp(err);
    if (e.size() > 2000) e = e.substr(e.size() - 2000);
    EXPECT_EQ(code, 0) << (code == 124 ? "chromium timed out after 60 s\n" : "") << cmd << "\n" << e;
    return slurp(out);
  }

  std::string dump_dom(const fs::path& page) { return chromium(page, "--dump-dom"); }

  void screenshot(const fs::path& page, const std::string& png_name) {
    const fs::path dir = artifacts_dir();
    fs::create_directories(dir);
    const fs::path png = fs::absolute(dir / png_name);
    fs::remove(png);
    chromium(page, "--screenshot=" + quote(png.string()) + " --window-size=1280,2000");
    ASSERT_TRUE(fs::exists(png)) << png;
    EXPECT_GT(fs::file_size(png), 1000u) << png;
    const std::string head = slurp(png).substr(0, 8);
    EXPECT_EQ(head, std::string("\x89PNG\r\n\x1a\n", 8)) << png;
    // The page next to its screenshot, for whoever looks at the artifacts.
    fs::copy_file(page, dir / page.filename(), fs::copy_options::overwrite_existing);
    std::cout << "[ ReportBrowser ] screenshot " << png.string() << "\n";
  }

  fs::path chromium_;
};

TEST_F(ReportBrowser, FailurePage) {
  const reports::FailureReport r = sample_failure();
  reports::write_page(dir_, "report-failure.html", reports::render_failure(r));
  const std::string dom = dump_dom(dir_ / "report-failure.html");
  ASSERT_NE(dom.find("</html>"), std::string::npos) << dom.substr(0, 500);

  EXPECT_EQ(text_of(dom, "mismatch-count"), std::to_string(r.explanation.total_mismatches));
  EXPECT_EQ(text_of(dom, "verdict"), "actual matches known variant \"e2m1 ties away from zero\" on 22/22 mismatching blocks");
  EXPECT_EQ(text_of(dom, "replay"), r.replay_command);
  const std::string_view rows = between(between(dom, "id=\"mismatches\"", "</table>"), "<tbody>", "</tbody>");
  ASSERT_GT(r.explanation.mismatches.size(), 64u);
  EXPECT_EQ(count(rows, "<tr>"), 64u);

  // One rect per block, or per group of blocks past 128 a side: data (256 rows) becomes 128
  // cells of 2 rows, data_t (512 rows) 128 cells of 4 rows; a cell is red if any block is.
  EXPECT_EQ(count(dom, "<svg class=\"heatmap\""), 3u);
  const std::pair<const char*, std::int64_t> maps[] = {{"data", 2}, {"scale", 2}, {"data_t", 4}};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& m = r.explanation.maps[i];
    ASSERT_EQ(m.tensor, maps[i].first);
    const std::int64_t fr = maps[i].second, cells = m.rows / fr * m.blocks;
    std::vector<int> bad(std::size_t(cells), 0);
    for (std::int64_t k = 0; k < m.rows * m.blocks; ++k)
      if (m.mismatching[std::size_t(k)]) bad[std::size_t(k / m.blocks / fr * m.blocks + k % m.blocks)] = 1;
    const std::string_view svg = between(dom, fmt::format("<svg class=\"heatmap\" data-tensor=\"{}\"", m.tensor), "</svg>");
    EXPECT_EQ(count(svg, "<rect "), std::size_t(cells)) << m.tensor;
    EXPECT_EQ(count(svg, "class=\"m\""), std::size_t(std::count(bad.begin(), bad.end(), 1))) << m.tensor;
  }
  EXPECT_EQ(count(dom, "Downsampled"), 3u);

  EXPECT_EQ(count(dom, "class=\"trace\""), 2u);
  EXPECT_EQ(dom.find("<script"), std::string::npos);
  screenshot(dir_ / "report-failure.html", "report-failure.png");
}

TEST_F(ReportBrowser, SummaryPage) {
  const reports::Summary s = sample_summary();
  reports::write_page(dir_, "report-summary.html", reports::render_summary(s));
  const std::string dom = dump_dom(dir_ / "report-summary.html");
  EXPECT_EQ(text_of(dom, "total-cases"), "120");
  EXPECT_EQ(text_of(dom, "failed-cases"), "3");
  const std::string_view failures = between(between(dom, "id=\"failures\"", "</table>"), "<tbody>", "</tbody>");
  EXPECT_EQ(count(failures, "<tr>"), 3u);
  EXPECT_NE(failures.find("<a href=\"failures/quantize-modelopt-008.html\">"), std::string::npos);
  EXPECT_EQ(count(between(between(dom, "id=\"groups\"", "</table>"), "<tbody>", "</tbody>"), "<tr"), 16u);
  EXPECT_NE(dom.find("<details id=\"passed\">"), std::string::npos);
  screenshot(dir_ / "report-summary.html", "report-summary.png");
}

TEST_F(ReportBrowser, HostileTextStaysText) {
  reports::FailureReport r = sample_failure();
  r.title = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>";
  r.explanation.maps[0].tensor = "\"><script>alert(2)</script>";
  r.explanation.verdict = "</p><h1>injected</h1>";
  reports::write_page(dir_, "hostile.html", reports::render_failure(r));
  const std::string dom = dump_dom(dir_ / "hostile.html");
  EXPECT_EQ(dom.find("<script"), std::string::npos);
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_EQ(dom.find("<h1>injected"), std::string::npos);
  EXPECT_EQ(count(dom, "<svg class=\"heatmap\""), 3u);
  EXPECT_EQ(text_of(dom, "verdict"), "&lt;/p&gt;&lt;h1&gt;injected&lt;/h1&gt;");
}

}  // namespace
}  // namespace nvfp4
