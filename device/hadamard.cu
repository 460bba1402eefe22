// The 16-point random Hadamard transform (docs/NUMERICS.md §3.19) as its canonical definition:
// the exact sum of 16 products, one rounding to binary32, then RNE to BF16. No tensor cores, whose
// accumulation rounding is unspecified. One thread transforms 16-row chunks of two adjacent
// columns: alone (rht), or fused into TransformerEngine's wgrad columnwise quantization, which
// reads x twice (the amax of rht(x), then the codes) and never stores rht(x).
//
// Exactness. A finite BF16 x[k] = m * 2^q (|m| < 2^8); the butterflies sum the signed inputs
// s_k * H[k][n] * x[k] unscaled and multiply each sum T by 0.25, which is exact (T is a multiple
// of 2^-133, 0.25 * T of 2^-135, above binary32's 2^-149). When the nonzero inputs' exponents span
// at most S binades, every partial sum of up to 16 signed inputs is a multiple of 2^qmin below
// 2^(qmax+12) in magnitude: at most S + 12 significant bits. So a butterfly is exact in binary32
// for S <= 12 (24 bits; and no partial sum overflows while |x| < 2^124, BF16 exponent field <= 250),
// which holds for almost every chunk of real tensors, and in binary64 for S <= 41 (53 bits), where
// one conversion to binary32 is the single rounding of the exact sum. For 12 < S <= 25 two binary32
// butterflies, over the inputs of the top 13 fields and over the others (each spans at most 12),
// sum exactly, and one binary32 addition of the two sums is that single rounding; normal data has
// a value below 2^-12 of its chunk's largest in about 1 % of chunks (Rht16Binary32Bound in
// tests/hadamard_test.cpp checks both bounds against binary64, and that 13 binades or field 251 can
// fail). A wider span (or an infinity) takes the fixed-point path: the sum in units of 2^-135 in 9
// 32-bit limbs (it needs 265 bits), rounded to binary32 by hand. The binary32 paths are inlined;
// the binary64 and fixed-point ones are not, and run after a thread's loop, so that the kernels
// stay small and the loop keeps its registers. An exact zero takes its sign from the products
// (-0.0 only when every product is -0.0): a chunk of zeros takes it from its signs alone
// (zero_chunk); in any other chunk a zero sum is +0.0, although the butterfly's grouping,
// (a) - (b + c), can give -0.0. A NaN input makes every output NaN, on every path.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include <cuda_bf16.h>

#include "device/amax_reduce.cuh"
#include "device/check.h"
#include "device/cp_async.cuh"
#include "device/element_io.cuh"
#include "device/encode16.cuh"
#include "device/kernels.h"
#include "device/te_factor_table.cuh"
#include "reference/constants.h"
#include "reference/formulas.h"
#include "reference/half_float.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

constexpr int kThreads = 256;
constexpr int kCtasPerSm = 2;  // __launch_bounds__: at most 128 registers
constexpr std::uint16_t kBf16Nan = 0x7FFF;  // RNbf16 of the canonical NaN
constexpr int kSpanForBinary32 = 12;        // the exactness bounds above
constexpr int kMaxFieldForBinary32 = 250;
constexpr int kSpanForBinary64 = 41;
constexpr int kLimbs = 9;                   // 288 bits >= 265
constexpr int kFixedLsbExponent = -135;     // the fixed-point unit: 2^-133 (BF16 subnormal step) * 0.25

// The BF16 exponent field with subnormals counted as 1: values of one field share a 2^q grid.
__device__ __forceinline__ int grid_exponent(std::uint16_t b) { return max(int((b >> 7) & 0xFF), 1); }

__device__ __forceinline__ bool coefficient_negative(int k, int n, std::uint16_t mask) {
  return ((__popc(k & n) & 1) != 0) != (((mask >> k) & 1) != 0);
}

// RN to binary32 of the 288-bit two's-complement fixed-point number `limb` (units of 2^-135).
__device__ float round_limbs(std::uint32_t (&limb)[kLimbs], bool negative) {
  if (negative) {  // negate: invert and add one
    std::uint64_t carry = 1;
    for (int l = 0; l < kLimbs; ++l) {
      const std::uint64_t v = std::uint64_t(~limb[l]) + carry;
      limb[l] = std::uint32_t(v);
      carry = v >> 32;
    }
  }
  int top = kLimbs - 1;
  while (top >= 0 && limb[top] == 0) --top;
  if (top < 0) return 0.0f;
  const int p = 32 * top + 31 - __clz(limb[top]);  // the most significant set bit
  // w: the 64 bits whose top bit is bit p; sticky: whether any bit below them is set.
  const int shift = p - 63;
  std::uint64_t w = 0;
  bool sticky = false;
  auto bit_range = [&](int lo) {  // bits [lo, lo + 64) for lo >= 0
    std::uint64_t r = 0;
    for (int b = 0; b < 3; ++b) {
      const int l = lo / 32 + b;
      if (l >= kLimbs) break;
      const int at = 32 * l - lo;  // where limb l's bit 0 lands in r
      if (at >= 64) break;
      r |= at >= 0 ? std::uint64_t(limb[l]) << at : std::uint64_t(limb[l]) >> -at;
    }
    return r;
  };
  if (shift >= 0) {
    w = bit_range(shift);
    for (int l = 0; l < shift / 32; ++l) sticky |= limb[l] != 0;
    sticky |= (limb[shift / 32] & ((1u << (shift % 32)) - 1u)) != 0;
  } else {
    w = bit_range(0) << -shift;
  }
  std::uint32_t mant = std::uint32_t(w >> 40);  // 24 bits with the leading one at bit 23
  const std::uint64_t rest = w & ((std::uint64_t(1) << 40) - 1), half = std::uint64_t(1) << 39;
  int exponent = p - 23 + kFixedLsbExponent;
  if (rest > half || (rest == half && (sticky || (mant & 1u)))) {
    if (++mant == (1u << 24)) {
      mant >>= 1;
      ++exponent;
    }
  }
  const float v = scalbnf(float(mant), exponent);  // exact, or +inf past FLT_MAX
  return negative ? -v : v;
}

