// The nvfp4-verify command line, run as a user runs it: files in, files out, exit codes, and one
// clear line on stderr for every kind of bad input, never a partial output file.
#include <gtest/gtest.h>

#include "tests/support/cli_runner.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "io/safetensors.h"
#include "io/tensor_convert.h"
#include "reference/dequantize.h"
#include "reference/half_float.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "tests/support/quantize_options.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;

using RunResult = test_support::CliRun;
std::string slurp(const fs::path& p) { return test_support::slurp_text(p); }

class CliTest : public test_support::TempDirTest {
 protected:
  RunResult run(const std::string& args) { return test_support::run_cli(args, dir_); }

  // Files in the test directory other than the ones named (catches partial/temporary outputs).
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path path(const std::string& name) const { return dir_ / name; }

  // Writes a random [rows, cols] F32 tensor named `name` and returns its values.
  FloatMatrix write_random(const std::string& file, std::size_t rows, std::size_t cols, const std::string& name = "x") {
    std::mt19937 rng(std::random_device{}());
    std::normal_distribution<float> dist(0.0f, 2.0f);
    FloatMatrix x = xt::empty<float>({rows, cols});
    for (float& v : x) v = dist(rng);
    io::File f;
    f.tensors[name] = io::from_float_matrix(x, io::FloatType::F32);
    io::write_file_atomic(path(file), f);
    return x;
  }

  // Expects exit code 2, exactly one line on stderr containing `phrase`, and no new file.
  void expect_clean_failure(const std::string& args, const std::string& phrase) {
    const std::vector<std::string> before = files();
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr lacks '" << phrase << "': " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "expected one line: " << r.err;
    EXPECT_EQ(files(), before) << "a failing command left a file behind: " << args;
  }
};

ByteMatrix bytes_of(const io::File& f, const std::string& name) { return io::to_byte_matrix(f.tensors.at(name), "test", name); }
FloatVector floats_of(const io::File& f, const std::string& name) {
  return io::to_float_vector(f.tensors.at(name), "test", name);
}

TEST_F(CliTest, QuantizeBothDirectionsWritesTheLayoutsOfTheLibrary) {
  const FloatMatrix x = write_random("in.safetensors", 48, 80);
  const RunResult r = run("quantize --input " + path("in.safetensors").string() + " --output " + path("q.safetensors").string() +
                          " --profile te-2.13 --direction both");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const io::File q = io::read_file(path("q.safetensors"));
  QuantizeOptions o;
  o.profile = find_profile("te-2.13")->knobs;
  o.direction = Direction::kBoth;
  const Quantization want = quantize(x, o);
  EXPECT_EQ(bytes_of(q, "data"), want.rowwise->data);
  EXPECT_EQ(bytes_of(q, "scale"), want.rowwise->scale);
  EXPECT_EQ(bytes_of(q, "data_t"), want.columnwise->data);
  EXPECT_EQ(bytes_of(q, "scale_t"), want.columnwise->scale);
  EXPECT_EQ(floats_of(q, "amax"), want.rowwise->amax);
  EXPECT_EQ(floats_of(q, "amax_t"), want.columnwise->amax);
  EXPECT_EQ(q.tensors.at("data").shape, (std::vector<std::int64_t>{48, 40}));
  EXPECT_EQ(q.tensors.at("scale").shape, (std::vector<std::int64_t>{128, 8}));
  EXPECT_EQ(q.tensors.at("data_t").shape, (std::vector<std::int64_t>{80, 24}));
  EXPECT_EQ(q.tensors.at("scale_t").shape, (std::vector<std::int64_t>{128, 4}));
  EXPECT_EQ(q.tensors.count("global_scale"), 0u) << "te-2.13 stores only the amax";
  EXPECT_EQ(q.metadata.at("profile"), "te-2.13");
  EXPECT_EQ(q.metadata.at("direction"), "both");
  EXPECT_EQ(q.metadata.at("input_dtype"), "F32");
  EXPECT_EQ(q.metadata.at("input_shape"), "[48, 80]");
  EXPECT_EQ(q.metadata.at("input_tensor"), "x");
  EXPECT_NE(q.metadata.at("tool").find("nvfp4-verify"), std::string::npos);
}

