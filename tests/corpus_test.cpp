// Case files and corpora: every operation's case survives a round trip through a file bit for bit
// (exact amax bits included), recipe-only inputs regenerate identically, files are named by a
// content hash, never overwritten or deleted, and every unreadable file is a FormatError naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "cases/corpus.h"
#include "cases/metamorphic_backend.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "cases/seeds/seed_corpus.h"
#include "compare/compare.h"
#include "reference/layout.h"
#include "reference/profiles.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::uint8_t> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::uint64_t fnv1a64(const std::vector<std::uint8_t>& bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

void expect_same_tensor(const io::Tensor& a, const io::Tensor& b, const std::string& name) {
  EXPECT_EQ(a.dtype, b.dtype) << name;
  EXPECT_EQ(a.shape, b.shape) << name;
  EXPECT_TRUE(a.bytes == b.bytes) << name << ": bytes differ";
}

void expect_same_record(const cases::CaseRecord& a, const cases::CaseRecord& b) {
  EXPECT_EQ(cases::describe_case(a), cases::describe_case(b));
  EXPECT_EQ(a.c.op, b.c.op);
  EXPECT_EQ(a.c.op, b.c.op);
  EXPECT_TRUE(a.c.params == b.c.params) << cases::describe_case(a).dump() << "\n" << cases::describe_case(b).dump();
  ASSERT_EQ(a.c.inputs.size(), b.c.inputs.size());
  for (const auto& [name, t] : a.c.inputs) {
    ASSERT_TRUE(b.c.inputs.count(name)) << name;
    expect_same_tensor(t, b.c.inputs.at(name), name);
  }
  ASSERT_EQ(a.recipes.size(), b.recipes.size());
  for (const auto& [name, r] : a.recipes) EXPECT_EQ(cases::recipe_to_json(r), cases::recipe_to_json(b.recipes.at(name)));
}

cases::CaseRecord through_bytes(const cases::CaseRecord& r) {
  const std::vector<std::uint8_t> bytes = io::serialize(cases::case_to_file(r));
  return cases::case_from_file(io::parse(bytes, "memory"), "memory");
}

// Random data for every operation's inputs (any bit patterns: NaNs, infinities, subnormals).
class RandomCases {
 public:
  explicit RandomCases(std::uint64_t seed) : rng_(seed) {}

  std::int64_t dim16() { return 16 * std::int64_t(1 + rng_() % 5); }
  io::Tensor bytes(io::DType t, std::vector<std::int64_t> shape) {
    std::int64_t n = 1;
    for (std::int64_t d : shape) n *= d;
    std::vector<std::uint8_t> b(std::size_t(n) * io::dtype_size(t));
    for (auto& v : b) v = std::uint8_t(rng_());
    return io::make_tensor(t, std::move(shape), b);
  }
  io::DType float_type() {
    static const io::DType kTypes[] = {io::DType::F32, io::DType::BF16, io::DType::F16};
    return kTypes[rng_() % 3];
  }
  std::uint32_t amax_bits() {
    static const std::uint32_t kSpecial[] = {0x00000000, 0x80000000, 0x00000001, 0x7F800000,
                                             0x7FC00000, 0xFFA5A5A5, 0x7F7FFFFF, 0x40C00000};
    return (rng_() & 1) ? kSpecial[rng_() % std::size(kSpecial)] : std::uint32_t(rng_());
  }