// Output n of the chunk by the fixed-point path (any span, infinities), for a chunk with a nonzero input.
__device__ float exact_output(const std::uint16_t (&x)[16], int n, std::uint16_t mask) {
  std::int64_t acc[kLimbs] = {};
  bool plus_inf = false, minus_inf = false;
  for (int k = 0; k < 16; ++k) {
    const std::uint16_t b = x[k];
    const bool negative = coefficient_negative(k, n, mask) != ((b >> 15) != 0);
    const int e = (b >> 7) & 0xFF;
    const std::uint32_t f = b & 0x7F;
    if (e == 0xFF) {  // infinity (NaN was handled by the caller)
      (negative ? minus_inf : plus_inf) = true;
      continue;
    }
    if ((b & 0x7FFF) == 0) continue;
    const std::uint64_t m = e == 0 ? f : (f | 0x80u);
    const int sh = e == 0 ? 0 : e - 1;  // |product| = m * 2^sh units
    const std::uint64_t v = m << (sh % 32);
    const int l = sh / 32;
    const std::int64_t lo = std::int64_t(v & 0xFFFFFFFFu), hi = std::int64_t(v >> 32);
    acc[l] += negative ? -lo : lo;
    if (hi) acc[l + 1] += negative ? -hi : hi;
  }
  if (plus_inf && minus_inf) return canonical_nan();
  if (plus_inf || minus_inf) return plus_inf ? INFINITY : -INFINITY;
  std::uint32_t limb[kLimbs];
  std::int64_t carry = 0;
  bool zero = true;
  for (int l = 0; l < kLimbs; ++l) {
    const std::int64_t v = acc[l] + carry;
    limb[l] = std::uint32_t(v);
    carry = v >> 32;  // arithmetic: -1 carries a borrow
    zero = zero && limb[l] == 0;
  }
  if (zero && carry == 0) return 0.0f;  // some input is nonzero (zero chunks never come here): +0.0
  return round_limbs(limb, carry < 0);
}

// s_k * x for input k: the butterflies below sum the signed inputs and multiply the sums by 0.25.
template <class T>
__device__ __forceinline__ T signed_input(T x, int k, std::uint16_t mask) {
  return ((mask >> k) & 1) ? -x : x;
}

__device__ __forceinline__ float sum_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float difference_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sum_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double difference_rn(double a, double b) { return __dsub_rn(a, b); }

// Fast Walsh-Hadamard butterfly in Sylvester order: d[n] = sum_k (-1)^popcount(k&n) d[k], each
// addition rounded in T (exact within the bounds above).
template <class T>
__device__ __forceinline__ void butterfly16(T (&d)[16]) {
#pragma unroll
  for (int h = 1; h < 16; h *= 2)
#pragma unroll
    for (int i = 0; i < 16; ++i)
      if ((i & h) == 0) {
        const T a = d[i], b = d[i + h];
        d[i] = sum_rn(a, b);
        d[i + h] = difference_rn(a, b);
      }
}

// A chunk's 16 BF16 values (inputs or outputs) as pairs: word i holds value 2i in its low half and
// 2i + 1 in its high half, the order of memory. Passed by value to the out-of-line paths, so that
// the common path keeps it in registers.
struct Bf16x16 {
  std::uint32_t pair[8];
  __device__ __forceinline__ std::uint16_t bits(int k) const { return std::uint16_t(pair[k / 2] >> (16 * (k % 2))); }
  __device__ __forceinline__ float value(int k) const { return bf16_half_of_word(pair[k / 2], k % 2); }
  __device__ __forceinline__ void unpack(std::uint16_t (&v)[16]) const {
#pragma unroll
    for (int k = 0; k < 16; ++k) v[k] = bits(k);
  }
  __device__ __forceinline__ std::uint32_t signs() const {  // bit k: the sign of value k
    std::uint32_t s = 0;
#pragma unroll
    for (int k = 0; k < 16; ++k) s |= std::uint32_t(bits(k) >> 15) << k;
    return s;
  }
};

// The outputs of a chunk of zeros from their sign bits (bit k: x[k]'s). Output n is -0.0 exactly
// when every product is -0.0, that is when bit k of signs ^ ~mask is parity(k & n) for every k;
// these parity rows differ for different n, so at most one output is -0.0: the n whose row is that
// of bits 1, 2, 4, 8 (parity(2^b & n) is bit b of n).
__device__ __forceinline__ Bf16x16 zero_chunk(std::uint32_t signs, std::uint16_t mask) {
  const std::uint32_t p = (signs ^ ~std::uint32_t(mask)) & 0xFFFFu;
  const int n = int((p >> 1) & 1u) | int((p >> 2) & 1u) << 1 | int((p >> 4) & 1u) << 2 | int((p >> 8) & 1u) << 3;
  const std::uint32_t row =
      (n & 1 ? 0xAAAAu : 0u) ^ (n & 2 ? 0xCCCCu : 0u) ^ (n & 4 ? 0xF0F0u : 0u) ^ (n & 8 ? 0xFF00u : 0u);
  Bf16x16 y;
#pragma unroll
  for (int i = 0; i < 8; ++i) y.pair[i] = p == row && n / 2 == i ? 0x8000u << (16 * (n % 2)) : 0u;
  return y;
}

