// `nvfp4-verify check`, run as a user runs it: the reference's own outputs pass, one flipped bit
// fails naming its tensor and block, producers' names, dtypes and layouts are bridged, --identify
// ranks the producing profile first, and bad input exits 2 with one line and no report.
#include <gtest/gtest.h>

#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "io/safetensors.h"
#include "io/tensor_convert.h"
#include "reference/arith.h"
#include "reference/layout.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kRows = 48, kCols = 80;  // neither a multiple of the 128x4 scale padding

class CheckTest : public test_support::TempDirTest {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    x_ = random_input(seed_);
    write("x.safetensors", {{"x", x_}});
  }

  // Fresh values whose 1x16 blocks span 2^-30..1 in magnitude: small blocks fall below the E4M3
  // normal range of their scales, where the profiles' formulas differ.
  static io::Tensor random_input(unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> exponent(-30.0f, 0.0f);
    FloatMatrix x = xt::empty<float>({std::size_t(kRows), std::size_t(kCols)});
    for (std::size_t r = 0; r < x.shape(0); ++r)
      for (std::size_t b = 0; b < x.shape(1); b += 16) {
        const float magnitude = std::exp2(exponent(rng));
        for (std::size_t k = b; k < b + 16; ++k) x(r, k) = normal(rng) * magnitude;
      }
    return io::from_float_matrix(x, io::FloatType::F32);
  }

  // The reference's quantize outputs of x_ under `params` (name -> value).
  cases::TensorMap reference(const std::vector<std::pair<std::string, cases::ParamValue>>& params) const {
    cases::Case c = cases::make_case("quantize");
    for (const auto& [name, value] : params) c.params.set(name, value);
    c.inputs["x"] = x_;
    return cases::ReferenceBackend().run(c);
  }

  void write(const std::string& name, const cases::TensorMap& tensors) const {
    io::File f;
    f.tensors = tensors;
    io::write_file_atomic(path(name), f);
  }

  fs::path path(const std::string& name) const { return dir_ / name; }

  test_support::CliRun run(const std::string& args) const { return test_support::run_cli(args, dir_); }

  // `check` of THEIRS (a file in the test directory) against x.safetensors, with more arguments.
  test_support::CliRun check(const std::string& theirs, const std::string& more = "") const {
    return run("check --input " + path("x.safetensors").string() + " --outputs " + path(theirs).string() + " " + more);
  }

  // Exit 2, one line on stderr containing `phrase`, and no report directory.
  void expect_bad_input(const std::string& theirs, const std::string& more, const std::string& phrase) const {
    const test_support::CliRun r = check(theirs, more + " --report " + path("report").string());
    EXPECT_EQ(r.exit_code, 2) << more << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr lacks '" << phrase << "': " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "expected one line: " << r.err;
    EXPECT_FALSE(fs::exists(path("report"))) << "a report was written for bad input: " << more;
  }

  unsigned seed_ = 0;
  io::Tensor x_;
};

std::string seed_trace(unsigned seed) { return "input seed " + std::to_string(seed); }