  cases::CaseRecord make(std::string_view op) {
    cases::CaseRecord r;
    r.c = cases::make_case(op);
    const auto profiles = all_profiles();
    const std::string profile(profiles[rng_() % profiles.size()].name);
    if (r.c.params.has("profile")) r.c.params.set("profile", profile);
    r.origin = fmt::format("test seed {}", rng_());
    r.note = "random \xC2\xA7 note with \"quotes\" and \\backslashes\\";
    const std::int64_t M = dim16(), K = dim16();
    const auto round_up = [](std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; };
    auto set = [&](std::string_view name, cases::ParamValue v) { r.c.params.set(name, std::move(v)); };
    if (op == "quantize") {
      set("block", std::string((rng_() & 1) ? "2d" : "1d"));
      set("direction", std::string(std::vector<std::string>{"rowwise", "columnwise", "both"}[rng_() % 3]));
      set("row_scaled", bool(rng_() & 1));
      if (rng_() & 1) set("amax", cases::F32Bits{amax_bits()});
      set("scale_layout", std::string((rng_() & 1) ? "swizzled" : "compact"));
      r.c.inputs["x"] = bytes(float_type(), {M, K});
    } else if (op.starts_with("amax_") && op != "amax_partial") {
      r.c.inputs["x"] = bytes(float_type(), {M, K});
    } else if (op == "dequantize") {
      set("output_dtype", std::string(io::dtype_name(float_type())));
      r.c.inputs["data"] = bytes(io::DType::U8, {M, K / 2});
      r.c.inputs["scale"] = bytes(io::DType::U8, {round_up(M, 128), round_up(K / 16, 4)});
      r.c.inputs["amax"] = bytes(io::DType::F32, {1});
    } else if (op == "swizzle" || op == "unswizzle") {
      r.c.inputs["scale"] = bytes(io::DType::U8, {128 * std::int64_t(1 + rng_() % 2), 4 * std::int64_t(1 + rng_() % 3)});
    } else if (op == "transpose_packed") {
      r.c.inputs["data"] = bytes(io::DType::U8, {M, K / 2});
    } else if (op == "transpose_scales_2d") {
      set("M", M);
      set("K", K);
      r.c.inputs["scale"] = bytes(io::DType::U8, {round_up(M, 128), round_up(K / 16, 4)});
    } else if (op == "amax_partial" || op == "partial_cast_2d") {
      set("M", M);
      set("K", K);
      const std::int64_t start = std::int64_t(rng_() % (M * K));
      set("shard_start", start);
      const std::int64_t len = std::int64_t(rng_() % (M * K - start + 1));
      r.c.inputs["xs"] = bytes(io::DType::BF16, {len});
      if (op == "partial_cast_2d") {
        r.c.inputs["tile_scale"] = bytes(io::DType::F32, {M / 16, K / 16});
        r.c.inputs["global_scale"] = bytes(io::DType::F32, {1});
        r.c.inputs["data"] = bytes(io::DType::U8, {M, K / 2});
      }
    } else if (op == "fused_scale_2d") {
      r.c.inputs["tile_amax"] = bytes(io::DType::F32, {M / 16, K / 16});
      r.c.inputs["amax"] = bytes(io::DType::F32, {1});
    } else if (op == "rht") {
      set("rht_mask", std::uint64_t(rng_() & 0xFFFF));
      r.c.inputs["x"] = bytes(io::DType::BF16, {M, K});
    } else if (op == "cast_master_weights") {
      r.c.inputs["w.a"] = bytes(io::DType::F32, {M, K});
      r.c.inputs["w.b"] = bytes(io::DType::F32, {K, M});
      std::vector<std::int64_t> cuts;
      for (std::uint64_t i = rng_() % 8; i > 0; --i) cuts.push_back(std::int64_t(rng_() % (2 * M * K + 1)));
      std::sort(cuts.begin(), cuts.end());
      set("cuts", cuts);
    } else if (op == "gemm" || op == "grouped_gemm") {
      const std::int64_t N = 1 + std::int64_t(rng_() % 40);
      r.c.inputs["a_data"] = bytes(io::DType::U8, {M, K / 2});
      r.c.inputs["a_scale"] = bytes(io::DType::U8, {scale_rows(M), scale_cols(K)});
      r.c.inputs["a_amax"] = bytes(io::DType::F32, {1});
      r.c.inputs["b_data"] = bytes(io::DType::U8, {N, K / 2});
      r.c.inputs["b_scale"] = bytes(io::DType::U8, {scale_rows(N), scale_cols(K)});
      r.c.inputs["b_amax"] = bytes(io::DType::F32, {1});
      if (op == "gemm") {
        set("beta", cases::F32Bits{std::uint32_t(rng_())});
        r.c.inputs["c"] = bytes(io::DType::F32, {M, N});
      } else {
        set("group_sizes", std::vector<std::int64_t>{M});
      }
    } else if (op == "grouped_swizzle" || op == "grouped_unswizzle") {
      set("axis", std::string(rng_() % 2 ? "inner" : "outer"));
      set("group_sizes", std::vector<std::int64_t>{16, 0, M});
      r.c.inputs["scale"] = op == "grouped_swizzle" ? bytes(io::DType::U8, {scale_rows(M), scale_cols(K)})
                                                    : bytes(io::DType::U8, {scale_rows(M) * scale_cols(K)});
    } else {
      ADD_FAILURE() << "RandomCases has no inputs for operation " << op << ": add them";
    }
    return r;
  }

