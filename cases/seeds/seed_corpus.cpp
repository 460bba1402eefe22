#include "cases/seed_corpus.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "cases/recipe.h"
#include "io/tensor_convert.h"
#include "reference/arith.h"
#include "reference/e2m1.h"
#include "reference/hadamard.h"
#include "reference/grouped_layout.h"
#include "reference/layout.h"
#include "reference/scale_layout.h"
#include "reference/shard.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "cases/quantize_case.h"
#include "cases/registry.h"

namespace nvfp4 {
namespace {

constexpr const char* kOrigin = "seed corpus";

// A matrix of binary32 bit patterns, written into a case as F32 (bits kept exactly, NaN
// payloads included) or BF16 (the values must be BF16-exact: low 16 bits zero).
struct Grid {
  std::int64_t M, K;
  std::vector<std::uint32_t> bits;
  Grid(std::int64_t m, std::int64_t k) : M(m), K(k), bits(std::size_t(m * k), 0) {}
  std::uint32_t& at(std::int64_t r, std::int64_t c) { return bits[std::size_t(r * K + c)]; }
};

io::Tensor f32_tensor(const Grid& g) { return io::make_tensor_from<std::uint32_t>(io::DType::F32, {g.M, g.K}, g.bits); }

io::Tensor bf16_tensor(const Grid& g) {
  std::vector<std::uint16_t> h(g.bits.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (g.bits[i] & 0xFFFFu) throw std::logic_error(fmt::format("seed corpus: 0x{:08X} is not BF16-exact", g.bits[i]));
    h[i] = std::uint16_t(g.bits[i] >> 16);
  }
  return io::make_tensor_from<std::uint16_t>(io::DType::BF16, {g.M, g.K}, h);
}

// A BF16-exact value of random sign with magnitude below 2^floor(log2(limit)) (so below limit),
// at most `spread` binades lower.
std::uint32_t below(SplitMix64& rng, std::uint32_t limit_bits, int spread = 6) {
  const int e = int((limit_bits >> 23) & 0xFF) - 1 - int(rng.below(std::uint64_t(spread) + 1));
  if (e <= 0) return 0;
  const std::uint32_t mant = std::uint32_t(rng.below(128)) << 16;
  const std::uint32_t sign = (rng.next() & 1) ? 0x80000000u : 0u;
  return sign | (std::uint32_t(e) << 23) | mant;
}

// Fills every element of rows [r0, r1) x cols [c0, c1) that is still +0 with values below limit.
void fill(Grid& g, SplitMix64& rng, std::uint32_t limit_bits, std::int64_t r0, std::int64_t r1, std::int64_t c0,
          std::int64_t c1) {
  for (std::int64_t r = r0; r < r1; ++r)
    for (std::int64_t c = c0; c < c1; ++c)
      if (g.at(r, c) == 0) g.at(r, c) = below(rng, limit_bits);
}
void fill_all(Grid& g, SplitMix64& rng, std::uint32_t limit_bits) { fill(g, rng, limit_bits, 0, g.M, 0, g.K); }

io::Tensor random_bytes(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<std::uint8_t> b(std::size_t(rows * cols));
  for (auto& v : b) v = std::uint8_t(rng.next() >> 56);
  return io::make_tensor(io::DType::U8, {rows, cols}, b);
}

Recipe recipe(Distribution d, std::uint64_t seed, std::int64_t M, std::int64_t K, io::DType dtype) {
  Recipe r;
  r.dist = d;
  r.seed = seed;
  r.M = M;
  r.K = K;
  r.dtype = dtype;
  return r;
}

struct Quant {
  std::string profile = "te";
  BlockShape block = BlockShape::k1D;
  Direction direction = Direction::kBoth;
  bool row_scaled = false;
  std::optional<std::uint32_t> amax_bits;
  ScaleLayout layout = ScaleLayout::kCompact;
};

CaseRecord quantize_case(const Quant& q, io::Tensor x, std::string note) {
  CaseRecord r;
  r.c = make_case("quantize");
  r.c.params.set("profile", q.profile);
  set_quantize_params(r.c, q.block, q.direction, q.row_scaled, q.layout);
  r.c.params.set("amax", F32Bits{q.amax_bits});
  r.c.inputs["x"] = std::move(x);
  r.origin = kOrigin;
  r.note = std::move(note);
  return r;
}

CaseRecord quantize_recipe_case(const Quant& q, const Recipe& rec, std::string note) {
  CaseRecord r = quantize_case(q, generate_tensor(rec), std::move(note));
  r.recipes["x"] = rec;
  return r;
}

// A case of `op` (its profile parameter, where it has one, set to `profile`).
CaseRecord op_case(std::string_view op, const std::string& profile, std::map<std::string, io::Tensor> inputs, std::string note) {
  CaseRecord r;
  r.c = make_case(op);
  if (r.c.params.has("profile")) r.c.params.set("profile", profile);
  r.c.inputs = std::move(inputs);
  r.origin = kOrigin;
  r.note = std::move(note);
  return r;
}

// ---- §6.7-§6.9: one block of a worked example inside a 16x16 BF16 tensor ---------------------

struct Example {
  const char* section;
  std::uint32_t g;                         // global amax (also an element, and the override)
  std::vector<std::uint32_t> block;        // the first elements of row 0 (the example's block)
  std::uint32_t A;                         // the block amax (one of the block's elements)
  std::map<std::string, std::string> expect;  // profile -> what NUMERICS.md gives
  const char* what;
};

const std::vector<Example>& examples() {
  static const std::vector<Example> v = {
      {"§6.7 Example A (§5.13)", 0x40BA0000, {0x3E780000, 0x3F5F0000}, 0x3F5F0000,
       {{"te", "scale 0x68, x=0x3E780000 -> y=1.75 (tie) -> code 0x4"},
        {"te-2.13", "scale 0x68, code 0x4"}, {"te-2.13-1d", "scale 0x68, code 0x4"}, {"miles", "scale 0x68, code 0x4"},
        {"vllm-emul", "scale 0x68, code 0x4"}, {"torchao", "scale 0x68, code 0x4"}, {"mslk", "scale 0x68, code 0x4"},
        {"modelopt", "scale 0x68, y=0x3FDFFFFF -> code 0x3"}},
       "same scale byte, different code (encode chain)"},
      {"§6.8 Example B (§5.4)", 0x40820000, {0x3EA40000, 0xBE280000, 0x3EC30000, 0x3E800000}, 0x3EC30000,
       {{"te", "t=0x42280001 -> scale 0x63, codes 0x6 0xC 0x7 0x6"},
        {"te-2.13", "t=0x42280000 (tie) -> scale 0x62, codes 0x7 0xD 0x7 0x6"},
        {"te-2.13-1d", "scale 0x62, codes 0x7 0xD 0x7 0x6"}, {"miles", "scale 0x62, codes 0x7 0xD 0x7 0x6"},
        {"torchao", "scale 0x62, codes 0x7 0xD 0x7 0x6"}, {"modelopt", "t=0x4227FFFF -> scale 0x62, codes 0x7 0xD 0x7 0x6"},
        {"mslk", "t=0x4227FFFF -> scale 0x62, codes 0x7 0xD 0x7 0x6"}, {"vllm-emul", "t=0x4227FFFF -> scale 0x62"}},
       "the scale byte differs (TE >= 2.14 vs every order that rounds A/6 first)"},
      {"§6.9 Example C1", 0x40D50000, {0xBED50000, 0x3F330000}, 0x3F330000,
       {{"te", "scale 0x64, y=0xC0600001 -> code 0xE"}, {"te-2.13", "scale 0x64, code 0xE"},
        {"te-2.13-1d", "scale 0x64, code 0xE"}, {"miles", "scale 0x64, code 0xE"},
        {"torchao", "scale 0x64, y=0xC05FFFFF -> code 0xD"}, {"mslk", "scale 0x64, code 0xD"},
        {"modelopt", "scale 0x64, code 0xD"}, {"vllm-emul", "scale 0x64, code 0xD"}},
       "code flips in the other direction"},
      {"§6.9 Example C2", 0x40E40000, {0x39E40000, 0x3A490000}, 0x3A490000,
       {{"te", "scale 0x14, y=0x405FFFFF -> code 0x5"}, {"te-2.13", "scale 0x14, code 0x5"},
        {"miles", "scale 0x14, code 0x5"}, {"modelopt", "scale 0x14, code 0x5"}, {"vllm-emul", "scale 0x14, code 0x5"},
        {"torchao", "scale 0x14, y=0x40600000 (tie) -> code 0x6"}, {"mslk", "scale 0x14, code 0x6"},
        {"te-2.13-1d", "scale 0x14, RN(S/sf) -> code 0x6"}},
       "code flips in the other direction (tiny block)"},
  };
  return v;
}

void add_examples(std::vector<CaseRecord>& out) {
  static const char* kProfiles[] = {"te", "te-2.13", "te-2.13-1d", "torchao", "mslk", "modelopt", "miles", "vllm-emul"};
  std::uint64_t seed = 607;
  for (const Example& e : examples()) {
    SplitMix64 rng(seed++);
    Grid g(16, 16);
    for (std::size_t i = 0; i < e.block.size(); ++i) g.at(0, std::int64_t(i)) = e.block[i];
    fill(g, rng, e.A, 0, 1, 0, 16);  // the rest of the example's block stays below its amax A
    g.at(15, 15) = e.g;              // the computed global amax equals the override
    fill_all(g, rng, e.g);
    const io::Tensor x = bf16_tensor(g);
    for (const char* p : kProfiles) {
      Quant q;
      q.profile = p;
      q.amax_bits = e.g;
      const auto it = e.expect.find(p);
      out.push_back(quantize_case(
          q, x,
          fmt::format("NUMERICS.md {}: {}. 16x16 BF16 holding the example's block in row 0 (block amax A=0x{:08X}), "
                      "global amax g=0x{:08X} given as the amax override; profile {}: {}",
                      e.section, e.what, e.A, e.g, p, it != e.expect.end() ? it->second : "see the table")));
    }
  }
}

// ---- §6.11 saturation and NaN element, §6.12 underflow, §6.20 te-pyref ------------------------

void add_saturation_and_nan(std::vector<CaseRecord>& out) {
  // 32x32 BF16: tile (0,0) holds E2M1 grid points and ties with amax 6 (scale 0x7E, enc 1.0, so the
  // codes are e2m1(x)); tiles (0,1), (1,0), (1,1) have amaxes 3, 1.5, 0.75 (scales 0x76, 0x6E, 0x66).
  static const std::uint32_t kGrid[] = {0x3F000000, 0x3F800000, 0x3FC00000, 0x40000000, 0x40400000, 0x40800000,
                                        0x3E800000, 0x3F400000, 0x3FA00000, 0x3FE00000, 0x40200000, 0x40600000,
                                        0x40A00000, 0x00000000};
  SplitMix64 rng(611);
  Grid g(32, 32);
  for (std::int64_t r = 0; r < 16; ++r)
    for (std::int64_t c = 0; c < 16; ++c)
      g.at(r, c) = kGrid[rng.below(std::size(kGrid))] | ((rng.next() & 1) ? 0x80000000u : 0u);
  g.at(0, 0) = 0x40C00000;   // 6
  g.at(0, 16) = 0x40400000;  // 3
  g.at(16, 0) = 0x3FC00000;  // 1.5
  g.at(16, 16) = 0x3F400000; // 0.75
  fill(g, rng, 0x40400000, 1, 16, 16, 32);
  fill(g, rng, 0x3FC00000, 17, 32, 0, 16);
  fill(g, rng, 0x3F400000, 17, 32, 16, 32);
  fill_all(g, rng, 0x3F400000);
  const io::Tensor sat = bf16_tensor(g);
  Quant q;
  q.amax_bits = 0x40C00000;
  out.push_back(quantize_case(q, sat,
                              "NUMERICS.md §6.11: scale saturation and an exact unit encode factor, 1D: g=6 (override), "
                              "blocks with amax 6 -> scale 0x7E, enc=1.0, codes = e2m1(x); amax 3 -> 0x76"));
  q.block = BlockShape::k2D;
  out.push_back(quantize_case(q, sat,
                              "NUMERICS.md §6.11: scale saturation, 2D tiles: g=6 (override), tile amaxes 6, 3, 1.5, 0.75 "
                              "-> scales 0x7E, 0x76, 0x6E, 0x66"));

  // NaN element: g = 6 supplied, block [NaN, 1.0, 0 x 14] in row 0.
  Grid n(16, 16);
  SplitMix64 rng2(612);
  n.at(0, 0) = 0x7FC00000;
  n.at(0, 1) = 0x3F800000;
  for (std::int64_t r = 1; r < 16; ++r)
    for (std::int64_t c = 0; c < 16; ++c) n.at(r, c) = below(rng2, 0x40C00000);
  n.at(15, 15) = 0x40C00000;
  Quant qn;
  qn.amax_bits = 0x40C00000;
  out.push_back(quantize_case(qn, f32_tensor(n),
                              "NUMERICS.md §6.11 NaN element (te): g=6 supplied, block [NaN, 1.0, 0 x 14]: NaN ignored in "
                              "the block amax, scale 0x69, codes [0x7, 0x7, 0x0 x 14]"));
  qn.profile = "te-pyref";
  out.push_back(quantize_case(qn, f32_tensor(n),
                              "NUMERICS.md §6.20 / §5.8 (te-pyref): g=6 supplied, block [NaN, 1.0, 0 x 14]: scale 0x7F, "
                              "all 16 codes 0x0 (te: scale 0x69, codes [0x7, 0x7, 0 ...])"));
}

void add_underflow(std::vector<CaseRecord>& out) {
  // g = 2^20 (override, and an element); row 0 = [2^-20, BF16 subnormal 2^-133, +0, ...]; row 1 all zero.
  Grid g(16, 16);
  SplitMix64 rng(612);
  g.at(0, 0) = 0x35800000;
  g.at(0, 1) = 0x00010000;
  g.at(0, 5) = 0x00010000 | 0x80000000u;
  for (std::int64_t c = 0; c < 16; ++c) g.at(1, c) = (c % 3 == 0) ? 0x80000000u : 0u;
  g.at(15, 15) = 0x49800000;
  for (std::int64_t r = 2; r < 16; ++r)
    for (std::int64_t c = 0; c < 16; ++c)
      if (g.at(r, c) == 0) g.at(r, c) = below(rng, 0x49800000, 40);
  const io::Tensor x = bf16_tensor(g);
  Quant q;
  q.amax_bits = 0x49800000;
  q.direction = Direction::kRowwise;
  out.push_back(quantize_case(q, x,
                              "NUMERICS.md §6.12 block underflow (te): g=2^20 (override), block amax 2^-20 -> sd=0x2FE00000 -> "
                              "scale 0x00, enc=FLT_MAX; 2^-20 -> 0x7, BF16 subnormal 2^-133 -> 0x0, +0 -> 0x0"));
  q.profile = "miles";
  out.push_back(quantize_case(q, x,
                              "NUMERICS.md §6.12 / §5.12 block underflow (miles): no FLT_MAX cap, enc=+inf: BF16 subnormal "
                              "2^-133 -> y=+inf -> 0x7 (te: 0x0), +0 -> 0*inf=NaN -> 0x0"));
  q.profile = "te-2.13-1d";
  out.push_back(quantize_case(q, x,
                              "NUMERICS.md §6.12 (te-2.13-1d): the all-zero block in row 1 (A=0, sf=0, enc=RN(S/0)=+inf) "
                              "gives code 0x7 for every zero element (0*inf=NaN)"));
}

void add_te_pyref(std::vector<CaseRecord>& out) {
  // All-zero tensor containing -0.0 (g = 0 computed).
  Grid z(16, 16);
  for (std::int64_t i = 0; i < 256; i += 7) z.bits[std::size_t(i)] = 0x80000000u;
  // -0.0 inside nonzero blocks.
  Grid m(16, 32);
  SplitMix64 rng(620);
  fill_all(m, rng, 0x40000000);
  for (std::int64_t r = 0; r < 16; ++r) m.at(r, (r * 5) % 32) = 0x80000000u;
  // A NaN in the tensor, g computed.
  Grid n(16, 32);
  SplitMix64 rng2(621);
  fill_all(n, rng2, 0x40400000);
  n.at(3, 5) = 0x7FC00000;
  for (const char* p : {"te", "te-pyref"}) {
    Quant q;
    q.profile = p;
    out.push_back(quantize_case(q, f32_tensor(z),
                                fmt::format("NUMERICS.md §6.20 / §5.8 ({}): all-zero tensor containing -0.0, g=0 computed: te "
                                            "S=1, scales 0x00, -0.0 -> 0x8; te-pyref S=0x7F7FFFFF, -0.0 -> 0x0",
                                            p)));
    out.push_back(quantize_case(q, bf16_tensor(m),
                                fmt::format("NUMERICS.md §6.20 / §5.8 ({}): -0.0 in nonzero blocks: te 0x8, te-pyref 0x0", p)));
    out.push_back(quantize_case(q, f32_tensor(n),
                                fmt::format("NUMERICS.md §6.20 / §5.8 ({}): a NaN in the tensor, g computed: te ignores it in "
                                            "g; te-pyref g=NaN -> every scale 0x7F, every code 0x0",
                                            p)));
  }
}

// ---- §3.18-§3.19, §6.18-§6.19: stochastic rounding and the Hadamard transform ----------------

CaseRecord with_sr(CaseRecord r, std::uint64_t seed, std::uint64_t offset) {
  r.c.params.set("rounding", std::string("stochastic"));
  r.c.params.set("seed", seed);
  r.c.params.set("offset", offset);
  return r;
}

CaseRecord with_rht(CaseRecord r, std::uint64_t mask) {
  r.c.params.set("rht", true);
  r.c.params.set("rht_mask", mask);
  return r;
}

void add_gradient_path(std::vector<CaseRecord>& out) {
  // §6.18's block as row 0 of a 16x16 F32 tensor; g = 2688 and A = 6 make S = sf = 1, so y = x.
  const std::uint32_t block[16] = {0x3E99999A, 0x3F99999A, 0x402CCCCD, 0x40B00000, 0xBE99999A, 0xBF99999A,
                                   0xC02CCCCD, 0xC0B00000, 0x00000000, 0x80000000, 0x3F800000, 0x40C00000,
                                   0x3F3D70A4, 0x4079999A, 0x40833333, 0x40BCCCCD};
  Grid g(16, 16);
  for (int i = 0; i < 16; ++i) g.at(0, i) = block[i];
  Quant q;
  q.direction = Direction::kRowwise;
  q.amax_bits = 0x45280000;  // 2688
  out.push_back(with_sr(quantize_case(q, f32_tensor(g), "NUMERICS.md §6.18: SR of one block, seed 42, offset 0: "
                                                        "packed bytes 30 75 A8 FD 80 72 62 76"),
                        42, 0));
  q.direction = Direction::kBoth;
  out.push_back(with_sr(quantize_case(q, f32_tensor(g), "NUMERICS.md §3.18.3: SR at the u64 edges: seed 2^64-1, offset 2^32-1 "
                                                        "(the counter's low word carries into the next)"),
                        0xFFFFFFFFFFFFFFFFull, 0xFFFFFFFFull));
  const Recipe randn = recipe(Distribution::kRandn, 1818, 48, 80, io::DType::BF16);
  for (const char* p : {"te", "torchao", "modelopt", "te-2.13"}) {
    Quant sq;
    sq.profile = p;
    out.push_back(with_sr(quantize_recipe_case(sq, randn, fmt::format("NUMERICS.md §3.18 ({}): SR quantize, both directions", p)),
                          0x0123456789ABCDEFull, 7));
  }
  Quant rs;
  rs.row_scaled = true;
  out.push_back(with_sr(quantize_recipe_case(rs, randn, "NUMERICS.md §3.18: SR with row scaling"), 5, 0x100000000ull));
  Quant twod;
  twod.block = BlockShape::k2D;
  out.push_back(with_sr(quantize_recipe_case(twod, randn, "NUMERICS.md §3.18: SR with 16x16 tiles"), 9, 3));

  // §6.19's four vectors as columns 0-3 of a 16x16 BF16 tensor (the transform runs down columns).
  Grid h(16, 16);
  h.at(0, 0) = 0x3F800000;                                         // e_0
  h.at(3, 1) = 0x3F800000;                                         // e_3
  for (int k = 0; k < 16; ++k) h.at(k, 2) = bits_of(float(k + 1));  // k + 1
  h.at(0, 3) = 0x3F800000;                                         // 1, 2^-8, 2^-38: the double rounding
  h.at(1, 3) = 0x3B800000;
  h.at(2, 3) = 0x2C800000;
  h.at(4, 5) = 0x7FC00000;  // a NaN: column 5 all NaN
  h.at(2, 6) = 0x7F800000;  // +inf and -inf in one column
  h.at(9, 6) = 0xFF800000;
  h.at(0, 7) = 0x7F7F0000;  // the largest BF16 values: the sum overflows binary32
  h.at(1, 7) = 0x7F7F0000;
  h.at(5, 8) = 0x00010000;  // subnormal next to 2^100: a span past binary64's exact window
  h.at(6, 8) = 0x71800000;
  for (const std::uint64_t mask : {std::uint64_t(kRhtDefaultMask), std::uint64_t(0)}) {
    CaseRecord r = op_case("rht", "te", {{"x", bf16_tensor(h)}},
                           fmt::format("NUMERICS.md §6.19 and §3.19 specials, mask 0x{:04X}: one-hot, ramp, the double "
                                       "rounding, NaN, +-inf, overflow, a 2^-133..2^100 span",
                                       mask));
    r.c.params.set("rht_mask", mask);
    out.push_back(std::move(r));
  }
  const Recipe wide = recipe(Distribution::kBlockLogUniform, 1919, 64, 48, io::DType::BF16);
  CaseRecord r = op_case("rht", "te", {{"x", generate_tensor(wide)}}, "NUMERICS.md §3.19: inputs spanning many binades");
  r.recipes["x"] = wide;
  out.push_back(std::move(r));

  // TransformerEngine's wgrad recipe: the columnwise copy of rht(x).
  Quant both;
  out.push_back(with_rht(quantize_recipe_case(both, randn, "NUMERICS.md §3.19: quantize with rht (columnwise copy of rht(x))"),
                         kRhtDefaultMask));
  out.push_back(with_sr(with_rht(quantize_recipe_case(both, randn, "NUMERICS.md §3.18-§3.19: rht and SR together"), 0x1234), 77, 1));
  out.push_back(with_rht(quantize_recipe_case(rs, randn, "NUMERICS.md §3.19: rht with row scaling"), kRhtDefaultMask));

  // te-pyref computes the amax of a BF16 input in BF16: a NaN amax is stored as 0x7FFF0000.
  Grid n(16, 32);
  SplitMix64 rng(1920);
  fill_all(n, rng, 0x40400000);
  n.at(3, 5) = 0x7FC00000;
  for (const bool row_scaled : {false, true}) {
    Quant p;
    p.profile = "te-pyref";
    p.row_scaled = row_scaled;
    out.push_back(quantize_case(p, bf16_tensor(n),
                                fmt::format("NUMERICS.md §4.2.7 (te-pyref): BF16 input with a NaN{}: the amax is stored as 0x7FFF0000",
                                            row_scaled ? ", row-scaled (row 3 and column 5)" : "")));
  }
}

void add_amax_overrides(std::vector<CaseRecord>& out) {
  const Recipe rec = recipe(Distribution::kRandn, 66, 16, 32, io::DType::BF16);
  const std::pair<std::uint32_t, const char*> kOverrides[] = {
      {0x00000000, "0"}, {0x7F800000, "+inf"}, {0x7FC00000, "NaN"}, {0x00000001, "2^-149"}, {0x7F7FFFFF, "FLT_MAX"}};
  for (const char* p : {"te", "te-pyref"})
    for (const auto& [bits, name] : kOverrides) {
      Quant q;
      q.profile = p;
      q.amax_bits = bits;
      out.push_back(quantize_recipe_case(q, rec,
                                         fmt::format("NUMERICS.md §6.6 / §5.5 / §5.8: global amax override g={} (0x{:08X}) "
                                                     "under {} (GS={})",
                                                     name, bits, p, std::string_view(p) == "te" ? "TE" : "TE_PYREF")));
    }
}

// ---- shapes, layouts ----------------------------------------------------------------------

void add_shapes(std::vector<CaseRecord>& out) {
  {
    Quant q;
    out.push_back(quantize_recipe_case(q, recipe(Distribution::kRandn, 615, 112, 96, io::DType::BF16),
                                       "NUMERICS.md §6.15 storage shapes: x[112, 96] both directions: data [112, 48] and "
                                       "[96, 56], scales [128, 8] with padding r >= 112 / j >= 6 and c >= 96 / i >= 7"));
    q.profile = "mslk";
    q.block = BlockShape::k2D;
    out.push_back(quantize_recipe_case(q, recipe(Distribution::kUniform, 616, 112, 96, io::DType::BF16),
                                       "NUMERICS.md §6.15 storage shapes, 2D tiles (mslk): x[112, 96] both directions"));
  }
  struct S {
    std::int64_t M, K;
    const char* profile;
    bool two_d;
    std::uint64_t seed;
  };
  for (const S& s : {S{48, 80, "te", true, 4880}, S{48, 80, "mslk", false, 4881}, S{304, 272, "te", true, 304272},
                     S{304, 272, "te", false, 304273}}) {
    Quant q;
    q.profile = s.profile;
    q.block = s.two_d ? BlockShape::k2D : BlockShape::k1D;
    q.row_scaled = !s.two_d;
    out.push_back(quantize_recipe_case(
        q, recipe(Distribution::kRandn, s.seed, s.M, s.K, io::DType::BF16),
        fmt::format("NUMERICS.md §2.4.1 / §3.11 / §3.12: shape {}x{} (not a multiple of 32/64/128: scale padding), {}, "
                    "both directions, profile {}",
                    s.M, s.K, s.two_d ? "2D 16x16 tiles" : "row-scaled", s.profile)));
  }
  {
    Quant q;
    q.layout = ScaleLayout::kSwizzled;
    out.push_back(quantize_recipe_case(q, recipe(Distribution::kRandn, 2421, 48, 80, io::DType::BF16),
                                       "NUMERICS.md §2.4.2: GEMM-swizzled scale layout, 48x80 (K/16=5, C'=8), both directions"));
    q.profile = "miles";
    q.block = BlockShape::k2D;
    q.direction = Direction::kRowwise;
    out.push_back(quantize_recipe_case(q, recipe(Distribution::kRandn, 2422, 64, 48, io::DType::F16),
                                       "NUMERICS.md §2.4.2: GEMM-swizzled scale layout, 2D tiles, F16 input 64x48 (miles)"));
  }
}

// ---- the other operations -------------------------------------------------------------------

void add_dequantize(std::vector<CaseRecord>& out) {
  static const io::DType kTypes[] = {io::DType::F32, io::DType::BF16, io::DType::F16};
  std::uint64_t seed = 1300;
  int i = 0;
  for (const NamedProfile& p : all_profiles()) {
    const FloatMatrix x = generate_values(recipe(Distribution::kRandn, seed++, 32, 64, io::DType::F32));
    QuantizeOptions o;
    o.profile = p.knobs;
    const Quantization q = quantize(x, o);
    CaseRecord r = op_case("dequantize", std::string(p.name),
                           {{"data", io::from_byte_matrix(q.rowwise->data)},
                            {"scale", io::from_byte_matrix(q.rowwise->scale)},
                            {"amax", io::from_float_vector(q.rowwise->amax)}},
                           fmt::format("NUMERICS.md §3.13 / §6.13 / §5.6: dequantize a 32x64 tensor quantized by the "
                                       "reference under {} (DQ chain of the profile), output {}",
                                       p.name, io::dtype_name(kTypes[i % 3])));
    r.c.params.set("output_dtype", std::string(io::dtype_name(kTypes[i++ % 3])));
    out.push_back(std::move(r));
  }
}

void add_layout_ops(std::vector<CaseRecord>& out) {
  out.push_back(op_case("transpose_packed", "te", {{"data", random_bytes(2, 8, 1402)}},
                        "NUMERICS.md §3.14 nibble transpose with M=2: data [2, 8] -> [16, 1]"));
  out.push_back(op_case("transpose_packed", "te", {{"data", random_bytes(6, 5, 1403)}},
                        "NUMERICS.md §3.14 nibble transpose of a 6x10 tensor: data [6, 5] -> [10, 3]"));
  out.push_back(op_case("transpose_packed", "te", {{"data", random_bytes(3, 4, 1404)}},
                        "NUMERICS.md §3.14 / §3.22: nibble transpose with odd M=3: every backend must reject it (E_EVEN)"));
  out.push_back(op_case("swizzle", "te", {{"scale", random_bytes(256, 36, 2436)}},
                        "NUMERICS.md §2.4.2 / §3.21: swizzle of 256x36 random bytes (two 128-row bands, 9 column groups)"));
  out.push_back(op_case("unswizzle", "te", {{"scale", random_bytes(256, 36, 2437)}},
                        "NUMERICS.md §2.4.2 / §3.21: unswizzle of 256x36 random bytes"));
  {
    const FloatMatrix x = generate_values(recipe(Distribution::kRandn, 1414, 48, 80, io::DType::F32));
    QuantizeOptions o;
    o.profile = find_profile("te")->knobs;
    o.block = BlockShape::k2D;
    const Quantization q = quantize(x, o);
    CaseRecord r = op_case("transpose_scales_2d", "te", {{"scale", io::from_byte_matrix(q.rowwise->scale)}},
                           "NUMERICS.md §3.14: 2D scale transpose of a 48x80 tensor's rowwise scales [128, 8] -> [128, 4]");
    r.c.params.set("M", std::int64_t(48));
    r.c.params.set("K", std::int64_t(80));
    out.push_back(std::move(r));
  }
}

void add_amax_ops(std::vector<CaseRecord>& out) {
  Grid g(32, 48);
  SplitMix64 rng(301);
  fill_all(g, rng, 0x41000000);
  g.at(0, 0) = 0x7FC00000;    // NaN in block (0,0) / tile (0,0)
  g.at(5, 17) = 0xFFC00000;   // negative NaN
  g.at(20, 40) = 0x7FC00000;
  g.at(31, 2) = 0xFF800000;   // -inf: |-inf| is the amax of its row, column, block and tile
  g.at(9, 30) = 0x80000000u;  // -0.0
  const io::Tensor x = bf16_tensor(g);
  static const char* kOps[] = {"amax_global",      "amax_rows",        "amax_cols",
                               "amax_blocks_1x16", "amax_blocks_16x1", "amax_tiles_16x16"};
  for (const char* p : {"te", "te-pyref"})
    for (const char* op : kOps)
      out.push_back(op_case(op, p, {{"x", x}},
                            fmt::format("NUMERICS.md §3.1-§3.3: {} of a 32x48 BF16 tensor with NaNs of both signs, -inf "
                                        "and -0.0, NaN rule {} ({})",
                                        op, std::string_view(p) == "te" ? "IGNORE" : "PROPAGATE", p)));
}

void add_recipes(std::vector<CaseRecord>& out) {
  static const Distribution kDists[] = {Distribution::kTies, Distribution::kBlockLogUniform,
                                              Distribution::kSpecials};
  static const io::DType kTypes[] = {io::DType::F32, io::DType::BF16, io::DType::F16};
  static const char* kSections[] = {"§2.1.2 / §6.2 E2M1 ties and §2.2 E4M3 ties", "§5.9 / §5.10 / §6.12 scale underflow and saturation",
                                    "§6.3 special values (zeros, -0.0, subnormals, FLT_MAX, inf, NaN)"};
  const auto profiles = all_profiles();
  std::size_t k = 0;
  for (std::size_t d = 0; d < 3; ++d)
    for (std::size_t t = 0; t < 3; ++t, ++k) {
      Quant q;
      q.profile = std::string(profiles[(3 * d + t) % profiles.size()].name);
      q.block = (k % 3 == 2) ? BlockShape::k2D : BlockShape::k1D;
      q.direction = (k % 2) ? Direction::kBoth : Direction::kRowwise;
      const Recipe rec = recipe(kDists[d], 9000 + k, 32, 64, kTypes[t]);
      out.push_back(quantize_recipe_case(q, rec,
                                         fmt::format("NUMERICS.md {}: recipe {} {} 32x64, profile {}, {}", kSections[d],
                                                     distribution_name(kDists[d]), io::dtype_name(kTypes[t]), q.profile,
                                                     q.block == BlockShape::k2D ? "2D" : "1D")));
    }
}

// ---- §3.15-§3.17, §5.1-§5.3: the distributed weight cast -------------------------------------------

// W[r][c] = f4(c mod 16): element e of a 16-column-aligned row has code e mod 16 (§6.16).
io::Tensor code_ramp(std::int64_t M, std::int64_t K) {
  FloatMatrix w = xt::empty<float>({std::size_t(M), std::size_t(K)});
  for (std::size_t r = 0; r < w.shape(0); ++r)
    for (std::size_t c = 0; c < w.shape(1); ++c) w(r, c) = e2m1_decode(std::uint8_t(c % 16));
  return io::from_float_matrix(w, io::FloatType::F32);
}

void set_shard(Case& c, std::int64_t M, std::int64_t K, std::int64_t start) {
  c.params.set("M", M);
  c.params.set("K", K);
  c.params.set("shard_start", start);
}

CaseRecord master_weights_case(std::map<std::string, io::Tensor> weights, std::vector<std::int64_t> cuts, std::string note) {
  CaseRecord r = op_case("cast_master_weights", "te", std::move(weights), std::move(note));
  r.c.params.set("cuts", std::move(cuts));
  return r;
}

void add_distributed(std::vector<CaseRecord>& out) {
  out.push_back(master_weights_case({{"w", code_ramp(16, 16)}}, {129},
                                    "NUMERICS.md §6.16: rank 1 starts at odd element 129 and shares byte 64 with rank 0 "
                                    "(PARTIAL_CAST_IDX_TE, ALLGATHER_BYTES)"));
  out.push_back(master_weights_case({{"w", code_ramp(16, 32)}}, {131, 131, 300},
                                    "NUMERICS.md §5.1: start 131 (s mod 4 = 3, two TE threads race on local byte 0), an "
                                    "empty rank, a cut mid-tile"));
  {
    FloatMatrix w = xt::zeros<float>({32, 32});  // §6.17's tile amaxes 6, 3, 1.5, 0.75
    w(0, 0) = 6.0f, w(0, 16) = 3.0f, w(16, 0) = 1.5f, w(16, 16) = -0.75f;
    out.push_back(master_weights_case({{"w", io::from_float_matrix(w, io::FloatType::F32)}}, {},
                                      "NUMERICS.md §6.17: width 32 (K/16 = 2, compact pitch 4; FUSED_SCALE_PITCH_TC)"));
  }
  {
    SplitMix64 rng(3170);
    Grid a(48, 80), b(16, 1040), c(32, 16);
    for (Grid* g : {&a, &b, &c}) fill_all(*g, rng, 0x40C00000);
    // Cuts at a weight boundary, one off it, mid-byte, mid-row, and an empty rank.
    out.push_back(master_weights_case({{"a", f32_tensor(a)}, {"b", f32_tensor(b)}, {"c", f32_tensor(c)}},
                                      {1, 3839, 3840, 3841, 3841, 9999, 20479},
                                      "NUMERICS.md §3.17: three weights (widths 80, 1040, 16 are not multiples of 64), "
                                      "8 ranks cut at, and one off, weight boundaries"));
  }
  {
    CaseRecord r = op_case("amax_partial", "te", {}, "NUMERICS.md §3.4: a one-element shard at an odd start");
    set_shard(r.c, 32, 48, 1001);
    r.c.inputs["xs"] = io::from_bf16_values(FloatVector({-3.5f}));
    out.push_back(r);
  }
  for (const std::uint32_t g : {0x40C00000u, 0x7F800000u}) {  // g = 6 (§6.17), g = +inf (§5.5)
    CaseRecord r = op_case("fused_scale_2d", "te", {}, fmt::format("NUMERICS.md §6.17: T = [[6, 3], [1.5, 0.75]], g = 0x{:08X}", g));
    r.c.inputs["tile_amax"] = io::from_float_matrix(FloatMatrix({{6.0f, 3.0f}, {1.5f, 0.75f}}), io::FloatType::F32);
    r.c.inputs["amax"] = io::from_float_vector(FloatVector({float_of(g)}));
    out.push_back(r);
  }
  for (const auto& [start, length, whole] : {std::tuple{129, 127, false}, std::tuple{3, 1, true}, std::tuple{77, 0, false}}) {
    CaseRecord r = op_case("partial_cast_2d", "te", {},
                           fmt::format("NUMERICS.md §3.16: shard [{}, {}) into {}, the other nibbles of its boundary "
                                       "bytes kept", start, start + length, whole ? "the whole tensor" : "its local buffer"));
    set_shard(r.c, 16, 16, start);
    FloatVector xs = xt::empty<float>({std::size_t(length)});
    for (int i = 0; i < length; ++i) xs(i) = e2m1_decode(std::uint8_t((start + i) % 16));
    r.c.inputs["xs"] = io::from_bf16_values(xs);
    r.c.inputs["tile_scale"] = io::from_float_matrix(FloatMatrix({{448.0f}}), io::FloatType::F32);
    r.c.inputs["global_scale"] = io::from_float_vector(FloatVector({448.0f}));
    const Shard s{start, length};
    r.c.inputs["data"] = whole ? random_bytes(16, 8, 3160) : random_bytes(1, s.local_bytes(), 3161);
    if (!whole) r.c.inputs["data"].shape = {s.local_bytes()};
    out.push_back(r);
  }
}


// ---- GEMM (§3.20) -------------------------------------------------------------------------

// One operand row by row from hexadecimal bytes: data "66 66 ..." and one scale byte per block.
struct GemmRows {
  std::vector<std::string> data;
  std::vector<std::vector<std::uint8_t>> scale;
  float amax = 2688.0f;  // with the other operand's 2688, α = 1.0 exactly (§6.21)
};

std::map<std::string, io::Tensor> gemm_operand_tensors(const std::string& side, const GemmRows& g) {
  const std::int64_t rows = std::int64_t(g.data.size());
  std::vector<std::vector<std::uint8_t>> bytes;
  for (const std::string& line : g.data) {
    std::vector<std::uint8_t> b;
    for (std::size_t i = 0; i + 1 < line.size() + 1; i += 3) b.push_back(std::uint8_t(std::stoul(line.substr(i, 2), nullptr, 16)));
    bytes.push_back(b);
  }
  const std::int64_t half_k = std::int64_t(bytes[0].size()), blocks = half_k / 8;
  ByteMatrix data = xt::zeros<std::uint8_t>({std::size_t(rows), std::size_t(half_k)});
  ByteMatrix scale = xt::zeros<std::uint8_t>({std::size_t(scale_rows(rows)), std::size_t(scale_cols(16 * blocks))});
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t k = 0; k < half_k; ++k) data(r, k) = bytes[r][k];
    for (std::int64_t j = 0; j < blocks; ++j) scale(r, j) = g.scale[r][j];
  }
  return {{side + "_data", io::from_byte_matrix(data)},
          {side + "_scale", io::from_byte_matrix(scale)},
          {side + "_amax", io::from_float_vector(FloatVector({g.amax}))}};
}

