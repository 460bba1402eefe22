// Conformance vector packs (docs/vectors.md): deterministic generation, the pack's files and
// hashes, a damaged pack refused, the committed level-1 hashes current, and the distinguishing
// power the issue asks for (every pair of profiles, every fault pattern).
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <regex>

#include "io/sha256.h"
#include "reference/profiles.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"
#include "vectors/pack.h"
#include "vectors/stats.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using vectors::Level;
using vectors::Selection;
using vectors::VectorSet;

const std::vector<VectorSet>& level1() {
  static const std::vector<VectorSet> sets = vectors::generate(Selection{});
  return sets;
}

const vectors::Vector& find_vector(const VectorSet& s, std::string_view regime, std::string_view pattern, std::string_view mode) {
  for (const vectors::Vector& v : s.vectors)
    if (v.regime == regime && v.pattern == pattern && v.mode == mode) return v;
  throw std::runtime_error("no such vector");
}

const VectorSet& find_set(const std::vector<VectorSet>& sets, std::string_view op, std::string_view profile) {
  for (const VectorSet& s : sets)
    if (s.op == op && s.profile == profile) return s;
  throw std::runtime_error("no such set");
}

// The unit-scale regime under te: g = 2688 given, so S_enc = 1, the block scale is RN(6 * RN(r6))
// = 1.0 (E4M3 0x38) and the encode factor 1: the codes are e2m1(x) of the midpoints themselves,
// ties to even (NUMERICS.md §2.1.2), worked out here by hand. Row r holds the pattern rotated by r.
TEST(Vectors, AUnitScaleVectorHoldsTheMidpointsTiesToEven) {
  const vectors::Vector& v = find_vector(find_set(level1(), "quantize", "te"), "unit-scale", "midpoints", "1d-both-f32");
  ASSERT_EQ(v.c.params.f32("amax"), 2688.0f);
  // midpoints: 6, .25, -.75, 1.25, -1.75, 2.5, -3.5, 5, -.25, .75, -1.25, 1.75, -2.5, 3.5, -5, 0
  const std::uint8_t codes[16] = {0x7, 0x0, 0xA, 0x2, 0xC, 0x4, 0xE, 0x6, 0x8, 0x2, 0xA, 0x4, 0xC, 0x6, 0xE, 0x0};
  const io::Tensor& data = v.expected.at("data");
  ASSERT_EQ(data.shape, (std::vector<std::int64_t>{16, 16}));
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; c += 2) {
      const std::uint8_t byte = data.bytes[std::size_t(r * 16 + c / 2)];
      EXPECT_EQ(byte & 0xF, codes[(r + c) % 16]) << "row " << r << " column " << c;
      EXPECT_EQ(byte >> 4, codes[(r + c + 1) % 16]) << "row " << r << " column " << c + 1;
    }
  EXPECT_EQ(v.expected.at("scale").bytes[0], 0x38);
}

TEST(Vectors, TheSameSelectionGivesTheSameBytesAndTheSeedMatters) {
  const Selection s{Level::k1, 7, {"quantize", "rht"}, {"te", "mslk"}};
  const std::vector<VectorSet> a = vectors::generate(s), b = vectors::generate(s);
  ASSERT_EQ(a.size(), 3u);  // quantize-te, quantize-mslk, rht
  EXPECT_EQ(vectors::set_hashes(a), vectors::set_hashes(b));
  Selection other = s;
  other.seed = 8;
  const std::vector<std::string> h = vectors::set_hashes(a), g = vectors::set_hashes(vectors::generate(other));
  for (std::size_t i = 0; i < h.size(); ++i) EXPECT_NE(h[i], g[i]) << a[i].file_name() << ": the seeded regime";
}

class VectorPackTest : public test_support::TempDirTest {};