// The 16 outputs of the chunk x by the binary64 or the fixed-point path.
__device__ __noinline__ Bf16x16 rht16_wide(Bf16x16 x, std::uint16_t mask) {
  std::uint16_t v[16], y[16];
  x.unpack(v);
  bool nan = false, inf = false;
  int lo = 0xFF, hi = 0;
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const bool special = ((v[k] >> 7) & 0xFF) == 0xFF;
    nan |= special && (v[k] & 0x7F) != 0;
    inf |= special && (v[k] & 0x7F) == 0;
    if ((v[k] & 0x7FFF) != 0) {
      lo = min(lo, grid_exponent(v[k]));
      hi = max(hi, grid_exponent(v[k]));
    }
  }
  if (hi == 0) return zero_chunk(x.signs(), mask);
  if (nan) {
#pragma unroll
    for (int n = 0; n < 16; ++n) y[n] = kBf16Nan;
  } else if (!inf && hi - lo <= kSpanForBinary64) {
    double d[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) d[k] = signed_input(double(bf16_to_float(v[k])), k, mask);
    butterfly16(d);
    // 0.25 * T is exact; some input is nonzero, so an exact-zero sum is +0.0, which adding +0.0 gives.
#pragma unroll
    for (int n = 0; n < 16; ++n) y[n] = float_to_bf16(__double2float_rn(__fma_rn(d[n], 0.25, 0.0)));
  } else {
#pragma unroll 1
    for (int n = 0; n < 16; ++n) y[n] = float_to_bf16(exact_output(v, n, mask));
  }
  Bf16x16 out;
#pragma unroll
  for (int i = 0; i < 8; ++i) out.pair[i] = y[2 * i] | std::uint32_t(y[2 * i + 1]) << 16;
  return out;
}

// Row k of a chunk of two adjacent columns c, c + 1 as one 32-bit load gives it: column c in the
// low half of row[k], column c + 1 in the high half. A warp's load of one row is 128 contiguous
// bytes; a thread keeps 16 loads in flight.
struct ColumnPair {
  std::uint32_t row[16];
  template <int kHalf>
  __device__ __forceinline__ float value(int k) const { return bf16_half_of_word(row[k], kHalf); }
  template <int kHalf>
  __device__ __forceinline__ Bf16x16 column() const {
    Bf16x16 v;
#pragma unroll
    for (int i = 0; i < 8; ++i) v.pair[i] = __byte_perm(row[2 * i], row[2 * i + 1], kHalf == 0 ? 0x5410 : 0x7632);
    return v;
  }
};

// Rows 16 * chunk .. 16 * chunk + 15 of columns c and c + 1 (c even, N a multiple of 16, x 4-byte
// aligned: the launchers check).
__device__ __forceinline__ ColumnPair load_pair(const std::uint16_t* __restrict__ x, std::int64_t N, std::int64_t c,
                                                std::int64_t chunk) {
  const std::uint32_t* p = reinterpret_cast<const std::uint32_t*>(x + 16 * chunk * N + c);
  ColumnPair v;
#pragma unroll
  for (int k = 0; k < 16; ++k) v.row[k] = __ldg(p + k * (N / 2));
  return v;
}

// How a column of a pair is summed exactly: a chunk of zeros by its signs alone; a span of at most
// 12 binades by one binary32 butterfly; a span of at most 25 by two, over the inputs at most 12
// binades below the largest and over the rest (each spans at most 12), whose exact sums one binary32
// addition rounds once, as the binary64 path's conversion does; anything else by the wide paths.
enum class SumPath { kZeros, kBinary32, kSplit, kWide };

// The spans of both columns of a pair, lane by lane in 16-bit lanes (lane h: column c + h), from
// the packed rows: `largest` holds 0x7FFF + the largest |x| bits (0x7FFF for a column of zeros),
// `high` the field of the largest |x| and `low` that of the smallest nonzero |x| (subnormals share
// field 1's grid, so both are at least 1; a column of zeros has 1 and 1), so that the span
// high - low never borrows across lanes; `over` has bit 15 of a lane set where the span exceeds 12,
// `wide` where it exceeds 25 or high exceeds 250.
struct PairSpans {
  std::uint32_t largest, high, over, wide;
  __device__ __forceinline__ SumPath path(int h) const {
    if (((largest >> (16 * h)) & 0xFFFFu) == 0x7FFFu) return SumPath::kZeros;
    if ((wide >> (16 * h + 15)) & 1u) return SumPath::kWide;
    return (over >> (16 * h + 15)) & 1u ? SumPath::kSplit : SumPath::kBinary32;
  }
  __device__ __forceinline__ int high_field(int h) const { return int((high >> (16 * h)) & 0xFFFFu); }
  __device__ __forceinline__ bool binary32() const { return wide == 0; }
};