 private:
  std::mt19937_64 rng_;
};

class CorpusTest : public test_support::TempDirTest {
 protected:
  // A file with a valid case whose description JSON is then changed by `edit`.
  fs::path edited_case(const std::string& name, const std::function<void(json&)>& edit, std::string_view op = "quantize") {
    RandomCases g(7);
    io::File f = cases::case_to_file(g.make(op));
    json d = json::parse(f.metadata.at("nvfp4_case"));
    edit(d);
    f.metadata["nvfp4_case"] = d.dump();
    io::write_file_atomic(dir_ / name, f);
    return dir_ / name;
  }

  // load_case throws a FormatError whose message names the file and contains `phrase`.
  void expect_format_error(const fs::path& file, const std::string& phrase) {
    try {
      cases::load_case(file);
      ADD_FAILURE() << file << ": loaded without error";
    } catch (const io::FormatError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(file.string()), std::string::npos) << "message does not name the file: " << msg;
      EXPECT_NE(msg.find(phrase), std::string::npos) << "message lacks '" << phrase << "': " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "message is not one line: " << msg;
    }
  }
};

TEST_F(CorpusTest, EveryOperationRoundTripsThroughAFile) {
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  RandomCases g(seed);
  for (int rep = 0; rep < 4; ++rep)
    for (const cases::OperationSpec& spec : cases::operations()) {
      const std::string_view op = spec.name;
      SCOPED_TRACE(std::string(op));
      const cases::CaseRecord r = g.make(op);
      expect_same_record(r, through_bytes(r));
      const fs::path p = cases::save_case(dir_, r);
      expect_same_record(r, cases::load_case(p));
      // Every input is stored as a plain tensor, for Python users.
      const io::File f = io::read_file(p);
      for (const auto& [name, t] : r.c.inputs) expect_same_tensor(f.tensors.at(name), t, name);
    }
}

TEST_F(CorpusTest, RecipeInputIsStoredAndRegeneratedIdenticallyWhenAbsent) {
  for (const auto dist : {cases::Distribution::kRandn, cases::Distribution::kTies, cases::Distribution::kBlockLogUniform,
                          cases::Distribution::kSpecials, cases::Distribution::kUniform, cases::Distribution::kSrThresholds})
    for (const io::DType t : {io::DType::F32, io::DType::BF16, io::DType::F16}) {
      cases::Recipe rec;
      rec.dist = dist;
      rec.seed = std::random_device{}();
      rec.M = 32;
      rec.K = 48;
      rec.dtype = t;
      SCOPED_TRACE(cases::recipe_to_json(rec).dump());
      cases::CaseRecord r;
      r.c = cases::make_case("quantize");
      r.recipes["x"] = rec;  // no tensor in the record: case_to_file generates and stores it
      io::File f = cases::case_to_file(r);
      ASSERT_TRUE(f.tensors.count("x"));
      const io::Tensor want = cases::generate_tensor(rec);
      expect_same_tensor(f.tensors.at("x"), want, "stored");
      EXPECT_EQ(json::parse(f.metadata.at("nvfp4_case"))["inputs"]["x"]["recipe"], cases::recipe_to_json(rec));
      f.tensors.erase("x");  // a recipe-only file: the reader regenerates the input
      const cases::CaseRecord back = cases::case_from_file(f, "recipe-only");
      expect_same_tensor(back.c.inputs.at("x"), want, "regenerated");
      EXPECT_EQ(cases::recipe_to_json(back.recipes.at("x")), cases::recipe_to_json(rec));
    }
}

TEST_F(CorpusTest, StoredTensorWinsOverItsRecipe) {
  cases::Recipe rec;
  rec.seed = 5;
  cases::CaseRecord r;
  r.c = cases::make_case("amax_global");
  r.recipes["x"] = rec;
  r.c.inputs["x"] = cases::generate_tensor(rec);
  r.c.inputs["x"].bytes[0] ^= 1;  // e.g. a case shrunk by hand after generation
  const cases::CaseRecord back = through_bytes(r);
  expect_same_tensor(back.c.inputs.at("x"), r.c.inputs.at("x"), "x");
}