TEST_F(VectorPackTest, APackReadsBackWithItsHashesAndADamagedFileIsRefused) {
  const Selection s{Level::k1, 3, {"dequantize", "gemm"}, {"torchao"}};
  const std::vector<VectorSet> sets = vectors::generate(s);
  const fs::path dir = dir_ / "pack";
  const nlohmann::json m = vectors::write_pack(dir, s, sets);
  ASSERT_EQ(m.at("files").size(), 2u);
  for (const nlohmann::json& f : m.at("files"))
    EXPECT_EQ(io::sha256_file_hex(dir / f.at("file").get<std::string>()), f.at("sha256").get<std::string>());
  EXPECT_EQ(m.at("profiles").at("torchao").at("GS"), "PTS");
  const vectors::Pack p = vectors::read_pack(dir);
  ASSERT_EQ(p.sets.size(), sets.size());
  for (std::size_t i = 0; i < sets.size(); ++i) {
    ASSERT_EQ(p.sets[i].vectors.size(), sets[i].vectors.size());
    for (std::size_t k = 0; k < sets[i].vectors.size(); ++k) {
      const vectors::Vector &x = sets[i].vectors[k], &y = p.sets[i].vectors[k];
      EXPECT_EQ(x.id, y.id);
      EXPECT_EQ(x.c.params, y.c.params);
      ASSERT_EQ(x.expected.size(), y.expected.size());
      for (const auto& [name, t] : x.expected) EXPECT_EQ(t.bytes, y.expected.at(name).bytes) << x.id << " " << name;
    }
  }
  // One byte of a file changed: the pack is refused, naming the file.
  const fs::path file = dir / "gemm.safetensors";
  std::vector<char> bytes((std::istreambuf_iterator<char>(std::ifstream(file, std::ios::binary).rdbuf())), {});
  std::mt19937 rng(std::random_device{}());
  bytes[bytes.size() - 1 - rng() % 256] ^= 0x10;
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  try {
    vectors::read_pack(dir);
    FAIL() << "a damaged pack was read";
  } catch (const io::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("gemm.safetensors: SHA-256"), std::string::npos) << e.what();
  }
}

// corpora/vectors/level-1.json is what the gate compares the regenerated level 1 with.
TEST(Vectors, TheCommittedLevel1HashesAreCurrent) {
  const std::vector<std::string> d =
      vectors::hash_differences(vectors::read_hashes(std::string(NVFP4_SOURCE_DIR) + "/corpora/vectors/level-1.json"),
                                vectors::hashes_json(Selection{}, level1()));
  for (const std::string& line : d) ADD_FAILURE() << line;
}

TEST(Vectors, Level1TellsEveryPairOfProfilesApart) {
  const vectors::ProfilePairs pairs = vectors::profile_pairs(level1());
  ASSERT_EQ(pairs.profiles.size(), all_profiles().size());
  for (std::size_t i = 0; i < pairs.profiles.size(); ++i)
    for (std::size_t j = i + 1; j < pairs.profiles.size(); ++j)
      EXPECT_GT(pairs.differing[i][j], 0u) << pairs.profiles[i] << " vs " << pairs.profiles[j];
}

TEST(Vectors, EveryFaultPatternChangesALevel1Vector) {
  for (const vectors::FaultReach& f : vectors::fault_reach(level1())) EXPECT_GT(f.changed, 0u) << f.pattern;
}

TEST(Vectors, Level2AddsPatternsModesAndAShapeOffTheTiles) {
  const Selection s2{Level::k2, 1, {"quantize"}, {"te"}};
  const std::vector<VectorSet> two = vectors::generate(s2);
  const VectorSet& one = find_set(level1(), "quantize", "te");
  EXPECT_GT(two.at(0).vectors.size(), 4 * one.vectors.size());
  const vectors::Vector& v = find_vector(two.at(0), "nan", "subnormals", "sr");
  (void)v;
  bool off_tiles = false;
  for (const vectors::Vector& w : two.at(0).vectors) off_tiles |= w.c.inputs.at("x").shape == std::vector<std::int64_t>{48, 80};
  EXPECT_TRUE(off_tiles);
}

