// Files from other people, made hostile: zero-element tensors with huge other dimensions, case
// recipes of absurd sizes, GEMM scales of the wrong shape, FIFOs, safetensors offsets that do not
// tile the file, case tensors of the wrong rank. Each ends in one line on stderr and exit 2 (or,
// for a case that tests a backend's error, in both backends rejecting it), never in a crash, an
// abort, a hang or a stray file. Every reproducer is built here from its description.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/case_io.h"
#include "cases/corpus.h"
#include "cases/registry.h"
#include "io/safetensors.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using nlohmann::json;

std::size_t line_count(const std::string& s) { return std::size_t(std::count(s.begin(), s.end(), '\n')); }

// u64 LE header length, header text, data: a safetensors image written by hand.
Bytes image(const std::string& header, const Bytes& data = {}) {
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(std::uint8_t(std::uint64_t(header.size()) >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// The header of a file holding one F32 tensor "x" of this shape and no bytes.
std::string empty_f32(const std::string& shape) {
  return R"({"x":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,0]}})";
}

class HostileInputTest : public test_support::TempDirTest {
 protected:
  fs::path path(const std::string& name) const { return dir_ / name; }

  fs::path write(const std::string& name, const Bytes& bytes) {
    std::ofstream(path(name), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return path(name);
  }

  // A case file whose description is `description` and whose tensors are `tensors`.
  fs::path write_case(const std::string& name, const json& description, const cases::TensorMap& tensors = {}) {
    io::File f;
    f.tensors = tensors;
    f.metadata["nvfp4_case"] = description.dump();
    return write(name, io::serialize(f));
  }

  // Runs the CLI under a 60 s timeout, so that a hang fails the test (exit 124) instead of
  // stalling the suite.
  test_support::CliRun run(const std::string& args) { return test_support::run_cli(args, dir_, 60); }

  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  // Exit 2, one line on stderr containing `phrase`, and no file left behind.
  void expect_one_line(const std::string& args, const std::string& phrase) {
    const std::vector<std::string> before = files();
    const test_support::CliRun r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_EQ(line_count(r.err), 1u) << args << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << args << "\nstderr lacks '" << phrase << "': " << r.err;
    EXPECT_EQ(files(), before) << "a failing command left a file behind: " << args;
  }
};

// ---- 1. zero-element tensors with a huge other dimension -------------------------------------

TEST_F(HostileInputTest, ZeroElementTensorsWithAHugeOtherDimensionAreRefusedWhenRead) {
  const std::string limit = "has no elements, and its other dimensions multiply to more than 65536";
  const fs::path wide = write("wide.safetensors", image(empty_f32("[0,4611686018427387904]")));  // [0, 2^62]
  const fs::path tall = write("tall.safetensors", image(empty_f32("[1099511627776,0]")));        // [2^40, 0]
  const fs::path small = write("small.safetensors", image(empty_f32("[268435456,0]")));          // [2^28, 0]
  EXPECT_LT(fs::file_size(small), 100u);
  const fs::path theirs = write("theirs.safetensors", image("{}"));
  const std::string out = path("out.safetensors").string();
  expect_one_line("quantize --direction columnwise --input " + wide.string() + " --output " + out, limit);
  expect_one_line("check --input " + wide.string() + " --outputs " + theirs.string(), limit);
  for (const fs::path& in : {tall, small}) {
    expect_one_line("quantize --input " + in.string() + " --output " + out, limit);
    expect_one_line("rht --input " + in.string() + " --output " + out, limit);
  }
  // dequantize reads data, scale and amax: a zero-column data tensor with 2^40 rows.
  const fs::path q = write("q.safetensors", image(R"({"data":{"dtype":"U8","shape":[1099511627776,0],"data_offsets":[0,0]},)"
                                                  R"("scale":{"dtype":"U8","shape":[0,4],"data_offsets":[0,0]},)"
                                                  R"("amax":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                                  Bytes(4)));
  expect_one_line("dequantize --input " + q.string() + " --output " + out, limit);
}

TEST(HostileInputLimits, AnEmptyTensorMayHaveOtherDimensionsUpToTheLimit) {
  const io::File f = io::parse(image(empty_f32("[0,65536]")), "mem");
  EXPECT_EQ(f.tensors.at("x").shape, (std::vector<std::int64_t>{0, 65536}));
  EXPECT_THROW(io::parse(image(empty_f32("[0,65537]")), "mem"), io::FormatError);
  EXPECT_THROW(io::parse(image(empty_f32("[256,0,257]")), "mem"), io::FormatError);
  EXPECT_NO_THROW(io::parse(image(empty_f32("[256,0,256]")), "mem"));
}

// ---- 2. recipes are checked before they are expanded ------------------------------------------

json recipe_case(std::int64_t M, std::int64_t K) {
  const json recipe = {{"version", 1}, {"dist", "specials"}, {"seed", 1},          {"M", M},
                       {"K", K},       {"dtype", "F32"},     {"active_blocks", -1}};
  return {{"format", 2}, {"op", "amax_global"}, {"params", {{"profile", "te"}}}, {"inputs", {{"x", {{"recipe", recipe}}}}}};
}

TEST_F(HostileInputTest, ARecipeOfAnAbsurdSizeIsRefusedBeforeItIsExpanded) {
  // 2^20 x 2^20 (4 TiB of binary32), and 2^48 x 2^16, whose product wraps to 0 in 64 bits.
  const fs::path huge = write_case("huge.safetensors", recipe_case(std::int64_t(1) << 20, std::int64_t(1) << 20));
  const fs::path wraps = write_case("wraps.safetensors", recipe_case(std::int64_t(1) << 48, std::int64_t(1) << 16));
  for (const fs::path& f : {huge, wraps})
    expect_one_line("replay " + f.string() + " --backends reference,metamorphic", "exceeds the limit of 67108864 elements");
  // The limit itself still loads.
  EXPECT_NO_THROW(cases::load_case(write_case("ok.safetensors", recipe_case(16, 64))));
}

// ---- 3. the metamorphic GEMM checks the scales' shape before reading them ----------------------

io::Tensor u8(std::vector<std::int64_t> shape) {
  return io::make_tensor(io::DType::U8, shape, Bytes(std::size_t(shape[0] * shape[1]), 0x38));
}

// A gemm case of 16x32 operands whose a_scale has this shape (the right one is [128, 4]).
cases::TensorMap gemm_inputs(std::vector<std::int64_t> a_scale) {
  const float one = 1.0f;
  const io::Tensor amax = io::make_tensor_from<float>(io::DType::F32, {1}, {&one, 1});
  return {{"a_data", u8({16, 16})}, {"a_scale", u8(a_scale)},  {"a_amax", amax},
          {"b_data", u8({16, 16})}, {"b_scale", u8({128, 4})}, {"b_amax", amax}};
}

json gemm_description() {
  json inputs;
  for (const char* n : {"a_data", "a_scale", "a_amax", "b_data", "b_scale", "b_amax"}) inputs[n] = {{"tensor", true}};
  return {{"format", 2}, {"op", "gemm"}, {"params", json::object()}, {"inputs", inputs}};
}

TEST_F(HostileInputTest, AGemmScaleOfTheWrongShapeIsRejectedByBothBackends) {
  fs::create_directories(path("corpus"));
  for (const auto& [name, shape] :
       {std::pair<std::string, std::vector<std::int64_t>>{"zero-rows", {0, 4}}, {"transposed", {4, 128}}}) {
    const fs::path f = write_case("corpus/" + name + ".safetensors", gemm_description(), gemm_inputs(shape));
    const test_support::CliRun r = run("replay " + f.string() + " --backends reference,metamorphic");
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("(both reject: gemm: E_SCALE_SHAPE: a_scale is ["), std::string::npos) << name << "\n" << r.out;
  }
  // The gate replays such a corpus to its end and writes its report.
  const test_support::CliRun g = run("gate --corpus " + path("corpus").string() +
                                     " --time 1s --jobs 1 --backends reference,metamorphic"
                                     " --found " +
                                     path("found").string() + " --report " + path("report").string());
  EXPECT_EQ(g.exit_code, 0) << g.out << g.err;
  EXPECT_NE(g.out.find("corpus: 2 cases replayed, 0 failed"), std::string::npos) << g.out;
  EXPECT_TRUE(fs::exists(path("report") / "index.html"));
}

// ---- 4. FIFOs and safetensors files whose offsets do not tile the data ------------------------

TEST_F(HostileInputTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  expect_one_line("quantize --input " + path("fifo").string() + " --output " + path("out.safetensors").string(),
                  "not a regular file");
  expect_one_line("replay " + path("fifo").string() + " --backends reference,metamorphic", "not a regular file");
}

TEST_F(HostileInputTest, OffsetsThatDoNotTileTheDataSectionAreRefused) {
  const std::string out = " --output " + path("out.safetensors").string();
  // A valid 16x16 F32 file with its header padded by spaces, as writers pad it.
  std::string header = R"({"x":{"dtype":"F32","shape":[16,16],"data_offsets":[0,1024]}})";
  header.append(8 - header.size() % 8, ' ');
  const Bytes good = image(header, Bytes(1024, 0));
  ASSERT_EQ(run("quantize --input " + write("good.safetensors", good).string() + out).exit_code, 0);
  fs::remove(path("out.safetensors"));

  Bytes short_header = good;
  short_header[0] -= 1;  // the header length one byte short: every tensor shifts by a byte
  expect_one_line("quantize --input " + write("short.safetensors", short_header).string() + out,
                  "1 trailing bytes after the last tensor");
  Bytes trailing = good;
  trailing.insert(trailing.end(), {1, 2, 3});
  expect_one_line("quantize --input " + write("trailing.safetensors", trailing).string() + out,
                  "3 trailing bytes after the last tensor");
  const Bytes gap = image(R"({"a":{"dtype":"F32","shape":[16,16],"data_offsets":[0,1024]},)"
                          R"("b":{"dtype":"U8","shape":[4],"data_offsets":[1028,1032]}})",
                          Bytes(1032, 0));
  expect_one_line("quantize --tensor a --input " + write("gap.safetensors", gap).string() + out,
                  "tensor \"b\" starts at byte 1028 of the data section, but the bytes before it end at 1024: a gap");
}

// ---- 5. case tensors are checked against the registry when the file is read -------------------

json x_case(const std::string& op, const json& params) {
  return {{"format", 2}, {"op", op}, {"params", params}, {"inputs", {{"x", {{"tensor", true}}}}}};
}

io::Tensor f32_zeros(std::vector<std::int64_t> shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return io::make_tensor(io::DType::F32, shape, Bytes(std::size_t(4 * n), 0));
}

TEST_F(HostileInputTest, ACaseTensorOfTheWrongRankOrDtypeIsRefusedWhenRead) {
  const json te = {{"profile", "te"}};
  const fs::path rank3 = write_case("rank3.safetensors", x_case("amax_global", te), {{"x", f32_zeros({1, 16, 16})}});
  expect_one_line("replay " + rank3.string() + " --backends reference,metamorphic",
                  "amax_global: E_RANK: input 'x' has rank 3 (shape [1, 16, 16]); expected rank 2 ([M, K])");
  const fs::path rank1 = write_case("rank1.safetensors", x_case("quantize", te), {{"x", f32_zeros({256})}});
  expect_one_line("replay " + rank1.string() + " --backends reference,metamorphic", "quantize: E_RANK: input 'x' has rank 1");
  const fs::path u8x = write_case("u8.safetensors", x_case("rht", json::object()), {{"x", u8({16, 16})}});
  expect_one_line("replay " + u8x.string() + " --backends reference,metamorphic",
                  "rht: E_DTYPE: input 'x' has dtype U8; expected BF16");
}

TEST_F(HostileInputTest, ADimensionABackendMustRejectIsRejectedByBothWithTheSameCode) {
  // K = 24 is not a multiple of 16, and x (rank 3) is not [M, K] without experts: a backend's
  // error path, which a case may test; the metamorphic relation transposes x, and gives the
  // reference's error rather than another.
  const json te = {{"profile", "te"}};
  const fs::path k24 = write_case("k24.safetensors", x_case("quantize", te), {{"x", f32_zeros({16, 24})}});
  const fs::path rank3 = write_case("rank3.safetensors", x_case("quantize", te), {{"x", f32_zeros({2, 16, 16})}});
  const test_support::CliRun r = run("replay " + k24.string() + " " + rank3.string() + " --backends reference,metamorphic");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(both reject: quantize_1d: E_DIM16_K: K=24"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(both reject: quantize: E_RANK: tensor 'x' has rank 3"), std::string::npos) << r.out;
}

TEST_F(HostileInputTest, TheGateCountsAnUnreadableCaseFileAsAFailureAndReplaysTheRest) {
  fs::create_directories(path("corpus"));
  write_case("corpus/bad.safetensors", x_case("amax_global", {{"profile", "te"}}), {{"x", f32_zeros({256})}});
  write_case("corpus/good.safetensors", x_case("amax_global", {{"profile", "te"}}), {{"x", f32_zeros({16, 16})}});
  const test_support::CliRun g =
      run("gate --corpus " + path("corpus").string() +
          " --time 1s --jobs 1 --backends reference,metamorphic"
          " --found " +
          path("found").string() + " --report " + path("report").string() + " --junit " + path("junit.xml").string());
  EXPECT_EQ(g.exit_code, 1) << g.out << g.err;
  EXPECT_NE(g.out.find("FAIL " + path("corpus/bad.safetensors").string() + ": unreadable case file: "), std::string::npos)
      << g.out;
  EXPECT_NE(g.out.find("corpus: 2 cases replayed, 1 failed"), std::string::npos) << g.out;
  EXPECT_TRUE(fs::exists(path("report") / "index.html"));
  EXPECT_NE(test_support::slurp_text(path("junit.xml")).find("unreadable case file"), std::string::npos);
}

// ---- 6. empty tensors through the converters and the reference (clean under UBSan) ------------

TEST_F(HostileInputTest, EmptyTensorsQuantizeAndConvertWithoutTouchingData) {
  const fs::path in = write("empty.safetensors", image(empty_f32("[16,0]")));
  const test_support::CliRun r =
      run("quantize --direction both --input " + in.string() + " --output " + path("q.safetensors").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const io::File q = io::read_file(path("q.safetensors"));
  EXPECT_EQ(q.tensors.at("data").shape, (std::vector<std::int64_t>{16, 0}));
  EXPECT_EQ(q.tensors.at("scale").shape, (std::vector<std::int64_t>{128, 0}));
  EXPECT_EQ(q.tensors.at("data_t").shape, (std::vector<std::int64_t>{0, 8}));
  EXPECT_EQ(q.tensors.at("scale_t").shape, (std::vector<std::int64_t>{0, 4}));
  const test_support::CliRun d =
      run("dequantize --input " + path("q.safetensors").string() + " --output " + path("d.safetensors").string());
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(io::read_file(path("d.safetensors")).tensors.at("x").shape, (std::vector<std::int64_t>{16, 0}));
}

}  // namespace
}  // namespace nvfp4