__device__ __forceinline__ PairSpans pair_spans(const ColumnPair& x) {
  std::uint32_t largest = 0x7FFF7FFFu, smallest = 0x7FFF7FFFu;
#pragma unroll
  for (int k = 0; k < 16; k += 2) {
    // Per lane (sign bit set, less one: no borrow crosses lanes): 0x7FFF + |x|.
    const std::uint32_t a = (x.row[k] | 0x80008000u) - 0x00010001u, b = (x.row[k + 1] | 0x80008000u) - 0x00010001u;
    largest = __vimax3_u16x2(largest, a, b);
    smallest = __vimin3_s16x2(smallest, a, b);  // as int16 a zero (0x7FFF) is the largest
  }
  // Less 0x7FFF per lane: |x| (the smallest nonzero; 0 for a column of zeros); >> 7: the field.
  constexpr std::uint32_t kOnes = 0x00010001u, kFields = 0x00FF00FFu;
  const std::uint32_t high = __vmaxu2(((largest - 0x7FFF * kOnes) >> 7) & kFields, kOnes);
  const std::uint32_t low = __vmaxu2(((smallest - 0x7FFF * kOnes) >> 7) & kFields, kOnes);
  const std::uint32_t span = high - low;
  return {largest, high, span + (0x8000 - kSpanForBinary32 - 1) * kOnes,
          ((span + (0x8000 - 2 * kSpanForBinary32 - 2) * kOnes) | (high + (0x8000 - kMaxFieldForBinary32 - 1) * kOnes)) &
              0x80008000u};
}

// RN32(T[n]), T[n] = sum_k (-1)^popcount(k&n) s_k x[k], for column kHalf on its kBinary32 path
// (the butterfly is exact) or its kSplit path (two exact butterflies, one rounding): output n of
// the transform is then RN_bf16(0.25 * RN32(T[n])).
template <int kHalf>
__device__ __forceinline__ void binary32_sums(const ColumnPair& x, const PairSpans& spans, std::uint16_t mask,
                                              float (&t)[16]) {
#pragma unroll
  for (int k = 0; k < 16; ++k) t[k] = signed_input(x.value<kHalf>(k), k, mask);
  if (spans.path(kHalf) == SumPath::kBinary32) {
    butterfly16(t);
    return;
  }
  // The inputs of the top 13 fields stay in t, the rest move to low.
  const float threshold = float_of(std::uint32_t(spans.high_field(kHalf) - kSpanForBinary32) << 23);
  float low[16];
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const bool high = fabsf(t[k]) >= threshold;
    low[k] = high ? 0.0f : t[k];
    t[k] = high ? t[k] : 0.0f;
  }
  butterfly16(t);
  butterfly16(low);
#pragma unroll
  for (int n = 0; n < 16; ++n) t[n] = __fadd_rn(t[n], low[n]);
}

// The transform's outputs from RN32(T): 0.25 * RN32(T[n]) is exact, and the hardware conversion
// rounds it to BF16 two at a time (RNE, as float_to_bf16). The chunk has a nonzero input, so an
// exact-zero sum is +0.0, which adding +0.0 gives (the butterfly may have left -0.0).
__device__ __forceinline__ Bf16x16 outputs_of_sums(const float (&t)[16]) {
  Bf16x16 y;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const __nv_bfloat162 pair =
        __floats2bfloat162_rn(__fmaf_rn(t[2 * i], 0.25f, 0.0f), __fmaf_rn(t[2 * i + 1], 0.25f, 0.0f));
    y.pair[i] = *reinterpret_cast<const std::uint32_t*>(&pair);  // low half: output 2i
  }
  return y;
}

// The 16 outputs of column kHalf of a pair that binary32() accepts.
template <int kHalf>
__device__ __forceinline__ Bf16x16 binary32_outputs(const ColumnPair& x, const PairSpans& spans, std::uint16_t mask) {
  if (spans.path(kHalf) == SumPath::kZeros) return zero_chunk(x.column<kHalf>().signs(), mask);
  float t[16];
  binary32_sums<kHalf>(x, spans, mask, t);
  return outputs_of_sums(t);
}

// Both columns' outputs by the wide paths, for a pair that the binary32 butterfly may not sum
// exactly. Out of line, with the pair passed by value, so that the common path keeps its registers.
struct PairOutputs {
  Bf16x16 y[2];
};
__device__ __noinline__ PairOutputs rht_pair_wide(ColumnPair x, std::uint16_t mask) {
  return {{rht16_wide(x.column<0>(), mask), rht16_wide(x.column<1>(), mask)}};
}

// The largest |y| of outputs that are not NaN: non-negative BF16 bits order as their values.
__device__ __forceinline__ float finite_amax(const Bf16x16& y) {
  std::uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < 8; i += 2) m = __vimax3_u16x2(m, y.pair[i] & 0x7FFF7FFFu, y.pair[i + 1] & 0x7FFF7FFFu);
  return float_of(max(m & 0xFFFFu, m >> 16) << 16);
}

// Thread p of the x dimension of the grid owns columns 2p and 2p + 1; the y dimension splits the
// chunks of a column into contiguous ranges, one per CTA row.
__device__ __forceinline__ std::int64_t grid_column() { return 2 * (std::int64_t(blockIdx.x) * kThreads + threadIdx.x); }
struct ChunkRange {
  std::int64_t first, last;
};
__device__ __forceinline__ ChunkRange chunk_range(std::int64_t chunks) {
  return {chunks * blockIdx.y / gridDim.y, chunks * (blockIdx.y + 1) / gridDim.y};
}