TEST_F(CliTest, RoundTripThroughFilesEqualsLibraryDequantization) {
  const FloatMatrix x = write_random("in.safetensors", 32, 64);
  ASSERT_EQ(run("quantize --input " + path("in.safetensors").string() + " --output " + path("q.safetensors").string() +
                " --direction both --scale-layout swizzled")
                .exit_code,
            0);
  const RunResult r = run("dequantize --input " + path("q.safetensors").string() + " --output " + path("x.safetensors").string() +
                          " --dtype bf16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const io::File out = io::read_file(path("x.safetensors"));
  QuantizeOptions o;
  o.profile = default_profile().knobs;
  o.direction = Direction::kBoth;
  const Quantization q = quantize(x, o);  // compact scales: the CLI must unswizzle on its own
  const FloatMatrix want = dequantize(q.rowwise->data, q.rowwise->scale, q.rowwise->amax, o.profile);
  const FloatMatrix want_t = dequantize(q.columnwise->data, q.columnwise->scale, q.columnwise->amax, o.profile);
  ASSERT_EQ(out.tensors.at("x").dtype, io::DType::BF16);
  ASSERT_EQ(out.tensors.at("x").shape, (std::vector<std::int64_t>{32, 64}));
  ASSERT_EQ(out.tensors.at("x_t").shape, (std::vector<std::int64_t>{64, 32}));
  const auto* got = reinterpret_cast<const std::uint16_t*>(out.tensors.at("x").bytes.data());
  const auto* got_t = reinterpret_cast<const std::uint16_t*>(out.tensors.at("x_t").bytes.data());
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], float_to_bf16(want.data()[i])) << "element " << i;
  for (std::size_t i = 0; i < want_t.size(); ++i) ASSERT_EQ(got_t[i], float_to_bf16(want_t.data()[i])) << "element " << i;
}

TEST_F(CliTest, Bf16AndF16InputsAreWidenedExactly) {
  for (const auto type : {io::FloatType::BF16, io::FloatType::F16}) {
    FloatMatrix x = xt::empty<float>({16, 32});
    std::mt19937 rng(std::random_device{}());
    for (float& v : x) v = std::uniform_real_distribution<float>(-8, 8)(rng);
    io::File f;
    f.tensors["w"] = io::from_float_matrix(x, type);
    io::write_file_atomic(path("in.safetensors"), f);
    const FloatMatrix exact = io::to_float_matrix(f.tensors["w"], "test", "w");  // the narrowed values
    ASSERT_EQ(
        run("quantize --input " + path("in.safetensors").string() + " --output " + path("q.safetensors").string()).exit_code, 0);
    QuantizeOptions o;
    o.profile = default_profile().knobs;
    EXPECT_EQ(bytes_of(io::read_file(path("q.safetensors")), "data"), quantize(exact, o).rowwise->data);
  }
}

TEST_F(CliTest, AmaxOverrideAcceptsDecimalAndBitPatterns) {
  const FloatMatrix x = write_random("in.safetensors", 16, 16);
  ASSERT_EQ(
      run("quantize --input " + path("in.safetensors").string() + " --output " + path("a.safetensors").string() + " --amax 6.5")
          .exit_code,
      0);
  ASSERT_EQ(run("quantize --input " + path("in.safetensors").string() + " --output " + path("b.safetensors").string() +
                " --amax 0x40D00000")
                .exit_code,
            0);
  const io::File a = io::read_file(path("a.safetensors")), b = io::read_file(path("b.safetensors"));
  EXPECT_EQ(floats_of(a, "amax")(0), 6.5f);
  EXPECT_EQ(bytes_of(a, "scale"), bytes_of(b, "scale"));
  EXPECT_EQ(a.metadata.at("amax_override"), "0x40D00000");
}