TEST_F(CheckTest, TheReferencesOwnOutputsPass) {
  SCOPED_TRACE(seed_trace(seed_));
  write("q.safetensors", reference({{"profile", std::string("te")}, {"direction", std::string("both")}}));
  const test_support::CliRun r = check("q.safetensors");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("THEIRS matches the reference bit for bit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("direction=both (inferred"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("data_t matches"), std::string::npos) << r.out;
}

TEST_F(CheckTest, OneFlippedBitFailsNamingTheTensorAndTheBlock) {
  SCOPED_TRACE(seed_trace(seed_));
  const cases::TensorMap q = reference({{"profile", std::string("te")}});
  cases::TensorMap bad_scale = q;
  bad_scale.at("scale").bytes[std::size_t(5 * q.at("scale").shape[1] + 2)] ^= 0x01;  // scale[5, 2]
  write("bad_scale.safetensors", bad_scale);
  test_support::CliRun r = check("bad_scale.safetensors");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("First mismatching block: row 5, block 2 of data and scale"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scale[5, 2] is"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scale: 1 of"), std::string::npos) << r.out;

  cases::TensorMap bad_data = q;
  bad_data.at("data").bytes[std::size_t(7 * (kCols / 2) + 8 * 3 + 1)] ^= 0x10;  // data[7, 25]: element x[7, 51]
  write("bad_data.safetensors", bad_data);
  r = check("bad_data.safetensors");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("First mismatching block: row 7, block 3 of data and scale (x[7, 48:64])"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x[7, 51] is code"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("data: 1 of"), std::string::npos) << r.out;
}

TEST_F(CheckTest, RenamedTensorsAnF8ScaleWithoutPaddingAndAnI8DataTensorPass) {
  SCOPED_TRACE(seed_trace(seed_));
  // As a checkpoint stores them: weight_packed (I8), weight_scale (F8_E4M3, [M, K/16]), and a
  // tensor the operation does not produce.
  const cases::TensorMap q = reference({{"profile", std::string("torchao")}});
  const io::Tensor& scale = q.at("scale");
  std::vector<std::uint8_t> compact;
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t j = 0; j < kCols / 16; ++j) compact.push_back(scale.bytes[std::size_t(r * scale.shape[1] + j)]);
  io::Tensor packed = q.at("data");
  packed.dtype = io::DType::I8;
  cases::TensorMap theirs{{"weight_packed", packed},
                          {"weight_scale", io::make_tensor(io::DType::F8_E4M3, {kRows, kCols / 16}, compact)},
                          {"weight_global_scale", q.at("global_scale")},
                          {"input_global_scale", q.at("global_scale")}};
  write("ckpt.safetensors", theirs);
  write("x.safetensors", {{"weight", x_}});  // the input under another name too
  const std::string map = "--param profile=torchao --map data=weight_packed,scale=weight_scale,global_scale=weight_global_scale";
  const test_support::CliRun r = check("ckpt.safetensors", map);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("'weight_scale' (as scale) is F8_E4M3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'weight_packed' (as data) is I8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("without padding"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ignored in THEIRS (not outputs of quantize under these parameters): input_global_scale"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("input x: X's only tensor, 'weight'"), std::string::npos) << r.out;

  // The bridge only renames and reinterprets: a changed byte of the renamed scale still fails.
  theirs.at("weight_scale").bytes[3] ^= 0x02;
  write("ckpt.safetensors", theirs);
  EXPECT_EQ(check("ckpt.safetensors", map).exit_code, 1);
  // A 2-byte dtype is not reinterpreted.
  theirs.at("weight_scale") = io::make_tensor(io::DType::F16, {kRows, kCols / 16}, std::vector<std::uint8_t>(2 * compact.size()));
  write("ckpt.safetensors", theirs);
  expect_bad_input("ckpt.safetensors", map, "E_DTYPE");
}

TEST_F(CheckTest, SwizzledScalesAreRecognised) {
  SCOPED_TRACE(seed_trace(seed_));
  write(
      "q.safetensors",
      reference({{"profile", std::string("te")}, {"direction", std::string("both")}, {"scale_layout", std::string("swizzled")}}));
  const test_support::CliRun r = check("q.safetensors");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("scale_layout=swizzled (inferred"), std::string::npos) << r.out;
  // The layout matters: compared as compact, the same file fails.
  EXPECT_EQ(check("q.safetensors", "--param scale_layout=compact").exit_code, 1);
  // A swizzled mismatch names the compact position and the swizzled byte.
  cases::TensorMap q = reference({{"profile", std::string("te")}, {"scale_layout", std::string("swizzled")}});
  q.at("scale").bytes[std::size_t(swizzled_offset(9, 1, q.at("scale").shape[1]))] ^= 0x01;
  write("bad.safetensors", q);
  const test_support::CliRun bad = check("bad.safetensors");
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("row 9, block 1 of data and scale"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("byte " + std::to_string(swizzled_offset(9, 1, q.at("scale").shape[1])) + " of the swizzled layout"),
            std::string::npos)
      << bad.out;
}

TEST_F(CheckTest, IdentifyRanksTheProducingProfileFirst) {
  SCOPED_TRACE(seed_trace(seed_));
  const cases::TensorMap te = reference({{"profile", std::string("te")}}),
                         torchao = reference({{"profile", std::string("torchao")}});
  ASSERT_TRUE(te.at("data").bytes != torchao.at("data").bytes || te.at("scale").bytes != torchao.at("scale").bytes)
      << "the input does not tell te from torchao";
  write("te.safetensors", te);
  write("torchao.safetensors", torchao);
  for (const auto& [producer, other] : {std::pair<std::string, std::string>{"te", "torchao"}, {"torchao", "te"}}) {
    const test_support::CliRun r = check(producer + ".safetensors", "--identify");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const std::size_t first = r.out.find("matches ");
    ASSERT_NE(first, std::string::npos) << r.out;
    EXPECT_EQ(r.out.substr(first, r.out.find('\n', first) - first), "matches " + producer + " on 100.0% of blocks (" +
                                                                        std::to_string(kRows * kCols / 16) + " of " +
                                                                        std::to_string(kRows * kCols / 16) + "), bit for bit")
        << r.out;
    EXPECT_NE(r.out.find("matches " + other + " on "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("matches " + other + " on 100.0%"), std::string::npos) << r.out;
  }
  // No profile reproduces outputs with a flipped byte: exit 1, still ranked.
  cases::TensorMap bad = torchao;
  bad.at("data").bytes[0] ^= 0x11;
  write("bad.safetensors", bad);
  const test_support::CliRun r = check("bad.safetensors", "--identify");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("matches torchao on 99."), std::string::npos) << r.out;
}