// A warp's 64 output rows (rows c and c + 1 of each lane) of 32 bytes each per step, staged in
// shared memory so that lanes 2i and 2i + 1 write the two halves of one row with the same
// instruction: whole sectors, where a thread's own stores of its rows cost L2 a write request per
// 16 bytes or fewer, and made the kernels L2-bound. Slot 4 * lane + 2 * h + q holds half q of the
// lane's row c + h, XOR-swizzled within each 128-byte line so that the staging and the stores'
// reads are free of bank conflicts. Every lane of the warp must call store(): the kernels give
// lanes past the last column the last pair to recompute (pair_columns).
constexpr int kWarps = kThreads / 32;
struct WarpRows {
  uint4* slots;  // this warp's 128
  int lane;
  __device__ __forceinline__ static int slot(int s) { return s ^ ((s >> 3) & 7); }
  // slot(4 * lane + 2 * h + q), whose swizzle (lane / 2) % 8 leaves 2 * h + q (bits 0-1) to one XOR.
  __device__ __forceinline__ uint4& half(int h, int q) const { return slots[slot(4 * lane) ^ (2 * h + q)]; }
  // dst(r, q, bytes) writes half q of the warp's row r (0..63), which lane r / 2 staged as its row c + r % 2.
  template <class Dst>
  __device__ __forceinline__ void store(Dst&& dst) const {
    __syncwarp();
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int p = lane + 32 * j;
      dst(p / 2, p % 2, slots[slot(p)]);
    }
    __syncwarp();
  }
};

// This thread's column pair for the kernels that store through WarpRows: `own` (grid_column()),
// `c` the pair it computes (own, or the last pair for lanes past the end, which store nothing),
// and `warp_first` the first column of its warp (row r of the warp's WarpRows is column
// warp_first + r).
struct PairColumns {
  std::int64_t own, c, warp_first;
};
__device__ __forceinline__ PairColumns pair_columns(std::int64_t N, int lane) {
  const std::int64_t own = grid_column();
  return {own, min(own, N - 2), own - 2 * lane};
}

// A warp's chunk of x, 16 rows of its 64 columns (2 KB), copied to shared memory by cp.async: a
// lane issues four 16-byte copies a chunk, where 16 loads of its own 4-byte row pieces took 16
// addresses of two instructions each, and 16 registers for the chunk in flight. Lane l copies
// bytes [16 (l % 8), + 16) of rows 4 j + l / 8, j = 0..3: each copy instruction reads four whole
// rows (as many 128-byte lines as a 4-byte load of 32 lanes reads one), and its eight-lane phases
// write one row each, free of bank conflicts, as the 32 lanes' reads of a row are (lane l reads
// word l, its column pair). Segments at or past column N are zeros, written once: lanes past the
// end sum chunks of zeros and store nothing. Every lane of the warp calls fetch() and read() in
// turn, one chunk ahead, for consecutive chunks from the first.
constexpr int kStagedRowBytes = 128;  // a warp's 64 BF16 columns
struct ChunkStage {
  static constexpr int kSlots = 16 * kStagedRowBytes / int(sizeof(uint4));  // a warp's chunk in shared memory
  char* copy_base;  // this lane's segment of row 0 in shared memory
  const char* read_base;  // word `lane` of row 0
  const char* next;  // this lane's segment of row 0 of the next chunk to copy
  std::int64_t row_bytes;
  bool inside;  // this lane's segment lies below column N

  __device__ __forceinline__ ChunkStage(uint4* warp_slots, const std::uint16_t* x, std::int64_t N, std::int64_t warp_first,
                                        int lane, std::int64_t first_chunk)
      : copy_base(reinterpret_cast<char*>(warp_slots) + 16 * lane),
        read_base(reinterpret_cast<const char*>(warp_slots) + 4 * lane),
        next(reinterpret_cast<const char*>(x + (16 * first_chunk + lane / 8) * N + warp_first + 8 * (lane % 8))),
        row_bytes(2 * N),
        inside(warp_first + 8 * (lane % 8) < N) {
    if (!inside)
#pragma unroll
      for (int j = 0; j < 4; ++j) *reinterpret_cast<uint4*>(copy_base + 4 * j * kStagedRowBytes) = make_uint4(0, 0, 0, 0);
  }
  // Starts the copies of the next chunk (they come in order: the index that PairLoads takes is
  // implied), once every lane has read the one before.
  __device__ __forceinline__ void fetch(std::int64_t) {
    __syncwarp();
    if (inside)
#pragma unroll
      for (int j = 0; j < 4; ++j) cp_async16(copy_base + 4 * j * kStagedRowBytes, next + 4 * j * row_bytes);
    cp_async_commit();
    next += 16 * row_bytes;
  }
  // This lane's column pair of the chunk copied last.
  __device__ __forceinline__ ColumnPair read() const {
    cp_async_wait<0>();
    __syncwarp();
    ColumnPair v;
#pragma unroll
    for (int k = 0; k < 16; ++k) v.row[k] = *reinterpret_cast<const std::uint32_t*>(read_base + k * kStagedRowBytes);
    return v;
  }
};

// The same chunks by the lane's own 4-byte loads of its column pair, the next chunk's 16 in
// registers: the amax pass, which encodes nothing and waits on memory more than on its
// instructions, runs faster so (the 16 loads land one by one, where a copied chunk is read only
// once all of it has landed).
struct PairLoads {
  const std::uint16_t* __restrict__ x;
  std::int64_t N, c;
  ColumnPair next;
  __device__ __forceinline__ void fetch(std::int64_t chunk) { next = load_pair(x, N, c, chunk); }
  __device__ __forceinline__ ColumnPair read() const { return next; }
};

// Calls f(std::integral_constant<int, 0>{}) and then f(std::integral_constant<int, 1>{}): the two
// columns of a pair.
template <class F>
__device__ __forceinline__ void for_each_half(F&& f) {
  f(std::integral_constant<int, 0>{});
  f(std::integral_constant<int, 1>{});
}