TEST_F(CliTest, ProfilesWithASecondLevelScaleStoreIt) {
  write_random("in.safetensors", 16, 16);
  for (const char* p : {"torchao", "modelopt", "miles"}) {
    ASSERT_EQ(run("quantize --input " + path("in.safetensors").string() + " --output " + path("q.safetensors").string() +
                  " --profile " + p)
                  .exit_code,
              0);
    const io::File q = io::read_file(path("q.safetensors"));
    ASSERT_EQ(q.tensors.count("global_scale"), 1u) << p;
    EXPECT_EQ(q.tensors.at("global_scale").shape, (std::vector<std::int64_t>{1})) << p;
  }
}

TEST_F(CliTest, RowScaledStoresOneAmaxPerRowAndColumn) {
  write_random("in.safetensors", 32, 48);
  ASSERT_EQ(run("quantize --input " + path("in.safetensors").string() + " --output " + path("q.safetensors").string() +
                " --row-scaled --direction both")
                .exit_code,
            0);
  const io::File q = io::read_file(path("q.safetensors"));
  EXPECT_EQ(q.tensors.at("amax").shape, (std::vector<std::int64_t>{32}));
  EXPECT_EQ(q.tensors.at("amax_t").shape, (std::vector<std::int64_t>{48}));
}

TEST_F(CliTest, TensorOptionPicksOneOfSeveral) {
  io::File f;
  FloatMatrix x = xt::ones<float>({16, 16});
  f.tensors["a"] = io::from_float_matrix(x, io::FloatType::F32);
  f.tensors["b"] = io::from_float_matrix(x, io::FloatType::F32);
  io::write_file_atomic(path("two.safetensors"), f);
  expect_clean_failure("quantize --input " + path("two.safetensors").string() + " --output " + path("q.safetensors").string(),
                       "choose one with --tensor");
  expect_clean_failure(
      "quantize --input " + path("two.safetensors").string() + " --tensor c --output " + path("q.safetensors").string(),
      "no tensor named 'c'");
  EXPECT_EQ(run("quantize --input " + path("two.safetensors").string() + " --tensor b --output " + path("q.safetensors").string())
                .exit_code,
            0);
}

TEST_F(CliTest, BadInputFailsWithOneLineAndNoOutputFile) {
  const std::string out = " --output " + path("q.safetensors").string();
  expect_clean_failure("quantize --input " + path("missing.safetensors").string() + out, "cannot open");
  { std::ofstream(path("junk.safetensors")) << "this is not a safetensors file at all"; }
  expect_clean_failure("quantize --input " + path("junk.safetensors").string() + out, "junk.safetensors");
  write_random("full.safetensors", 32, 32);
  const std::string full = slurp(path("full.safetensors"));
  { std::ofstream(path("cut.safetensors"), std::ios::binary) << full.substr(0, full.size() - 100); }
  expect_clean_failure("quantize --input " + path("cut.safetensors").string() + out, "truncated");

  io::File f;
  const std::vector<std::uint8_t> bytes(16 * 16, 0);
  f.tensors["u"] = io::make_tensor(io::DType::U8, {16, 16}, bytes);
  io::write_file_atomic(path("u8.safetensors"), f);
  expect_clean_failure("quantize --input " + path("u8.safetensors").string() + out, "E_DTYPE");
  f.tensors.clear();
  const std::vector<float> v(16 * 16 * 2, 1.0f);
  f.tensors["x"] = io::make_tensor_from<float>(io::DType::F32, {2, 16, 16}, v);
  io::write_file_atomic(path("rank3.safetensors"), f);
  expect_clean_failure("quantize --input " + path("rank3.safetensors").string() + out, "E_RANK");
  f.tensors["x"] = io::make_tensor_from<float>(io::DType::F32, {16}, std::span(v).first(16));
  io::write_file_atomic(path("rank1.safetensors"), f);
  expect_clean_failure("quantize --input " + path("rank1.safetensors").string() + out, "E_RANK");
  write_random("k100.safetensors", 16, 100);
  expect_clean_failure("quantize --input " + path("k100.safetensors").string() + out,
                       "quantize_1d: E_DIM16_K: K=100 is not a multiple of 16");
  write_random("m40.safetensors", 40, 16);
  expect_clean_failure("quantize --input " + path("m40.safetensors").string() + out, "E_DIM16_M: M=40");

  const std::string in = "quantize --input " + path("full.safetensors").string() + out;
  expect_clean_failure(in + " --profile nope", "--profile");
  expect_clean_failure(in + " --frobnicate", "frobnicate");
  expect_clean_failure(in + " --block 3d", "--block");
  expect_clean_failure(in + " --amax abc", "--amax");
  expect_clean_failure(in + " --block 2d --row-scaled", "E_UNSUPPORTED");
  expect_clean_failure("quantize --input " + path("full.safetensors").string(), "--output");
  expect_clean_failure(
      "quantize --input " + path("full.safetensors").string() + " --output " + path("no/such/dir/q.safetensors").string(),
      "q.safetensors");
}

