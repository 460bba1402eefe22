// The quantize seed cases of NUMERICS.md §6's worked examples: Examples A, B and C (§6.7-§6.9)
// under every profile NUMERICS.md gives their outcome for, scale saturation and NaN elements
// (§6.11), block underflow (§6.12), te-pyref against te (§6.20), special global-amax overrides
// (§6.6), the 4over6 candidates (§4.2.7) and ggml's scale cast (§2.2.4).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cases/seeds/families.h"
#include "cases/seeds/seed_builders.h"
#include "reference/profiles.h"

namespace nvfp4::cases::seeds {
namespace {

// ---- §6.7-§6.9: one block of a worked example inside a 16x16 BF16 tensor ---------------------

struct Example {
  const char* section;
  std::uint32_t g;                            // global amax (also an element, and the override)
  std::vector<std::uint32_t> block;           // the first elements of row 0 (the example's block)
  std::uint32_t A;                            // the block amax (one of the block's elements)
  std::map<std::string, std::string> expect;  // profile -> what NUMERICS.md gives
  const char* what;
};

const std::vector<Example>& examples() {
  static const std::vector<Example> v = {
      {"§6.7 Example A (§5.13)",
       0x40BA0000,
       {0x3E780000, 0x3F5F0000},
       0x3F5F0000,
       {{"te", "scale 0x68, x=0x3E780000 -> y=1.75 (tie) -> code 0x4"},
        {"te-2.13", "scale 0x68, code 0x4"},
        {"te-2.13-1d", "scale 0x68, code 0x4"},
        {"miles", "scale 0x68, code 0x4"},
        {"vllm-emul", "scale 0x68, code 0x4"},
        {"torchao", "scale 0x68, code 0x4"},
        {"mslk", "scale 0x68, code 0x4"},
        {"modelopt", "scale 0x68, y=0x3FDFFFFF -> code 0x3"}},
       "same scale byte, different code (encode chain)"},
      {"§6.8 Example B (§5.4)",
       0x40820000,
       {0x3EA40000, 0xBE280000, 0x3EC30000, 0x3E800000},
       0x3EC30000,
       {{"te", "t=0x42280001 -> scale 0x63, codes 0x6 0xC 0x7 0x6"},
        {"te-2.13", "t=0x42280000 (tie) -> scale 0x62, codes 0x7 0xD 0x7 0x6"},
        {"te-2.13-1d", "scale 0x62, codes 0x7 0xD 0x7 0x6"},
        {"miles", "scale 0x62, codes 0x7 0xD 0x7 0x6"},
        {"torchao", "scale 0x62, codes 0x7 0xD 0x7 0x6"},
        {"modelopt", "t=0x4227FFFF -> scale 0x62, codes 0x7 0xD 0x7 0x6"},
        {"mslk", "t=0x4227FFFF -> scale 0x62, codes 0x7 0xD 0x7 0x6"},
        {"vllm-emul", "t=0x4227FFFF -> scale 0x62"}},
       "the scale byte differs (TE >= 2.14 vs every order that rounds A/6 first)"},
      {"§6.9 Example C1",
       0x40D50000,
       {0xBED50000, 0x3F330000},
       0x3F330000,
       {{"te", "scale 0x64, y=0xC0600001 -> code 0xE"},
        {"te-2.13", "scale 0x64, code 0xE"},
        {"te-2.13-1d", "scale 0x64, code 0xE"},
        {"miles", "scale 0x64, code 0xE"},
        {"torchao", "scale 0x64, y=0xC05FFFFF -> code 0xD"},
        {"mslk", "scale 0x64, code 0xD"},
        {"modelopt", "scale 0x64, code 0xD"},
        {"vllm-emul", "scale 0x64, code 0xD"}},
       "code flips in the other direction"},
      {"§6.9 Example C2",
       0x40E40000,
       {0x39E40000, 0x3A490000},
       0x3A490000,
       {{"te", "scale 0x14, y=0x405FFFFF -> code 0x5"},
        {"te-2.13", "scale 0x14, code 0x5"},
        {"miles", "scale 0x14, code 0x5"},
        {"modelopt", "scale 0x14, code 0x5"},
        {"vllm-emul", "scale 0x14, code 0x5"},
        {"torchao", "scale 0x14, y=0x40600000 (tie) -> code 0x6"},
        {"mslk", "scale 0x14, code 0x6"},
        {"te-2.13-1d", "scale 0x14, RN(S/sf) -> code 0x6"}},
       "code flips in the other direction (tiny block)"},
  };
  return v;
}

// Each example under every profile for which NUMERICS.md gives the outcome.
void add_examples(std::vector<CaseRecord>& out) {
  std::uint64_t seed = 607;
  for (const Example& e : examples()) {
    SplitMix64 rng(seed++);
    Grid g(16, 16);
    for (std::size_t i = 0; i < e.block.size(); ++i) g.at(0, std::int64_t(i)) = e.block[i];
    fill(g, rng, e.A, 0, 1, 0, 16);  // the rest of the example's block stays below its amax A
    g.at(15, 15) = e.g;              // the computed global amax equals the override
    fill_all(g, rng, e.g);
    const io::Tensor x = bf16_tensor(g);
    for (const NamedProfile& p : all_profiles()) {
      const auto it = e.expect.find(std::string(p.name));
      if (it == e.expect.end()) continue;
      Quant q;
      q.profile = p.name;
      q.amax_bits = e.g;
      out.push_back(quantize_case(
          q, x,
          fmt::format("NUMERICS.md {}: {}. 16x16 BF16 holding the example's block in row 0 (block amax A=0x{:08X}), "
                      "global amax g=0x{:08X} given as the amax override; profile {}: {}",
                      e.section, e.what, e.A, e.g, p.name, it->second)));
    }
  }
}

// ---- §6.11 saturation and NaN element, §6.12 underflow, §6.20 te-pyref ------------------------

void add_saturation_and_nan(std::vector<CaseRecord>& out) {
  // 32x32 BF16: tile (0,0) holds E2M1 grid points and ties with amax 6 (scale 0x7E, enc 1.0, so the
  // codes are e2m1(x)); tiles (0,1), (1,0), (1,1) have amaxes 3, 1.5, 0.75 (scales 0x76, 0x6E, 0x66).
  static const std::uint32_t kGrid[] = {0x3F000000, 0x3F800000, 0x3FC00000, 0x40000000, 0x40400000, 0x40800000, 0x3E800000,
                                        0x3F400000, 0x3FA00000, 0x3FE00000, 0x40200000, 0x40600000, 0x40A00000, 0x00000000};
  SplitMix64 rng(611);
  Grid g(32, 32);
  for (std::int64_t r = 0; r < 16; ++r)
    for (std::int64_t c = 0; c < 16; ++c) g.at(r, c) = kGrid[rng.below(std::size(kGrid))] | ((rng.next() & 1) ? 0x80000000u : 0u);
  g.at(0, 0) = 0x40C00000;    // 6
  g.at(0, 16) = 0x40400000;   // 3
  g.at(16, 0) = 0x3FC00000;   // 1.5
  g.at(16, 16) = 0x3F400000;  // 0.75
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

// ---- §4.2.7 the 4over6 candidates, §2.2.4 ggml's scale cast ------------------------------------

void add_candidates(std::vector<CaseRecord>& out) {
  // 16x16 F32 with g = 1536 (S = 1): row 0 is 6, then 4.5 (exact under map-to-4, 4 under map-to-6);
  // rows 1-15 are 6, then 4 (exact under map-to-6, 4.5 under map-to-4).
  Grid t(16, 16);
  for (std::int64_t r = 0; r < 16; ++r)
    for (std::int64_t k = 0; k < 16; ++k) t.at(r, k) = k == 0 ? 0x40C00000u : r == 0 ? 0x40900000u : 0x40800000u;
  for (const char* p : {"te-4over6-mae", "te-4over6-mse"})
    for (const BlockShape b : {BlockShape::k1D, BlockShape::k2D}) {
      Quant q;
      q.profile = p;
      q.block = b;
      q.amax_bits = 0x44C00000;  // 1536
      out.push_back(quantize_case(
          q, f32_tensor(t),
          fmt::format("NUMERICS.md §4.2.7 ({}, {}): g=1536, S=1. Row 0 (6, then 4.5) prefers map-to-4 (scale 0x3C, codes 6 "
                      "5), rows 1-15 (6, then 4) map-to-6 (0x38, codes 7 6); a 16x16 tile sums its rows' errors and keeps "
                      "map-to-6 on all 16 rows",
                      p, b == BlockShape::k2D ? "2D" : "1D")));
    }
}

void add_ggml(std::vector<CaseRecord>& out) {
  // Row 0, one block each: amax 1500 (t = 250), a tie t = 1.0625, t = 7.75 * 2^-9.
  Grid g(16, 48);
  const std::uint32_t kBlocks[3][4] = {{0x44BB8000, 0x447A0000},                          // 1500, 1000
                                       {0x40CC0000, 0x3F880000, 0x3F080000, 0x3FCC0000},  // 6.375, 1.0625, .53125, 1.59375
                                       {0x3DBA0000, 0x3C600000, 0x3B000000}};             // 6 * 7.75 * 2^-9, 7 * 2^-9, 2^-9
  for (std::int64_t j = 0; j < 3; ++j)
    for (std::int64_t k = 0; k < 4; ++k) g.at(0, 16 * j + k) = kBlocks[j][k];
  Quant q;
  q.profile = "ggml";
  q.direction = Direction::kRowwise;
  out.push_back(quantize_case(q, f32_tensor(g),
                              "NUMERICS.md §2.2.4 (ggml): row 0 block 0, amax 1500: t=250 -> scale 0x7E (448, e4m3sat 0x78), "
                              "codes 5 4; block 1, t=1.0625 (a tie) -> 0x39 (e4m3sat 0x38); block 2, t=7.75*2^-9 -> 0x07 "
                              "(e4m3sat 0x08)"));
}

}  // namespace

void add_quantize_worked_examples(std::vector<CaseRecord>& out) {
  add_examples(out);
  add_saturation_and_nan(out);
  add_underflow(out);
  add_te_pyref(out);
  add_amax_overrides(out);
  add_candidates(out);
  add_ggml(out);
}

}  // namespace nvfp4::cases::seeds