// Visits this thread's chunks of its column pair, which `chunks` (ChunkStage or PairLoads) fetches
// one ahead: fast(chunk, pair, spans) where binary32 sums both columns exactly, and
// group_end(first, last) after the last chunk of each group of kGroup (counted from chunk 0; first
// and last cut to the range). The chunks that binary32 may not sum, rare in real tensors, are left
// for after the loop: wide(chunk, outputs), the first one remembered, a rescan from it if there are
// more. The loop thus holds no call, whose calling convention would cost the loop its registers.
// kReverse visits the range from its last chunk down (PairLoads only: ChunkStage copies forward;
// groups of one only).
template <int kGroup, bool kReverse = false, class Chunks, class Fast, class Wide, class GroupEnd>
__device__ __forceinline__ void for_each_chunk(const std::uint16_t* __restrict__ x, std::int64_t N, std::int64_t c,
                                               ChunkRange r, Chunks chunks, std::uint16_t mask, Fast&& fast,
                                               Wide&& wide, GroupEnd&& group_end) {
  static_assert(!kReverse || kGroup == 1, "groups are counted from the range's first chunk up");
  const std::int64_t step = kReverse ? -1 : 1, end = kReverse ? r.first - 1 : r.last;
  std::int64_t first_wide = -1;
  bool more_wide = false;
  if (r.first < r.last) chunks.fetch(kReverse ? r.last - 1 : r.first);
  for (std::int64_t chunk = kReverse ? r.last - 1 : r.first; chunk != end; chunk += step) {
    const ColumnPair v = chunks.read();
    if (chunk + step != end) chunks.fetch(chunk + step);  // the next chunk flies while this one is summed and encoded
    const PairSpans spans = pair_spans(v);
    if (spans.binary32()) fast(chunk, v, spans);
    else if (first_wide < 0) first_wide = chunk;
    else more_wide = true;
    if ((chunk + 1) % kGroup == 0 || chunk + 1 == r.last) group_end(max(chunk - chunk % kGroup, r.first), chunk + 1);
  }
  if (first_wide < 0) return;
  // The other wide chunks lie past the first one in the order of the visit.
  const ChunkRange rescan = !more_wide ? ChunkRange{first_wide, first_wide + 1}
                            : kReverse ? ChunkRange{r.first, first_wide + 1}
                                       : ChunkRange{first_wide, r.last};
  for (std::int64_t chunk = rescan.first; chunk < rescan.last; ++chunk) {
    const ColumnPair v = load_pair(x, N, c, chunk);
    if (!pair_spans(v).binary32()) wide(chunk, rht_pair_wide(v, mask));
  }
}

struct NoGroupEnd {
  __device__ void operator()(std::int64_t, std::int64_t) const {}
};

// kDefaultMask: the mask is kRhtDefaultMask, compiled as a constant (the signs fold into the
// butterfly's first additions). The outputs leave through WarpRows, one chunk per step.
template <bool kDefaultMask>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) rht_kernel(const std::uint16_t* __restrict__ x, std::int64_t M,
                                                       std::int64_t N, std::uint16_t runtime_mask, std::uint16_t* __restrict__ out) {
  const std::uint16_t mask = kDefaultMask ? constants::kRhtDefaultMask : runtime_mask;
  __shared__ uint4 staged[kWarps][128], chunks[kWarps][ChunkStage::kSlots];
  const WarpRows rows{staged[threadIdx.x / 32], int(threadIdx.x % 32)};
  const PairColumns pc = pair_columns(N, rows.lane);
  const ChunkRange range = chunk_range(M / 16);
  for_each_chunk<1>(
      x, N, pc.c, range, ChunkStage(chunks[threadIdx.x / 32], x, N, pc.warp_first, rows.lane, range.first), mask,
      [&](std::int64_t, const ColumnPair& v, const PairSpans& spans) {
        for_each_half([&](auto half) {
          constexpr int h = decltype(half)::value;
          const Bf16x16 y = binary32_outputs<h>(v, spans, mask);
          rows.half(h, 0) = make_uint4(y.pair[0], y.pair[1], y.pair[2], y.pair[3]);
          rows.half(h, 1) = make_uint4(y.pair[4], y.pair[5], y.pair[6], y.pair[7]);
        });
      },
      [&](std::int64_t chunk, const PairOutputs& w) {  // after the loop's last __syncwarp: over the staged copy
        for (int h = 0; pc.own < N && h < 2; ++h) {
          uint4* dst = reinterpret_cast<uint4*>(out + (pc.c + h) * M + 16 * chunk);
          __stcs(dst, make_uint4(w.y[h].pair[0], w.y[h].pair[1], w.y[h].pair[2], w.y[h].pair[3]));
          __stcs(dst + 1, make_uint4(w.y[h].pair[4], w.y[h].pair[5], w.y[h].pair[6], w.y[h].pair[7]));
        }
      },
      [&](std::int64_t chunk, std::int64_t) {  // a wide chunk's rows are written here too, and again after
        rows.store([&](int r, int q, const uint4& bytes) {
          if (pc.warp_first + r < N) __stcs(reinterpret_cast<uint4*>(out + (pc.warp_first + r) * M + 16 * chunk) + q, bytes);
        });
      });
}