TEST_F(CliTest, DequantizeRejectsIncompleteAndMalformedFiles) {
  write_random("x.safetensors", 16, 16);
  const std::string out = " --output " + path("y.safetensors").string();
  expect_clean_failure("dequantize --input " + path("x.safetensors").string() + out, "neither 'data' nor 'data_t'");
  io::File f;
  const std::vector<std::uint8_t> data(16 * 8, 0x22), scale(128 * 4, 0x38);
  f.tensors["data"] = io::make_tensor(io::DType::U8, {16, 8}, data);
  io::write_file_atomic(path("nodata.safetensors"), f);
  expect_clean_failure("dequantize --input " + path("nodata.safetensors").string() + out, "missing tensor 'scale'");
  f.tensors["scale"] = io::make_tensor(io::DType::U8, {128, 8}, std::vector<std::uint8_t>(128 * 8, 0x38));
  f.tensors["amax"] = io::make_tensor_from<float>(io::DType::F32, {1}, std::vector<float>{6.0f});
  io::write_file_atomic(path("badscale.safetensors"), f);
  expect_clean_failure("dequantize --input " + path("badscale.safetensors").string() + out, "E_SCALE_SHAPE");
  f.tensors["scale"] = io::make_tensor(io::DType::U8, {128, 4}, scale);
  f.tensors["amax"] = io::make_tensor_from<float>(io::DType::F32, {3}, std::vector<float>{6.0f, 6.0f, 6.0f});
  io::write_file_atomic(path("badamax.safetensors"), f);
  expect_clean_failure("dequantize --input " + path("badamax.safetensors").string() + out, "E_AMAX_SHAPE");
  expect_clean_failure("dequantize --input " + path("badamax.safetensors").string() + out + " --dtype f64", "--dtype");
}

TEST_F(CliTest, DequantizeOfKnownBytesFollowsTheTeChain) {
  // One block of code 0x2 (1.0) with scale byte 0x38 (1.0) and amax 2688: te's chain gives
  // RN(RN(1 * 2688) * r2688) = RN(2688 * 0x39C30C31), one FP32 product, independent of the CLI.
  io::File f;
  f.tensors["data"] = io::make_tensor(io::DType::U8, {16, 8}, std::vector<std::uint8_t>(16 * 8, 0x22));
  f.tensors["scale"] = io::make_tensor(io::DType::U8, {128, 4}, std::vector<std::uint8_t>(128 * 4, 0x38));
  f.tensors["amax"] = io::make_tensor_from<float>(io::DType::F32, {1}, std::vector<float>{2688.0f});
  io::write_file_atomic(path("q.safetensors"), f);
  ASSERT_EQ(run("dequantize --input " + path("q.safetensors").string() + " --output " + path("x.safetensors").string()).exit_code,
            0);
  const io::Tensor x = io::read_file(path("x.safetensors")).tensors.at("x");
  float expected = 2688.0f * float_of(0x39C30C31u);
  float first;
  std::memcpy(&first, x.bytes.data(), 4);
  EXPECT_EQ(bits_of(first), bits_of(expected));
}