TEST_F(CorpusTest, AmaxOverrideKeepsItsExactBits) {
  for (const std::uint32_t bits : {0x7FC00000u, 0x7FA12345u, 0xFFC00001u, 0x7F800001u, 0x80000000u, 0x00000000u, 0x00000001u,
                                   0x807FFFFFu, 0x7F7FFFFFu, 0xFF800000u, 0x3DCCCCCDu}) {
    SCOPED_TRACE(fmt::format("0x{:08X}", bits));
    cases::CaseRecord r;
    r.c = cases::make_case("quantize");
    r.c.params.set("amax", cases::F32Bits{bits});
    r.c.inputs["x"] = RandomCases(bits).bytes(io::DType::F32, {16, 16});
    const json d = cases::describe_case(r);
    EXPECT_EQ(d["params"]["amax"], json({{"bits", fmt::format("0x{:08X}", bits)}}));
    const cases::CaseRecord back = through_bytes(r);
    ASSERT_TRUE(back.c.params.f32("amax"));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(*back.c.params.f32("amax")), bits);
  }
  cases::CaseRecord none;
  none.c = cases::make_case("quantize");
  none.c.inputs["x"] = RandomCases(1).bytes(io::DType::F32, {16, 16});
  EXPECT_TRUE(cases::describe_case(none)["params"]["amax"].is_null());
  EXPECT_FALSE(through_bytes(none).c.params.f32("amax"));
}

TEST_F(CorpusTest, FilesAreNamedByTheHashOfTheirContentStablyAndIdempotently) {
  // A fixed tensor-only case (no recipe): its file, hence its name, depends only on this
  // module's format. A change of the name means existing corpora would no longer deduplicate.
  cases::CaseRecord r;
  r.c = cases::make_case("swizzle");
  std::vector<std::uint8_t> b(128 * 4);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::uint8_t(i * 7);
  r.c.inputs["scale"] = io::make_tensor(io::DType::U8, {128, 4}, b);
  r.origin = "corpus test";
  r.note = "stable name";
  const fs::path p = cases::save_case(dir_, r);
  const std::vector<std::uint8_t> bytes = slurp(p);
  EXPECT_EQ(p.filename().string(), fmt::format("case-{:016x}.safetensors", fnv1a64(bytes)));
  EXPECT_TRUE(bytes == io::serialize(cases::case_to_file(r)));
  // Case format 2 (per-operation parameters) renamed it from case-62151ea07cad268f (format 1).
  EXPECT_EQ(p.filename().string(), "case-4e69ec5dcdf549d9.safetensors");
  // Saving again (and loading + saving) changes nothing.
  EXPECT_EQ(cases::save_case(dir_, r), p);
  EXPECT_EQ(cases::save_case(dir_, cases::load_case(p)), p);
  EXPECT_EQ(listing(dir_), std::vector<std::string>{p.filename().string()});
  EXPECT_TRUE(slurp(p) == bytes);
  // Any change of the content gives another name.
  r.note = "stable name.";
  const fs::path q = cases::save_case(dir_, r);
  EXPECT_NE(q, p);
  EXPECT_TRUE(std::regex_match(q.filename().string(), std::regex("case-[0-9a-f]{16}\\.safetensors")));
  EXPECT_EQ(listing(dir_).size(), 2u);
}

TEST_F(CorpusTest, AnExistingFileWithOtherContentIsNeverOverwritten) {
  RandomCases g(11);
  const cases::CaseRecord a = g.make("quantize"), b = g.make("dequantize");
  const fs::path p = cases::save_case(dir_, a);
  const std::vector<std::uint8_t> other = io::serialize(cases::case_to_file(b));
  spit(p, other);  // as if b's content hashed to a's name
  try {
    cases::save_case(dir_, a);
    ADD_FAILURE() << "save_case overwrote or accepted a different file";
  } catch (const io::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not overwritten"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(slurp(p) == other);
  EXPECT_EQ(listing(dir_), std::vector<std::string>{p.filename().string()}) << "temporary files left behind";
}

TEST_F(CorpusTest, SavingIntoANewNestedDirectoryCreatesIt) {
  const fs::path nested = dir_ / "a" / "b";
  const fs::path p = cases::save_case(nested, RandomCases(3).make("unswizzle"));
  EXPECT_EQ(p.parent_path(), nested);
  EXPECT_TRUE(fs::is_regular_file(p));
}

TEST_F(CorpusTest, CollectFindsCaseFilesRecursivelySortedAndDeduplicated) {
  RandomCases g(5);
  const fs::path a = cases::save_case(dir_ / "x", g.make("amax_rows"));
  const fs::path b = cases::save_case(dir_ / "x" / "y", g.make("amax_cols"));
  const fs::path c = cases::save_case(dir_, g.make("amax_global"));
  spit(dir_ / "x" / "README.md", {'h', 'i'});
  const auto files = cases::collect_case_files({dir_, a, dir_ / "x" / "." / a.filename()});
  std::vector<fs::path> want = {a, b, c};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(files, want);
  try {
    cases::collect_case_files({dir_, dir_ / "missing"});
    ADD_FAILURE() << "a missing path was accepted";
  } catch (const io::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "missing").string()), std::string::npos) << e.what();
  }
}