// Pass 1 of the fused columnwise quantization: amax(rht(x)) with the profile's NaN rule; the
// transform's outputs are not stored. Where binary32 sums a column only max |RN32(T)| is kept:
// rounding is monotonic, so the largest output is RN_bf16(0.25 * max |RN32(T)|), and such outputs
// are never NaN (a chunk of zeros adds nothing). The grid and each CTA's range of chunks are pass
// 2's, visited backwards: the chunks this pass reads last, still in L2, are those pass 2 reads first.
template <bool kDefaultMask>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) rht_amax_kernel(const std::uint16_t* __restrict__ x, std::int64_t M,
                                                                        std::int64_t N, std::uint16_t runtime_mask,
                                                                        AmaxRule rule, unsigned* out) {
  const std::uint16_t mask = kDefaultMask ? constants::kRhtDefaultMask : runtime_mask;
  float acc = 0.0f, largest_sum = 0.0f;
  const std::int64_t c = grid_column();
  if (c < N)
    for_each_chunk<1, /*kReverse=*/true>(
        x, N, c, chunk_range(M / 16), PairLoads{x, N, c}, mask,
        [&](std::int64_t, const ColumnPair& v, const PairSpans& spans) {
          for_each_half([&](auto half) {
            constexpr int h = decltype(half)::value;
            if (spans.path(h) == SumPath::kZeros) return;
            float t[16];
            binary32_sums<h>(v, spans, mask, t);
#pragma unroll
            for (int n = 0; n < 16; ++n) largest_sum = fmaxf(largest_sum, fabsf(t[n]));
          });
        },
        [&](std::int64_t, const PairOutputs& w) {
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int n = 0; n < 16; ++n) acc = amax_step(rule, acc, w.y[h].value(n));
        },
        NoGroupEnd{});
  acc = amax_combine(rule, acc, __bfloat162float(__float2bfloat16_rn(0.25f * largest_sum)));
  acc = cta_amax<kThreads>(rule, acc);
  if (threadIdx.x == 0) atomicMax(out, bits_of(acc));  // non-negative floats order like their bits
}

// Pass 2: row c of the columnwise copy y = rht(x) [N, M] is column c of x transformed chunk by
// chunk, and chunk b is y's 16-element block (c, b). The codes of kGroup consecutive chunks (32
// bytes of each data_t row) leave through WarpRows, and each thread writes 4 bytes of its scale_t
// rows: one 8-byte store per block and one byte per scale, the rows of adjacent threads apart, cost
// L2 a write request each and made this pass L2-bound.
constexpr int kGroup = 4;
static_assert(8 * kGroup == 32, "a group's codes fill a WarpRows row");

// kTe: the profile's knobs are te's, compiled as constants (dispatch_knobs). kSr: stochastic
// rounding, compiled apart so that the round-to-nearest loop holds none of its registers.
template <bool kTe, bool kDefaultMask, bool kSr>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) rht_quantize_kernel(const std::uint16_t* __restrict__ x, std::int64_t M,
                                                                std::int64_t N, std::uint16_t runtime_mask, QuantizeParams q,
                                                                std::uint8_t* __restrict__ data_t,
                                                                std::uint8_t* __restrict__ scale_t) {
  const std::uint16_t mask = kDefaultMask ? constants::kRhtDefaultMask : runtime_mask;
  __shared__ float te_factor[256];
  __shared__ uint4 staged_codes[kWarps][128], chunks[kWarps][ChunkStage::kSlots];
  __shared__ std::uint32_t staged_scales[2][kThreads];  // byte j: chunk j of the group
  const Profile p = kernel_knobs<kTe>(q.profile);
  // Built here, not passed as the tile kernels' is: from a parameter, ptxas reloaded the round keys
  // in each group's loop (8 instructions more in it than with curand's additions, 39 fewer here).
  const SrStream sr = sr_stream(q);
  const float g = q.amax_t[0];
  const GlobalScale tensor_scale = global_scale(p.gs, g);  // once per thread, not per block
  if (kTe) {
    fill_te_factor_table(te_factor, tensor_scale, threadIdx.x, kThreads);
    __syncthreads();
  }
  const WarpRows rows{staged_codes[threadIdx.x / 32], int(threadIdx.x % 32)};
  const PairColumns pc = pair_columns(N, rows.lane);
  const std::int64_t c = pc.c, blocks = M / 16, pitch = scale_cols(M);
  const ChunkRange range = chunk_range(blocks);
  // Block b of the group in this thread's row c + h, staged: 8 bytes of half (b % kGroup) / 2, and
  // its scale byte, byte b % kGroup of the thread's word.
  auto staged = [&](int h, std::int64_t b) -> uint2& {
    const unsigned j = unsigned(b) % kGroup;  // b >= 0
    return reinterpret_cast<uint2*>(&rows.half(h, int(j / 2)))[j % 2];
  };
  auto staged_scale = [&](int h, std::int64_t b) -> std::uint8_t& {
    return reinterpret_cast<std::uint8_t*>(&staged_scales[h][threadIdx.x])[unsigned(b) % kGroup];
  };
  // The scale byte and the codes of block (c + h, b) of y from its outputs and their amax A.
  auto quantize_block = [&](int h, std::int64_t b, const Bf16x16& y, float A, auto&& store) {
    auto value = [&](int n) { return y.value(n); };
    const BlockEncoding enc = kTe ? te_block_encoding(te_factor, tensor_scale, A) : encode_block(p, tensor_scale, g, A);
    store(enc.scale_byte, kSr ? encode16_sr<kTe>(p, enc.encoder, value, sr, SrDirection::kColumnwise, (c + h) * blocks + b)
                                       : encode16<kTe>(p, enc.encoder, value));
  };
  for_each_chunk<kGroup>(
      x, N, c, range, ChunkStage(chunks[threadIdx.x / 32], x, N, pc.warp_first, rows.lane, range.first), mask,
      [&](std::int64_t b, const ColumnPair& v, const PairSpans& spans) {
        for_each_half([&](auto half) {  // finite outputs: every NaN rule takes the plain maximum
          constexpr int h = decltype(half)::value;
          const Bf16x16 y = binary32_outputs<h>(v, spans, mask);
          quantize_block(h, b, y, finite_amax(y), [&](std::uint8_t scale, uint2 codes) {
            staged_scale(h, b) = scale;
            staged(h, b) = codes;
          });
        });
      },
      [&](std::int64_t b, const PairOutputs& w) {  // after the loop's last __syncwarp: straight to global memory
        for (int h = 0; pc.own < N && h < 2; ++h) {
          float A = 0.0f;
#pragma unroll
          for (int n = 0; n < 16; ++n) A = amax_step(p.amax, A, w.y[h].value(n));
          quantize_block(h, b, w.y[h], A, [&](std::uint8_t scale, uint2 codes) {
            scale_t[(c + h) * pitch + b] = scale;
            *reinterpret_cast<uint2*>(data_t + (c + h) * (M / 2) + 8 * b) = codes;
          });
        }
      },
      [&](std::int64_t first, std::int64_t last) {  // a wide chunk's slot is written here, and again after
        if (last - first == kGroup && M % 32 == 0) {  // 16-byte aligned; pitch and first: multiples of 4
          rows.store([&](int r, int q, const uint4& bytes) {
            if (pc.warp_first + r < N)
              *(reinterpret_cast<uint4*>(data_t + (pc.warp_first + r) * (M / 2) + 8 * first) + q) = bytes;
          });
          for (int h = 0; pc.own < N && h < 2; ++h)
            *reinterpret_cast<std::uint32_t*>(scale_t + (c + h) * pitch + first) = staged_scales[h][threadIdx.x];
          return;
        }
        for (int h = 0; pc.own < N && h < 2; ++h)
          for (std::int64_t b = first; b < last; ++b) {
            *reinterpret_cast<uint2*>(data_t + (c + h) * (M / 2) + 8 * b) = staged(h, b);
            scale_t[(c + h) * pitch + b] = staged_scale(h, b);
          }
      });
}