TEST_F(CliTest, ProfilesListsEveryProfileAndTheDocsAreInSync) {
  const RunResult r = run("profiles");
  ASSERT_EQ(r.exit_code, 0);
  for (const NamedProfile& p : all_profiles()) EXPECT_NE(r.out.find(std::string(p.name) + " "), std::string::npos) << p.name;
  const RunResult md = run("profiles --markdown");
  ASSERT_EQ(md.exit_code, 0);
  EXPECT_EQ(md.out, slurp(fs::path(NVFP4_SOURCE_DIR) / "docs" / "spec" / "profiles.md"))
      << "docs/spec/profiles.md is stale: regenerate it with `nvfp4-verify profiles --markdown > docs/spec/profiles.md`";
}

TEST_F(CliTest, ProfilesSayWhetherEachIsProvenAndDocsPeersIsInSync) {
  const RunResult r = run("profiles");
  ASSERT_EQ(r.exit_code, 0);
  ASSERT_EQ(profile_proofs().size(), all_profiles().size()) << "one proof row per profile";
  for (std::size_t i = 0; i < all_profiles().size(); ++i) {
    const ProfileProof& proof = profile_proofs()[i];
    EXPECT_EQ(proof.profile, all_profiles()[i].name) << "proof rows follow the profile table's order";
    EXPECT_NE(r.out.find(proof.proven() ? "proven against " + std::string(proof.peer) : "not proven: "), std::string::npos)
        << proof.profile;
  }
  const RunResult md = run("profiles --peers-markdown");
  ASSERT_EQ(md.exit_code, 0);
  EXPECT_EQ(md.out, slurp(fs::path(NVFP4_SOURCE_DIR) / "docs" / "peers.md"))
      << "docs/peers.md is stale: regenerate it with `nvfp4-verify profiles --peers-markdown > docs/peers.md`";
}

TEST_F(CliTest, HelpExitsZeroForEveryCommand) {
  for (const char* c :
       {"--help", "quantize --help", "dequantize --help", "profiles --help", "selfcheck --help", "cast-master-weights --help"}) {
    const RunResult r = run(c);
    EXPECT_EQ(r.exit_code, 0) << c;
    EXPECT_NE(r.out.find("--"), std::string::npos) << c;
  }
}

TEST_F(CliTest, CastMasterWeightsEqualsQuantize2DOfEveryWeight) {
  // Two weights in one file (name order: "attn.qkv" then "mlp.up"), plus a 1-D tensor that is not a weight.
  const FloatMatrix a = write_random("w.safetensors", 48, 80, "mlp.up");
  io::File f = io::read_file(path("w.safetensors"));
  const FloatMatrix b = write_random("tmp.safetensors", 32, 16, "attn.qkv");
  f.tensors["attn.qkv"] = io::read_file(path("tmp.safetensors")).tensors.at("attn.qkv");
  const std::vector<float> bias(16, 1.0f);
  f.tensors["mlp.bias"] = io::make_tensor_from<float>(io::DType::F32, {16}, bias);
  io::write_file_atomic(path("w.safetensors"), f);
  const std::string base =
      "cast-master-weights --input " + path("w.safetensors").string() + " --output " + path("c.safetensors").string();
  // Cut points: mid-byte inside attn.qkv, one past the weight boundary (512), odd, and an empty rank.
  for (const std::string& args : {base + " --ranks 5 --cuts 129,513,513,2001", base + " --ranks 3", base + " --ranks 1"}) {
    const RunResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    const io::File c = io::read_file(path("c.safetensors"));
    EXPECT_EQ(c.tensors.size(), 10u);
    for (const auto& [name, w] : {std::pair<std::string, const FloatMatrix&>{"mlp.up", a}, {"attn.qkv", b}}) {
      const FloatMatrix bf16 = io::to_float_matrix(io::from_float_matrix(w, io::FloatType::BF16), "test", name);
      const Quantization q = quantize(bf16, test_support::opts(find_profile("te")->knobs, BlockShape::k2D));
      EXPECT_EQ(bytes_of(c, name + ".data"), q.rowwise->data) << name << ": " << args;
      EXPECT_EQ(bytes_of(c, name + ".scale"), q.rowwise->scale) << name;
      EXPECT_EQ(bytes_of(c, name + ".data_t"), q.columnwise->data) << name;
      EXPECT_EQ(bytes_of(c, name + ".scale_t"), q.columnwise->scale) << name;
      EXPECT_EQ(floats_of(c, name + ".amax"), q.rowwise->amax) << name;
    }
  }
}