TEST_F(CorpusTest, UnreadableFilesAreFormatErrorsNamingTheFile) {
  const fs::path good = cases::save_case(dir_, RandomCases(9).make("quantize"));
  const std::vector<std::uint8_t> bytes = slurp(good);

  spit(dir_ / "truncated.safetensors", std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  expect_format_error(dir_ / "truncated.safetensors", "");
  spit(dir_ / "short.safetensors", {1, 2, 3});
  expect_format_error(dir_ / "short.safetensors", "");
  spit(dir_ / "garbage.safetensors", std::vector<std::uint8_t>(64, 0xFF));
  expect_format_error(dir_ / "garbage.safetensors", "");
  expect_format_error(dir_ / "missing.safetensors", "");

  io::File plain;
  plain.tensors["x"] = RandomCases(1).bytes(io::DType::F32, {16, 16});
  io::write_file_atomic(dir_ / "plain.safetensors", plain);
  expect_format_error(dir_ / "plain.safetensors", "nvfp4_case");

  io::File bad_json = io::read_file(good);
  bad_json.metadata["nvfp4_case"] = "{\"format\": 1, \"op\": ";
  io::write_file_atomic(dir_ / "badjson.safetensors", bad_json);
  expect_format_error(dir_ / "badjson.safetensors", "JSON");

  expect_format_error(edited_case("op.safetensors", [](json& d) { d["op"] = "frobnicate"; }), "frobnicate");
  expect_format_error(edited_case("noop.safetensors", [](json& d) { d.erase("op"); }), "op");
  expect_format_error(edited_case("version.safetensors", [](json& d) { d["format"] = 3; }), "version 3");
  expect_format_error(edited_case("profile.safetensors", [](json& d) { d["params"]["profile"] = "te-9.99"; }), "te-9.99");
  expect_format_error(edited_case("block.safetensors", [](json& d) { d["params"]["block"] = "3d"; }), "3d");
  expect_format_error(edited_case("dir.safetensors", [](json& d) { d["params"]["direction"] = "diagonal"; }), "diagonal");
  expect_format_error(edited_case("layout.safetensors", [](json& d) { d["params"]["scale_layout"] = "tiled"; }), "tiled");
  expect_format_error(edited_case(
                          "dtype.safetensors", [](json& d) { d["params"]["output_dtype"] = "F128"; }, "dequantize"),
                      "dequantize: E_UNSUPPORTED: parameter 'output_dtype' is 'F128'; allowed: F32, BF16, F16");
  expect_format_error(edited_case("foreign.safetensors", [](json& d) { d["params"]["output_dtype"] = "F32"; }),
                      "operation quantize has no parameter 'output_dtype' (its parameters: profile, block, direction, "
                      "row_scaled, amax, scale_layout, rounding, seed, offset, rht, rht_mask, experts)");
  expect_format_error(edited_case("field.safetensors", [](json& d) { d["params"]["colour"] = "red"; }), "colour");
  expect_format_error(edited_case("rows.safetensors", [](json& d) { d["params"]["row_scaled"] = "yes"; }), "row_scaled");
  expect_format_error(edited_case("amaxdec.safetensors", [](json& d) { d["params"]["amax"] = 6.0; }), "never a decimal");
  expect_format_error(edited_case("amaxhex.safetensors", [](json& d) { d["params"]["amax"] = {{"bits", "0x40C0"}}; }), "0x40C0");
  expect_format_error(edited_case("input.safetensors",
                                  [](json& d) {
                                    d["inputs"]["extra"] = {{"tensor", true}};
                                  }),
                      "missing input");
  expect_format_error(edited_case("noinput.safetensors", [](json& d) { d["inputs"].erase("x"); }), "x");
  expect_format_error(edited_case("recipe.safetensors",
                                  [](json& d) {
                                    d["inputs"]["y"] = {{"recipe", {{"version", 1}, {"dist", "zipf"}}}};
                                  }),
                      "inputs.y");

  // A description naming a tensor the file lacks.
  io::File missing = io::read_file(good);
  missing.tensors.erase("x");
  io::write_file_atomic(dir_ / "notensor.safetensors", missing);
  expect_format_error(dir_ / "notensor.safetensors", "missing input");
}

TEST_F(CorpusTest, SeedCorpusRecordsNameTheirSectionAndRoundTrip) {
  const std::vector<cases::CaseRecord> seed = cases::seed_corpus();
  EXPECT_GE(seed.size(), 60u);
  EXPECT_LE(seed.size(), 180u);
  std::set<std::string> ops;
  for (const cases::CaseRecord& r : seed) {
    SCOPED_TRACE(r.note);
    EXPECT_EQ(r.origin, "seed corpus");
    EXPECT_NE(r.note.find("NUMERICS.md §"), std::string::npos);
    expect_same_record(r, through_bytes(r));
    ops.insert(r.c.op);
  }
  EXPECT_EQ(ops.size(), cases::operations().size()) << "every operation has a seed case";
  // Deterministic: building the list again gives the same files.
  const std::vector<cases::CaseRecord> again = cases::seed_corpus();
  ASSERT_EQ(again.size(), seed.size());
  for (std::size_t i = 0; i < seed.size(); ++i)
    EXPECT_TRUE(io::serialize(cases::case_to_file(seed[i])) == io::serialize(cases::case_to_file(again[i]))) << seed[i].note;
}

TEST_F(CorpusTest, CommittedSeedCorpusHoldsEverySeedCase) {
  const fs::path committed = fs::path(NVFP4_SOURCE_DIR) / "corpora" / "seed";
  ASSERT_TRUE(fs::is_directory(committed)) << committed;
  for (const cases::CaseRecord& r : cases::seed_corpus()) {
    const fs::path p = cases::save_case(dir_, r);
    EXPECT_TRUE(fs::exists(committed / p.filename()))
        << p.filename() << " (" << r.note << ") is not in " << committed
        << ": the seed corpus changed; run `nvfp4-verify seed-corpus --output corpora/seed` and commit the new files";
  }
}

// corpora/format-v1/ holds the seed corpus as format 1 wrote it (every operation's fields side by
// side), as it was before later seed cases were added: each file still loads, into exactly the
// case the seed corpus builds today.
TEST_F(CorpusTest, FormatOneFilesLoadAsTheSeedCasesTheyWere) {
  const fs::path v1 = fs::path(NVFP4_SOURCE_DIR) / "corpora" / "format-v1";
  const std::vector<fs::path> files = cases::collect_case_files({v1});
  ASSERT_EQ(files.size(), 110u) << v1;
  const std::vector<cases::CaseRecord> seed = cases::seed_corpus();
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    EXPECT_EQ(json::parse(io::read_file(file).metadata.at("nvfp4_case"))["format"], 1);
    const cases::CaseRecord r = cases::load_case(file);
    std::size_t matches = 0;
    for (const cases::CaseRecord& s : seed)
      if (s.note == r.note && s.c.op == r.c.op && s.c.params == r.c.params) {
        ++matches;
        expect_same_record(s, r);
      }
    EXPECT_EQ(matches, 1u) << r.note;
  }
}

TEST_F(CorpusTest, FormatTwoRejectsAParameterOfAnotherOperation) {
  const fs::path p = cases::save_case(dir_, RandomCases(4).make("swizzle"));
  io::File f = io::read_file(p);
  json d = json::parse(f.metadata.at("nvfp4_case"));
  d["params"]["block"] = "2d";
  f.metadata["nvfp4_case"] = d.dump();
  io::write_file_atomic(dir_ / "foreign.safetensors", f);
  expect_format_error(dir_ / "foreign.safetensors", "operation swizzle has no parameter 'block' (its parameters: none)");
  d["format"] = 1;  // format 1 stored every operation's fields: a foreign one is ignored
  f.metadata["nvfp4_case"] = d.dump();
  io::write_file_atomic(dir_ / "foreign-v1.safetensors", f);
  EXPECT_FALSE(cases::load_case(dir_ / "foreign-v1.safetensors").c.params.has("block"));
}

}  // namespace
}  // namespace nvfp4