TEST_F(CheckTest, TheirAmaxIsTakenAsTheOverride) {
  SCOPED_TRACE(seed_trace(seed_));
  write("q.safetensors", reference({{"profile", std::string("te")}, {"amax", cases::F32Bits{0x40D00000u}}}));  // 6.5
  const test_support::CliRun r = check("q.safetensors");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("amax=0x40D00000 (inferred"), std::string::npos) << r.out;
  EXPECT_EQ(check("q.safetensors", "--param amax=null").exit_code, 1);
}

TEST_F(CheckTest, OtherOperationsCompareElements) {
  SCOPED_TRACE(seed_trace(seed_));
  cases::Case c = cases::make_case("amax_rows");
  c.inputs["x"] = x_;
  cases::TensorMap out = cases::ReferenceBackend().run(c);
  write("amax.safetensors", out);
  EXPECT_EQ(check("amax.safetensors", "--op amax_rows").exit_code, 0);
  out.at("amax").bytes[4 * 11] ^= 0x01;  // amax[11]
  write("amax.safetensors", out);
  const test_support::CliRun r = check("amax.safetensors", "--op amax_rows");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("47 of 48 blocks match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("First difference: amax[11]"), std::string::npos) << r.out;
}

TEST_F(CheckTest, BadInputExitsTwoWithOneLineAndNoReport) {
  const cases::TensorMap q = reference({{"profile", std::string("te")}});
  write("q.safetensors", q);
  const std::string full = test_support::slurp_text(path("q.safetensors"));
  { std::ofstream(path("cut.safetensors"), std::ios::binary) << full.substr(0, full.size() - 100); }
  expect_bad_input("cut.safetensors", "", "truncated");
  expect_bad_input("missing.safetensors", "", "cannot open");
  expect_bad_input("q.safetensors", "--map scale=weight_scale", "THEIRS holds no tensor 'weight_scale'");
  write("other.safetensors", {{"weight_packed", q.at("data")}});
  expect_bad_input("other.safetensors", "", "THEIRS holds none of the reference's outputs");
  cases::TensorMap wrong = q;
  wrong.at("data") = io::make_tensor(io::DType::U8, {kRows, kCols / 2 - 8}, std::vector<std::uint8_t>(kRows * (kCols / 2 - 8)));
  write("wrong.safetensors", wrong);
  expect_bad_input("wrong.safetensors", "", "E_DATA_SHAPE: their 'data' is U8 [48, 32]; the reference's is U8 [48, 40]");
  wrong = q;
  wrong.at("amax") = io::make_tensor_from<float>(io::DType::F32, {2}, std::vector<float>{1, 2});
  write("wrong.safetensors", wrong);
  expect_bad_input("wrong.safetensors", "", "E_AMAX_SHAPE");
  expect_bad_input("q.safetensors", "--op frobnicate", "unknown operation");
  expect_bad_input("q.safetensors", "--profile nope", "parameter 'profile' is 'nope'; allowed: te");
  expect_bad_input("q.safetensors", "--param block=3d", "parameter 'block' is '3d'; allowed: 1d, 2d");
  expect_bad_input("q.safetensors", "--param frob=1", "no parameter 'frob'");
  expect_bad_input("q.safetensors", "--param seed=-1", "parameter 'seed' must be an unsigned 64-bit integer");
  expect_bad_input("q.safetensors", "--param amax=6.5", "parameter 'amax' must be null or");
  expect_bad_input("q.safetensors", "--param block", "--param: 'block' is not name=value");
  expect_bad_input("q.safetensors", "--map x=w", "X holds no tensor 'w'");
  expect_bad_input("q.safetensors", "--map weight=w", "quantize has no tensor 'weight'");
  expect_bad_input("q.safetensors", "--identify --profile te", "excludes");
  expect_bad_input("q.safetensors", "--op swizzle --identify", "swizzle has no profile parameter");
}

TEST_F(CheckTest, ReportIsWrittenForAMatchAndAMismatch) {
  SCOPED_TRACE(seed_trace(seed_));
  cases::TensorMap q = reference({{"profile", std::string("te")}});
  write("q.safetensors", q);
  const fs::path report = path("report");
  EXPECT_EQ(check("q.safetensors", "--report " + report.string()).exit_code, 0);
  const std::string pass = test_support::slurp_text(report / "index.html");
  EXPECT_NE(pass.find("PASS"), std::string::npos);
  EXPECT_FALSE(fs::exists(report / "check.html"));

  q.at("scale").bytes[0] ^= 0x01;
  write("q.safetensors", q);
  fs::remove_all(report);
  EXPECT_EQ(check("q.safetensors", "--report " + report.string()).exit_code, 1);
  const std::string index = test_support::slurp_text(report / "index.html"),
                    page = test_support::slurp_text(report / "check.html");
  EXPECT_NE(index.find("href=\"check.html\""), std::string::npos) << index;
  EXPECT_NE(page.find("FAIL"), std::string::npos);
  EXPECT_NE(page.find("nvfp4-verify check --input"), std::string::npos);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(report)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"check.html", "index.html"})) << "only whole pages, no temporary files";
}

}  // namespace
}  // namespace nvfp4