TEST_F(CliTest, CastMasterWeightsRejectsBadCutsAndInputs) {
  write_random("w.safetensors", 32, 32, "w");
  const std::string base =
      "cast-master-weights --input " + path("w.safetensors").string() + " --output " + path("c.safetensors").string();
  expect_clean_failure(base + " --ranks 3 --cuts 500,100", "must not decrease");
  expect_clean_failure(base + " --ranks 3 --cuts 100", "1 cut points for 3 ranks; expected 2");
  expect_clean_failure(base + " --ranks 2 --cuts 1025", "past the 1024 elements");
  expect_clean_failure(base + " --ranks 2 --cuts 12x", "--cuts");
  expect_clean_failure(base + " --ranks 0", "--ranks");
  expect_clean_failure(base + " --ranks 65", "--ranks");
  expect_clean_failure(base + " --ranks 2 --profile te-2.13", "--profile");
  expect_clean_failure(base + " --ranks 2 --backend cpu", "--backend");
  expect_clean_failure("cast-master-weights --input " + path("w.safetensors").string() + " --ranks 2", "--output");
  write_random("k40.safetensors", 16, 40, "w");
  expect_clean_failure("cast-master-weights --input " + path("k40.safetensors").string() + " --output " +
                           path("c.safetensors").string() + " --ranks 2",
                       "E_DIM16_K");
  io::File f;
  const std::vector<std::uint16_t> h(256, 0x3C00);
  f.tensors["w"] = io::make_tensor_from<std::uint16_t>(io::DType::F16, {16, 16}, h);
  io::write_file_atomic(path("f16.safetensors"), f);
  expect_clean_failure("cast-master-weights --input " + path("f16.safetensors").string() + " --output " +
                           path("c.safetensors").string() + " --ranks 2",
                       "E_DTYPE");
}

// The operation table of a campaign's summary: "  op  cases  cases/s  failures" -> "op cases failures".
std::vector<std::string> campaign_counts(const std::string& out) {
  static const std::regex row(R"(^  ([a-z_0-9]+) +([0-9]+) +[0-9.]+ +([0-9]+)$)");
  std::vector<std::string> rows;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (std::smatch m; std::regex_match(line, m, row)) rows.push_back(m[1].str() + " " + m[2].str() + " " + m[3].str());
  return rows;
}

TEST_F(CliTest, FuzzJobsChangeOnlyTheSpeedAndBadJobOptionsFail) {
  const std::string base = "fuzz --cases 120 --seed " + std::to_string(std::random_device{}()) +
                           " --backends reference,metamorphic --corpus " + path("found").string();
  const RunResult one = run(base + " --jobs 1"), three = run(base + " --jobs 3");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_NE(one.out.find(", 1 job "), std::string::npos) << one.out;
  EXPECT_NE(three.out.find(", 3 jobs "), std::string::npos) << three.out;
  const std::vector<std::string> counts = campaign_counts(one.out);
  EXPECT_GE(counts.size(), 10u) << one.out;
  EXPECT_EQ(campaign_counts(three.out), counts) << base;
  expect_clean_failure(base + " --jobs -2", "--jobs");
  expect_clean_failure(base + " --devices 0", "--devices");
  expect_clean_failure(base + " --devices two", "--devices");
}

TEST_F(CliTest, SelfcheckPassesOnASmallExample) {
  const RunResult r = run("selfcheck --size 64");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("selfcheck: 0 worked-example checks failed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace nvfp4