TEST(Vectors, EveryClassHasItsRowInTheDocs) {
  std::ifstream in(std::string(NVFP4_SOURCE_DIR) + "/docs/vectors.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(doc.empty());
  for (const vectors::Regime& r : vectors::regimes())
    EXPECT_NE(doc.find("| `" + std::string(r.name) + "` |"), std::string::npos) << r.name;
  for (const vectors::Pattern& p : vectors::patterns(Level::k2))
    EXPECT_NE(doc.find("| `" + std::string(p.name) + "` |"), std::string::npos) << p.name;
  for (std::string_view op : vectors::vector_operations()) {  // a "### " heading that names it
    bool found = false;
    for (std::size_t at = doc.find("\n### "); at != std::string::npos && !found; at = doc.find("\n### ", at + 1))
      found = doc.substr(at, doc.find('\n', at + 1) - at).find("`" + std::string(op) + "`") != std::string::npos;
    EXPECT_TRUE(found) << op << ": no section of docs/vectors.md";
    for (std::string_view mode : vectors::operation_modes(op))
      EXPECT_NE(doc.find("| `" + std::string(mode) + "` |"), std::string::npos) << op << " mode " << mode;
  }
}

// vectors --check through the worker path: the fake worker answers with the reference on the cases
// it declares (docs/spec/worker-protocol.md's example), so those agree and the rest are skipped; in
// its mismatch mode it flips a scale bit, and the failures carry verdicts and report pages.
TEST_F(VectorPackTest, CheckAgainstAWorkerPassesSkipsAndFailsLikeReplay) {
  using test_support::run_cli;
  const std::string pack = (dir_ / "pack").string();
  ASSERT_EQ(run_cli("vectors --ops quantize --profiles te --output " + pack, dir_).exit_code, 0);
  const test_support::CliRun ok = run_cli("vectors --check " + pack + " --worker " + NVFP4_FAKE_WORKER, dir_, 300);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("PASS  " + pack + "/quantize-te.safetensors#v"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find(" failed, "), std::string::npos) << ok.out;  // skipped: outside the declaration
  const std::string report = (dir_ / "report").string();
  const test_support::CliRun bad =
      run_cli("vectors --check " + pack + " --worker '" + NVFP4_FAKE_WORKER + " mismatch' --report " + report, dir_, 300);
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("FAIL  " + pack + "/quantize-te.safetensors#v"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("verdict: "), std::string::npos) << bad.out;
  EXPECT_TRUE(fs::exists(dir_ / "report" / "index.html"));
  bool page = false;
  for (const auto& e : fs::directory_iterator(dir_ / "report")) page |= e.path().filename().string().starts_with("quantize-te-v");
  EXPECT_TRUE(page) << "no failure page named after its vector";
}

// The gate regenerates level 1: a committed hash that differs (the reference's outputs changed)
// fails it, naming the file, and the vectors still replay.
TEST_F(VectorPackTest, TheGateFailsOnAChangedLevel1Hash) {
  nlohmann::json committed = vectors::read_hashes(std::string(NVFP4_SOURCE_DIR) + "/corpora/vectors/level-1.json");
  std::string& h = committed.at("files").at("rht.safetensors").get_ref<std::string&>();
  h[0] = h[0] == '0' ? '1' : '0';
  const fs::path hashes = dir_ / "level-1.json";
  std::ofstream(hashes) << committed.dump(2);
  const test_support::CliRun r = test_support::run_cli(
      "gate --time 1s --jobs 1 --backends reference,metamorphic --corpus " + (dir_ / "none").string() + " --vectors " +
          hashes.string() + " --report " + (dir_ / "report").string() + " --found " + (dir_ / "found").string(),
      dir_);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL " + hashes.string() + ": level-1 vectors: rht.safetensors: regenerated SHA-256 "), std::string::npos)
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nvectors: [1-9][0-9]* cases replayed, 0 failed\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(" vectors \\([0-9]+ file hashes compared\\) and "))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\ngate: [0-9]+ passed, 1 failed\n"))) << r.out;
  EXPECT_NE(r.out.find("; 1 MISMATCHED\n"), std::string::npos) << r.out;
}

// A plugin that declares none of the pack's operations (the example plugin: amax_global) checks
// nothing, and says so with exit 1 rather than passing.
TEST_F(VectorPackTest, CheckingNothingIsNotAPass) {
  const std::string pack = (dir_ / "pack").string();
  ASSERT_EQ(test_support::run_cli("vectors --ops rht --output " + pack, dir_).exit_code, 0);
  const test_support::CliRun r = test_support::run_cli("vectors --check " + pack + " --plugin " + NVFP4_EXAMPLE_PLUGIN, dir_);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("declares none of the pack's vectors: nothing to check"), std::string::npos) << r.out;
}

TEST_F(VectorPackTest, BadRequestsAreOneLineAndExitTwo) {
  using test_support::run_cli;
  for (const std::string args : {std::string("vectors --output ") + (dir_ / "p").string() + " --stats",
                                 std::string("vectors --ops amax_global --output ") + (dir_ / "p").string(),
                                 std::string("vectors --profiles nope --stats"),
                                 std::string("vectors --check ") + (dir_ / "missing").string() + " --backend reference",
                                 std::string("vectors --check ") + dir_.string()}) {
    const test_support::CliRun r = run_cli(args, dir_);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
    EXPECT_TRUE(r.err.starts_with("nvfp4-verify: ")) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "p"));
}

}  // namespace
}  // namespace nvfp4