CaseRecord gemm_seed(const GemmRows& a, const GemmRows& b, std::string note) {
  std::map<std::string, io::Tensor> in = gemm_operand_tensors("a", a);
  in.merge(gemm_operand_tensors("b", b));
  return op_case("gemm", "te", std::move(in), std::move(note));
}

std::string repeat(const char* byte, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " " : "") + std::string(byte);
  return s;
}

// The first operand of a random product: the reference's rowwise quantization of a recipe.
std::map<std::string, io::Tensor> quantized_operand(const std::string& side, std::uint64_t seed, std::int64_t rows, std::int64_t K,
                                                    bool row_scaled, bool swizzled) {
  QuantizeOptions o;
  o.profile = default_profile().knobs;
  o.row_scaled = row_scaled;
  const Quantization q = quantize(generate_values(recipe(Distribution::kRandn, seed, rows, K, io::DType::F32)), o);
  return {{side + "_data", io::from_byte_matrix(q.rowwise->data)},
          {side + "_scale", io::from_byte_matrix(swizzled ? swizzle_scales(q.rowwise->scale) : q.rowwise->scale)},
          {side + "_amax", io::from_float_vector(q.rowwise->amax)}};
}

void add_gemm(std::vector<CaseRecord>& out) {
  // §6.21: blocks 2^24, 1, -2^24: EXACT gives 1.0; binary32 accumulation in block order gives 0.
  const std::string a621 = repeat("66", 8) + " 02 " + repeat("00", 7) + " " + repeat("66", 8);
  const std::string b621 = repeat("66", 8) + " 02 " + repeat("00", 7) + " " + repeat("EE", 8);
  const GemmRows A{{a621}, {{0x78, 0x38, 0x78}}}, B{{b621}, {{0x78, 0x38, 0x78}}};
  out.push_back(gemm_seed(A, B, "NUMERICS.md §6.21: cancellation across blocks (2^24 + 1 - 2^24): EXACT D = 1.0 (0x3F800000)"));
  {
    CaseRecord r = gemm_seed(A, B, "NUMERICS.md §3.20.3: beta*C cancels alpha*S exactly (beta = -1, C = 1): D = +0.0");
    r.c.params.set("beta", F32Bits{0xBF800000u});
    r.c.inputs["c"] = io::from_float_vector(FloatVector({1.0f}));
    r.c.inputs["c"].shape = {1, 1};
    out.push_back(r);
    r.note = "NUMERICS.md §3.20.3: beta*C nearly cancels alpha*S (C = 1 + 2^-23): D = -2^-23 exactly";
    r.c.inputs["c"] = io::from_float_vector(FloatVector({1.0f + 0x1p-23f}));
    r.c.inputs["c"].shape = {1, 1};
    out.push_back(r);
  }
  // Ties: S = 2^24 + 1 and 2^24 + 3 are halfway between binary32 neighbours (to even: 2^24, 2^24 + 4).
  const std::string big = repeat("66", 8), one = "02 " + repeat("00", 7), three = "22 02 " + repeat("00", 6);
  out.push_back(gemm_seed({{big + " " + one}, {{0x78, 0x38}}}, {{big + " " + one}, {{0x78, 0x38}}},
                          "NUMERICS.md §3.20.3: exact tie at binary32, S = 2^24 + 1 rounds to even 2^24"));
  out.push_back(gemm_seed({{big + " " + three}, {{0x78, 0x38}}}, {{big + " " + three}, {{0x78, 0x38}}},
                          "NUMERICS.md §3.20.3: exact tie at binary32, S = 2^24 + 3 rounds to even 2^24 + 4"));
  {
    // S = 1 + 2^-8 is exact in binary32 and halfway between BF16 1.0 and 1 + 2^-7: RNbf16 gives 1.0.
    CaseRecord r = gemm_seed({{one + " 01 " + repeat("00", 7)}, {{0x38, 0x20}}}, {{one + " 01 " + repeat("00", 7)}, {{0x38, 0x20}}},
                             "NUMERICS.md §3.20.3: BF16 output of an exact tie at BF16 (S = 1 + 2^-8): 1.0");
    r.c.params.set("output_dtype", std::string("BF16"));
    out.push_back(r);
  }
  {
    CaseRecord r = gemm_seed({{a621}, {{0x78, 0x7F, 0x78}}}, B, "NUMERICS.md §3.20.3: a NaN scale byte (0x7F) in A's row: D is NaN");
    out.push_back(r);
    r = gemm_seed({{repeat("00", 8)}, {{0x38}}}, {{repeat("22", 8)}, {{0x38}}},
                  "NUMERICS.md §3.20.3: alpha = +inf with S = 0: D is NaN");
    r.c.params.set("alpha", F32Bits{0x7F800000u});
    out.push_back(r);
    r = gemm_seed({{repeat("77", 8)}, {{0x7E}}}, {{repeat("77", 8)}, {{0x7E}}},
                  "NUMERICS.md §3.20.3: alpha = FLT_MAX times a large S overflows to +inf");
    r.c.params.set("alpha", F32Bits{0x7F7FFFFFu});
    out.push_back(r);
    r = gemm_seed({{"03 " + repeat("00", 7)}, {{0x38}}}, {{"02 " + repeat("00", 7)}, {{0x38}}},
                  "NUMERICS.md §3.20.3: alpha = 2^-149 times S = 1.5: subnormal tie, rounds to even 2^-148");
    r.c.params.set("alpha", F32Bits{0x00000001u});
    out.push_back(r);
  }
  // Random products of quantized operands: shapes off every tile multiple, both scale layouts,
  // every output dtype, bias, and the row-scaled path (§3.20.4) with and without accumulation.
  const char* kOut[] = {"F32", "BF16", "F16"};
  for (int i = 0; i < 3; ++i) {
    const bool swizzled = i == 1;
    std::map<std::string, io::Tensor> in = quantized_operand("a", 2100 + i, 48, 80, false, swizzled);
    in.merge(quantized_operand("b", 2200 + i, 32, 80, false, swizzled));
    CaseRecord r = op_case("gemm", "te", std::move(in),
                           fmt::format("NUMERICS.md §3.20: 48x32x80 product of quantized operands, output {}{}{}", kOut[i],
                                       swizzled ? ", swizzled scales" : "", i == 2 ? ", bias" : ""));
    r.c.params.set("output_dtype", std::string(kOut[i]));
    r.c.params.set("scale_layout", std::string(swizzled ? "swizzled" : "compact"));
    if (i == 2) {
      r.c.params.set("with_bias", true);
      r.c.inputs["bias"] = io::from_float_vector(FloatVector(xt::view(generate_values(recipe(Distribution::kRandn, 2300, 16, 32, io::DType::F32)), 0, xt::all())));
    }
    out.push_back(r);
  }
  for (int i = 0; i < 3; ++i) {
    std::map<std::string, io::Tensor> in = quantized_operand("a", 2400 + i, 32, 64, i != 1, false);
    in.merge(quantized_operand("b", 2500 + i, 48, 64, i != 0, false));
    CaseRecord r = op_case("gemm", "te", std::move(in),
                           fmt::format("NUMERICS.md §3.20.4 / §6.21: row-scaled 32x48x64, {}{}",
                                       i == 0 ? "per-row A, scalar B (folded)" : i == 1 ? "scalar A, per-row B (folded)" : "per-row both (two steps)",
                                       i == 2 ? ", accumulating into BF16 C" : ""));
    r.c.params.set("row_scaled", true);
    if (i == 2) {
      r.c.params.set("accumulate", true);
      r.c.params.set("output_dtype", std::string("BF16"));
      r.c.inputs["c"] = io::from_float_matrix(generate_values(recipe(Distribution::kRandn, 2600, 32, 48, io::DType::F32)), io::FloatType::BF16);
    }
    out.push_back(r);
  }
}


