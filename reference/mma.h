// The GEMM's accumulation as Blackwell's block-scaled MMA instructions compute it (NUMERICS.md
// §3.20.6): one fused dot-product-add per 64-element chunk of K, after MMA-Sim's bit-accurate
// model of `kind::mxf4nvf4.block16` with UE4M3 scales.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace nvfp4 {

// How the GEMM sums along K: EXACT (§3.20.3), or a chain of one modelled instruction.
enum class GemmAccumulation : std::uint8_t { EXACT, MMA_SM100, MMA_SM120 };

// One instruction family: the parameters of its group-scaled fused dot-product-add.
struct MmaModel {
  GemmAccumulation mode;
  std::string_view name;         // the registry's value of `accumulation`
  std::string_view instruction;  // the PTX instruction it models
  int chunk;                     // K per instruction: its groups of 16 are summed in one fused adder
  int fraction_bits;             // F: bits kept below the largest term's exponent, the rest truncated
  int zero_exponent;             // the exponent of a zero term, below every other
};

// The modelled families, one row each; every layer takes its names and parameters from here.
const std::vector<MmaModel>& mma_models();
const MmaModel& mma_model(GemmAccumulation mode);  // an MMA mode, not EXACT
// "exact" and each model's name; nullopt for any other name.
std::optional<GemmAccumulation> accumulation_of(std::string_view name);
std::string_view accumulation_name(GemmAccumulation mode);

// One summand of a tensor core's fused adder: the value n · 2^(e - fraction), where e decides the
// alignment (a zero term takes an exponent below every other).
struct FusedTerm {
  std::int64_t n = 0;
  int e = 0, fraction = 0;
};

// MMA-Sim's fused sum of terms[0, count), count >= 1: aligned to the largest exponent E, each term keeps `fraction_bits` bits
// below E (truncated toward zero), the truncated terms are summed exactly and the sum is rounded toward zero to binary32 (gradual
// underflow, ±inf past the range); a zero sum, exact or truncated, is +0.0. The terms' shifted values must stay below 2^62 in
// magnitude.
float fused_sum_toward_zero(const FusedTerm* terms, std::size_t count, int fraction_bits);

// One instruction for one output: c ⊕ Σ_g (Σ_i a_i·b_i)·sa_g·sb_g over `groups` (≤ chunk/16)
// groups of 16 elements, with a truncated fused sum and the result rounded toward zero.
// twice_a, twice_b: 2·f4 of the chunk's 16·groups elements; sa, sb: the groups' scale bytes, read
// as UE4M3 (bit 7 ignored). NaN for a NaN scale or c; +0.0 for a zero sum.
float mma_fused_dot_add(const MmaModel& model, float c, const std::int8_t* twice_a, const std::int8_t* twice_b,
                        const std::uint8_t* sa, const std::uint8_t* sb, int groups);

}  // namespace nvfp4