// Grid of the kernels above: one thread per column pair, and along y as many CTA rows as fill the
// GPU once (each takes a contiguous range of chunks), at most one per chunk. Checks what the
// kernels' 16-byte copies of rows (ChunkStage) and 32-bit loads of column pairs assume.
dim3 column_pair_grid(const std::uint16_t* x, std::int64_t M, std::int64_t N) {
  if (M % 16 != 0 || N % 16 != 0) throw std::invalid_argument("rht: M and N must be multiples of 16");
  if (reinterpret_cast<std::uintptr_t>(x) % 16 != 0) throw std::invalid_argument("rht: x must be 16-byte aligned");
  const unsigned columns = grid_for(N / 2, kThreads), fill = kCtasPerSm * current_sm_count() / columns;
  return dim3(columns, unsigned(std::max<std::int64_t>(1, std::min<std::int64_t>(M / 16, fill))));
}

// Calls f(std::true_type{}) for the default mask and f(std::false_type{}) for any other.
template <class F>
void dispatch_mask(std::uint16_t mask, F&& f) {
  if (mask == constants::kRhtDefaultMask) return f(std::true_type{});
  return f(std::false_type{});
}

}  // namespace

void rht(const std::uint16_t* x, std::int64_t M, std::int64_t N, std::uint16_t mask, std::uint16_t* out,
         cudaStream_t stream) {
  if (N == 0 || M < 16) return;
  const dim3 grid = column_pair_grid(x, M, N);
  dispatch_mask(mask, [&](auto d) { rht_kernel<d()><<<grid, kThreads, 0, stream>>>(x, M, N, mask, out); });
  NVFP4_CUDA_CHECK_LAUNCH();
}

void rht_amax(const std::uint16_t* x, std::int64_t M, std::int64_t N, std::uint16_t mask, AmaxRule rule, float* out,
              cudaStream_t stream) {
  NVFP4_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), stream));  // +0: the amax of no element
  if (N == 0 || M < 16) return;
  const dim3 grid = column_pair_grid(x, M, N);
  dispatch_mask(mask, [&](auto d) {
    rht_amax_kernel<d()><<<grid, kThreads, 0, stream>>>(x, M, N, mask, rule, reinterpret_cast<unsigned*>(out));
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

void rht_quantize_columnwise(const std::uint16_t* x, std::int64_t M, std::int64_t N, std::uint16_t mask,
                             const QuantizeParams& params, std::uint8_t* data_t, std::uint8_t* scale_t, cudaStream_t stream) {
  // Padding of the compact scale_t [roundup(N, 128), roundup(M/16, 4)]: 0x00, and only padding.
  const std::int64_t pitch = scale_cols(M), blocks = M / 16, rows = scale_rows(N);
  if (pitch > blocks && N > 0)
    NVFP4_CUDA_CHECK(cudaMemset2DAsync(scale_t + blocks, std::size_t(pitch), 0, std::size_t(pitch - blocks), std::size_t(N), stream));
  if (rows > N) NVFP4_CUDA_CHECK(cudaMemsetAsync(scale_t + N * pitch, 0, std::size_t((rows - N) * pitch), stream));
  if (N == 0 || blocks == 0) return;
  const dim3 grid = column_pair_grid(x, M, N);
  dispatch_knobs(params.profile, [&](auto te) {
    dispatch_mask(mask, [&](auto d) {
      if (params.stochastic) rht_quantize_kernel<te(), d(), true><<<grid, kThreads, 0, stream>>>(x, M, N, mask, params, data_t, scale_t);
      else rht_quantize_kernel<te(), d(), false><<<grid, kThreads, 0, stream>>>(x, M, N, mask, params, data_t, scale_t);
    });
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