// ---- grouped (MoE) layouts and GEMMs, expert weights (§2.4.3, §3.20.5) --------------------

void add_grouped(std::vector<CaseRecord>& out) {
  {
    CaseRecord r = op_case("grouped_swizzle", "te", {{"scale", random_bytes(256, 8, 2700)}},
                           "NUMERICS.md §2.4.3: outer-axis groups of 128 rows each: equal to one whole-extent swizzle");
    r.c.params.set("axis", std::string("outer"));
    r.c.params.set("group_sizes", std::vector<std::int64_t>{128, 128});
    out.push_back(r);
    r = op_case("grouped_swizzle", "te", {{"scale", random_bytes(256, 4, 2701)}},
                "NUMERICS.md §2.4.3: outer-axis groups of 48, 0 and 160 rows: each group padded to 128-row bands");
    r.c.params.set("axis", std::string("outer"));
    r.c.params.set("group_sizes", std::vector<std::int64_t>{48, 0, 160});
    out.push_back(r);
    r = op_case("grouped_swizzle", "te", {{"scale", random_bytes(128, 12, 2702)}},
                "NUMERICS.md §2.4.3: inner-axis groups of 80, 32 and 48 tokens: each group's columns swizzled on its own extent");
    r.c.params.set("axis", std::string("inner"));
    r.c.params.set("group_sizes", std::vector<std::int64_t>{80, 32, 48});
    out.push_back(r);
    CaseRecord u = op_case("grouped_unswizzle", "te",
                           {{"scale", io::from_byte_vector(grouped_swizzle(io::to_byte_matrix(random_bytes(128, 12, 2703), "seed", "scale"),
                                                                           GroupAxis::kInner, {80, 32, 48}))}},
                           "NUMERICS.md §2.4.3: inner-axis grouped bytes back to the whole compact matrix");
    u.c.params.set("axis", std::string("inner"));
    u.c.params.set("group_sizes", std::vector<std::int64_t>{80, 32, 48});
    u.c.params.set("extent", std::int64_t(128));
    out.push_back(u);
  }
  // MoE forward: 3 groups of tokens (32, 0, 48 rows), one weight per group, grouped swizzled scales.
  {
    const std::vector<std::int64_t> sizes = {32, 0, 48};
    QuantizeOptions o;
    o.profile = default_profile().knobs;
    const Quantization a = quantize(generate_values(recipe(Distribution::kRandn, 2800, 80, 64, io::DType::F32)), o);
    std::vector<io::Tensor> data, scale;
    std::vector<float> b_amax;
    for (int g = 0; g < 3; ++g) {
      const Quantization b = quantize(generate_values(recipe(Distribution::kRandn, 2810 + g, 48, 64, io::DType::F32)), o);
      data.push_back(io::from_byte_matrix(b.rowwise->data));
      scale.push_back(io::from_byte_matrix(swizzle_scales(b.rowwise->scale)));
      b_amax.push_back(b.rowwise->amax(0));
    }
    auto stack = [](const std::vector<io::Tensor>& parts) {
      io::Tensor t{parts[0].dtype, parts[0].shape, {}};
      t.shape.insert(t.shape.begin(), std::int64_t(parts.size()));
      for (const io::Tensor& p : parts) t.bytes.insert(t.bytes.end(), p.bytes.begin(), p.bytes.end());
      return t;
    };
    const std::vector<float> a_amax = {a.rowwise->amax(0), a.rowwise->amax(0) * 2.0f, a.rowwise->amax(0) * 0.5f};
    CaseRecord r = op_case("grouped_gemm", "te",
                           {{"a_data", io::from_byte_matrix(a.rowwise->data)},
                            {"a_scale", io::from_byte_vector(grouped_swizzle(a.rowwise->scale, GroupAxis::kOuter, sizes))},
                            {"a_amax", io::from_float_vector(FloatVector(xt::adapt(a_amax)))},
                            {"b_data", stack(data)},
                            {"b_scale", stack(scale)},
                            {"b_amax", io::from_float_vector(FloatVector(xt::adapt(b_amax)))}},
                           "NUMERICS.md §3.20.5: M-grouped GEMM (MoE forward), groups of 32, 0 and 48 tokens, grouped swizzled scales");
    r.c.params.set("group_sizes", sizes);
    r.c.params.set("scale_layout", std::string("swizzled"));
    out.push_back(r);
  }
  // MoE wgrad: dW_g = dY_g^T X_g over token ranges of 48, 16 and 0 tokens (columnwise copies).
  {
    const std::vector<std::int64_t> sizes = {48, 16, 0};
    QuantizeOptions o;
    o.profile = default_profile().knobs;
    o.direction = Direction::kColumnwise;
    const Quantization dy = quantize(generate_values(recipe(Distribution::kRandn, 2900, 64, 32, io::DType::F32)), o);
    const Quantization x = quantize(generate_values(recipe(Distribution::kRandn, 2901, 64, 48, io::DType::F32)), o);
    CaseRecord r = op_case("grouped_gemm", "te",
                           {{"a_data", io::from_byte_matrix(dy.columnwise->data)},
                            {"a_scale", io::from_byte_vector(grouped_swizzle(dy.columnwise->scale, GroupAxis::kInner, sizes))},
                            {"a_amax", io::from_float_vector(FloatVector({1.5f, 3.0f, 0.25f}))},
                            {"b_data", io::from_byte_matrix(x.columnwise->data)},
                            {"b_scale", io::from_byte_vector(grouped_swizzle(x.columnwise->scale, GroupAxis::kInner, sizes))},
                            {"b_amax", io::from_float_vector(FloatVector({2.0f, 5.0f, 7.0f}))}},
                           "NUMERICS.md §3.20.5: K-grouped GEMM (MoE wgrad), token ranges of 48, 16 and 0 (an empty range gives +0.0)");
    r.c.params.set("grouping", std::string("k"));
    r.c.params.set("group_sizes", sizes);
    r.c.params.set("scale_layout", std::string("swizzled"));
    out.push_back(r);
  }
  {
    Quant q;
    CaseRecord r = quantize_recipe_case(q, recipe(Distribution::kRandn, 3000, 96, 64, io::DType::BF16),
                                        "NUMERICS.md §2.4.3: expert weights [3, 32, 64], each expert quantized alone with its own amax");
    r.recipes.clear();
    r.c.inputs.at("x").shape = {3, 32, 64};
    r.c.params.set("experts", true);
    out.push_back(r);
  }
}

}  // namespace

std::vector<CaseRecord> seed_corpus() {
  std::vector<CaseRecord> out;
  add_examples(out);
  add_saturation_and_nan(out);
  add_underflow(out);
  add_te_pyref(out);
  add_amax_overrides(out);
  add_shapes(out);
  add_dequantize(out);
  add_layout_ops(out);
  add_amax_ops(out);
  add_recipes(out);
  add_distributed(out);
  add_gradient_path(out);
  add_gemm(out);
  add_grouped(out);
  return out;
}

}  // namespace nvfp4
