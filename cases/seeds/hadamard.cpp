// The hadamard family's seed cases: §6.19's vectors and §3.19's specials under both masks, and
// inputs spanning many binades. (Quantize with rht is the quantize family's: quantize.cpp.)
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "cases/seeds/families.h"
#include "cases/seeds/seed_builders.h"
#include "reference/hadamard.h"

namespace nvfp4::cases::seeds {

void add_hadamard_seeds(std::vector<CaseRecord>& out) {
  // §6.19's four vectors as columns 0-3 of a 16x16 BF16 tensor (the transform runs down columns).
  Grid h(16, 16);
  h.at(0, 0) = 0x3F800000;                                          // e_0
  h.at(3, 1) = 0x3F800000;                                          // e_3
  for (int k = 0; k < 16; ++k) h.at(k, 2) = bits_of(float(k + 1));  // k + 1
  h.at(0, 3) = 0x3F800000;                                          // 1, 2^-8, 2^-38: the double rounding
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
  // A BF16 tensor core's sums (accumulation mma-sm90, te-pyref's RHT = MMA_SM90) on the same
  // columns, and two whose first output tells the rules apart: in column 4 the exact sum lies half a
  // binary32 ulp below a BF16 midpoint (RN reaches it and ties to even, RZ stays below); in column 9
  // the sum keeps 25 fraction bits of the largest product, so the small one's 2^-7 is lost.
  Grid m = h;
  m.at(0, 4) = 0x3F810000;  // 1 + 2^-7
  m.at(1, 4) = 0x3B800000;  // 2^-8
  m.at(2, 4) = 0xB3800000;  // -2^-24
  m.at(0, 9) = 0x3F800000;  // 1
  m.at(1, 9) = 0xBF800000;  // -1
  m.at(2, 9) = 0x35810000;  // (1 + 2^-7) * 2^-20
  CaseRecord t = op_case("rht", "te", {{"x", bf16_tensor(m)}},
                         "NUMERICS.md §3.19 MMA_SM90, mask 0: the specials, a sum just below a BF16 midpoint, a truncated tail");
  t.c.params.set("rht_mask", std::uint64_t(0));
  t.c.params.set("accumulation", std::string(rht_sum_name(RhtSum::MMA_SM90)));
  out.push_back(std::move(t));
  const Recipe wide = recipe(Distribution::kBlockLogUniform, 1919, 64, 48, io::DType::BF16);
  CaseRecord r = op_case("rht", "te", {{"x", generate_tensor(wide)}}, "NUMERICS.md §3.19: inputs spanning many binades");
  r.recipes["x"] = wide;
  out.push_back(std::move(r));
}

}  // namespace nvfp4::cases::seeds
