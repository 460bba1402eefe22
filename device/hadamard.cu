// The 16-point random Hadamard transform (docs/NUMERICS.md §3.19) as its canonical definition:
// the exact sum of 16 products, one rounding to binary32, then RNE to BF16. No tensor cores, whose
// accumulation rounding is unspecified. One thread transforms one 16-row chunk of one column:
// alone (rht), or fused into TransformerEngine's wgrad columnwise quantization, which reads x twice
// (the amax of rht(x), then the codes) and never stores rht(x).
//
// Exactness. Every product s_k * H[k][n] * 0.25 * x[k] of a finite BF16 x[k] = m * 2^q (|m| < 2^8)
// is an integer multiple of 2^(q-2). When the nonzero inputs' exponents span at most S binades,
// every partial sum of up to 16 products is a multiple of 2^(qmin-2) below 2^(qmax+10) in
// magnitude: at most S + 12 significant bits. So a butterfly is exact in binary32 for S <= 12
// (24 bits; and no partial sum overflows while |x| < 2^126, BF16 exponent field <= 252), which
// holds for almost every chunk of real tensors, and in binary64 for S <= 41 (53 bits), where one
// conversion to binary32 is the single rounding of the exact sum (Rht16Binary32Bound in
// tests/hadamard_test.cpp checks the binary32 bound against binary64, and that 13 can fail).
// A wider span (or an infinity) takes the fixed-point path: the sum in units of 2^-135 in 9 32-bit
// limbs (it needs 265 bits), rounded to binary32 by hand. The binary32 butterfly is inlined; the
// other two paths are not, so that the kernels stay small. An exact zero takes its sign from the
// products (-0.0 only when every product is -0.0): the butterfly's grouping, (a) - (b + c), can
// give -0.0 where the sum of the 16 products is +0.0. A NaN input makes every output NaN, on every
// path.
#include <algorithm>

#include <cuda_bf16.h>

#include "device/amax_reduce.cuh"
#include "device/check.h"
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
constexpr int kCtasPerSm = 3;  // __launch_bounds__: at most 80 registers
constexpr std::uint16_t kBf16Nan = 0x7FFF;  // RNbf16 of the canonical NaN
constexpr int kSpanForBinary32 = 12;        // the exactness bounds above
constexpr int kMaxFieldForBinary32 = 252;
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

// The sign of an exact-zero sum as BF16 bits: -0.0 only when every product is -0.0.
__device__ std::uint16_t zero_sum(const std::uint16_t (&x)[16], int n, std::uint16_t mask) {
  bool all_negative_zero = true;
#pragma unroll
  for (int k = 0; k < 16; ++k)
    all_negative_zero = all_negative_zero && (x[k] & 0x7FFF) == 0 && coefficient_negative(k, n, mask) != ((x[k] >> 15) != 0);
  return all_negative_zero ? 0x8000 : 0x0000;
}

// Output n of the chunk by the fixed-point path (any span, infinities).
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
  if (zero && carry == 0) return zero_sum(x, n, mask) ? -0.0f : 0.0f;
  return round_limbs(limb, carry < 0);
}

// s_k * 0.25 * x for input k: exact in binary32 and binary64 (0.25 * BF16 is a binary32).
template <class T>
__device__ __forceinline__ T signed_quarter(T x, int k, std::uint16_t mask) {
  return ((mask >> k) & 1) ? -x * T(0.25) : x * T(0.25);
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
  __device__ __forceinline__ float value(int k) const {
    return float_of(k % 2 == 0 ? pair[k / 2] << 16 : pair[k / 2] & 0xFFFF0000u);
  }
  __device__ __forceinline__ void unpack(std::uint16_t (&v)[16]) const {
#pragma unroll
    for (int k = 0; k < 16; ++k) v[k] = bits(k);
  }
};

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
  if (nan) {
#pragma unroll
    for (int n = 0; n < 16; ++n) y[n] = kBf16Nan;
  } else if (!inf && hi - lo <= kSpanForBinary64) {
    double d[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) d[k] = signed_quarter(double(bf16_to_float(v[k])), k, mask);
    butterfly16(d);
#pragma unroll
    for (int n = 0; n < 16; ++n) y[n] = d[n] != 0.0 ? float_to_bf16(__double2float_rn(d[n])) : zero_sum(v, n, mask);
  } else {
#pragma unroll 1
    for (int n = 0; n < 16; ++n) y[n] = float_to_bf16(exact_output(v, n, mask));
  }
  Bf16x16 out;
#pragma unroll
  for (int i = 0; i < 8; ++i) out.pair[i] = y[2 * i] | std::uint32_t(y[2 * i + 1]) << 16;
  return out;
}

// The same by the binary32 butterfly where it is exact (the bounds above); false, and y untouched,
// where it is not. The span is taken from the largest |x| and from the smallest nonzero one, read
// off the bits minus one (an exact power of two then counts one binade lower: only more cautious).
// Exact zeros: a chunk of zeros takes zero_sum's signs; in any other chunk an exact-zero sum is
// +0.0, which adding +0.0 gives (the butterfly may have left -0.0). A NaN input passes the span
// test and makes every sum NaN: all 16 outputs are then the canonical BF16 NaN. The sums are
// rounded to BF16 two at a time by the hardware conversion (RNE, as float_to_bf16).
__device__ __forceinline__ bool rht16_binary32(const Bf16x16& x, std::uint16_t mask, Bf16x16& y) {
  float d[16];
  float largest = 0.0f;
  std::uint32_t smallest_twice = 0xFFFFFFFFu;  // min over x of 2 * (|x|'s bits - 1); zeros wrap to 0xFFFFFFFE
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const float xk = x.value(k);
    largest = fmaxf(largest, fabsf(xk));
    smallest_twice = min(smallest_twice, 2u * bits_of(xk) - 2u);  // the doubling drops the sign
    d[k] = signed_quarter(xk, k, mask);
  }
  if (smallest_twice == 0xFFFFFFFEu) {  // every input is a zero
    std::uint16_t v[16];
    x.unpack(v);
#pragma unroll
    for (int i = 0; i < 8; ++i) y.pair[i] = zero_sum(v, 2 * i, mask) | std::uint32_t(zero_sum(v, 2 * i + 1, mask)) << 16;
    return true;
  }
  const int hi = max(int(bits_of(largest) >> 23), 1), lo = max(int(smallest_twice >> 24), 1);
  if (hi > kMaxFieldForBinary32 || hi - lo > kSpanForBinary32) return false;
  butterfly16(d);
  if (is_nan(d[0])) {
#pragma unroll
    for (int i = 0; i < 8; ++i) y.pair[i] = std::uint32_t(kBf16Nan) * 0x10001u;
    return true;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(__fadd_rn(d[2 * i], 0.0f), __fadd_rn(d[2 * i + 1], 0.0f));
    y.pair[i] = *reinterpret_cast<const std::uint32_t*>(&pair);  // low half: output 2i
  }
  return true;
}

// The 16 outputs of a chunk, by the first path that is exact for it.
__device__ __forceinline__ Bf16x16 rht16(const Bf16x16& x, std::uint16_t mask) {
  Bf16x16 y;
  if (!rht16_binary32(x, mask, y)) y = rht16_wide(x, mask);
  return y;
}

// Chunk `chunk` of column c of x [M, N]; adjacent threads take adjacent columns, so that a warp
// reads 64 contiguous bytes of each row. (Column pairs per thread, with 32-bit loads, measured
// slower: twice the registers' work per thread, half the threads.)
__device__ __forceinline__ Bf16x16 load_chunk(const std::uint16_t* __restrict__ x, std::int64_t N, std::int64_t c,
                                              std::int64_t chunk) {
  Bf16x16 v;
#pragma unroll
  for (int i = 0; i < 8; ++i)
    v.pair[i] = __ldg(x + (16 * chunk + 2 * i) * N + c) | std::uint32_t(__ldg(x + (16 * chunk + 2 * i + 1) * N + c)) << 16;
  return v;
}

// Thread c of the x dimension of the grid owns column c; the y dimension steps through the
// column's chunks (no division per task: a 64-bit one per chunk once cost more than the transform).
__device__ __forceinline__ std::int64_t grid_column() { return std::int64_t(blockIdx.x) * kThreads + threadIdx.x; }

// kDefaultMask: the mask is kRhtDefaultMask, compiled as a constant (the signs fold into constants).
template <bool kDefaultMask>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) rht_kernel(const std::uint16_t* __restrict__ x, std::int64_t M,
                                                       std::int64_t N, std::uint16_t runtime_mask, std::uint16_t* __restrict__ out) {
  const std::uint16_t mask = kDefaultMask ? constants::kRhtDefaultMask : runtime_mask;
  const std::int64_t c = grid_column();
  if (c >= N) return;
  for (std::int64_t chunk = blockIdx.y; chunk < M / 16; chunk += gridDim.y) {
    const Bf16x16 y = rht16(load_chunk(x, N, c, chunk), mask);
    uint4* dst = reinterpret_cast<uint4*>(out + c * M + 16 * chunk);
    __stcs(dst, make_uint4(y.pair[0], y.pair[1], y.pair[2], y.pair[3]));
    __stcs(dst + 1, make_uint4(y.pair[4], y.pair[5], y.pair[6], y.pair[7]));
  }
}

// Pass 1 of the fused columnwise quantization: amax(rht(x)) with the profile's NaN rule; the
// transform's outputs are not stored.
template <bool kDefaultMask>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) rht_amax_kernel(const std::uint16_t* __restrict__ x, std::int64_t M,
                                                            std::int64_t N, std::uint16_t runtime_mask, AmaxRule rule, unsigned* out) {
  const std::uint16_t mask = kDefaultMask ? constants::kRhtDefaultMask : runtime_mask;
  float acc = 0.0f;
  const std::int64_t c = grid_column();
  for (std::int64_t chunk = blockIdx.y; c < N && chunk < M / 16; chunk += gridDim.y) {
    const Bf16x16 y = rht16(load_chunk(x, N, c, chunk), mask);
#pragma unroll
    for (int n = 0; n < 16; ++n) acc = amax_step(rule, acc, y.value(n));
  }
  acc = cta_amax<kThreads>(rule, acc);
  if (threadIdx.x == 0) atomicMax(out, bits_of(acc));  // non-negative floats order like their bits
}

// Pass 2: row c of the columnwise copy y = rht(x) [N, M] is column c of x transformed chunk by
// chunk, and chunk b is y's 16-element block (c, b). A thread quantizes kChunksPerThread
// consecutive chunks of its column at a time, writing 32 contiguous bytes of codes.
constexpr int kChunksPerThread = 4;

// kTe: the profile's knobs are te's, compiled as constants (dispatch_knobs).
template <bool kTe, bool kDefaultMask>
__global__ void __launch_bounds__(kThreads, kCtasPerSm) rht_quantize_kernel(const std::uint16_t* __restrict__ x, std::int64_t M,
                                                                std::int64_t N, std::uint16_t runtime_mask, QuantizeParams q,
                                                                std::uint8_t* __restrict__ data_t,
                                                                std::uint8_t* __restrict__ scale_t) {
  const std::uint16_t mask = kDefaultMask ? constants::kRhtDefaultMask : runtime_mask;
  __shared__ float te_factor[256];
  const Profile p = kernel_knobs<kTe>(q.profile);
  const float g = q.amax_t[0];
  const GlobalScale tensor_scale = global_scale(p.gs, g);  // once per thread, not per block
  if (kTe) {
    fill_te_factor_table(te_factor, tensor_scale, threadIdx.x, kThreads);
    __syncthreads();
  }
  const std::int64_t c = grid_column(), chunks = M / 16;
  if (c >= N) return;
  for (std::int64_t first = std::int64_t(blockIdx.y) * kChunksPerThread; first < chunks;
       first += std::int64_t(gridDim.y) * kChunksPerThread) {
    const std::int64_t end = first + kChunksPerThread < chunks ? first + kChunksPerThread : chunks;
#pragma unroll 1
    for (std::int64_t b = first; b < end; ++b) {
      const Bf16x16 y = rht16(load_chunk(x, N, c, b), mask);
      auto value = [&](int n) { return y.value(n); };
      float A = 0.0f;
#pragma unroll
      for (int n = 0; n < 16; ++n) A = amax_step(p.amax, A, value(n));
      const BlockEncoding enc = kTe ? te_block_encoding(te_factor, tensor_scale, A) : encode_block(p, tensor_scale, g, A);
      scale_t[c * scale_cols(M) + b] = enc.scale_byte;
      const uint2 codes = q.stochastic ? encode16_sr<kTe>(p, enc.encoder, value, q, SrDirection::kColumnwise, c * chunks + b)
                                       : encode16<kTe>(p, enc.encoder, value);
      __stcs(reinterpret_cast<uint2*>(data_t + c * (M / 2) + 8 * b), codes);
    }
  }
}

// Grid of the kernels above: one thread per column, and along y `steps` (chunks or groups of
// them) spread over at most `max_y` CTA rows.
dim3 column_grid(std::int64_t N, std::int64_t steps, unsigned max_y) {
  return dim3(grid_for(N, kThreads), unsigned(std::max<std::int64_t>(1, std::min<std::int64_t>(steps, max_y))));
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
  dispatch_mask(mask, [&](auto d) { rht_kernel<d()><<<column_grid(N, M / 16, 65535u), kThreads, 0, stream>>>(x, M, N, mask, out); });
  NVFP4_CUDA_CHECK_LAUNCH();
}

void rht_amax(const std::uint16_t* x, std::int64_t M, std::int64_t N, std::uint16_t mask, AmaxRule rule, float* out,
              cudaStream_t stream) {
  NVFP4_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), stream));  // +0: the amax of no element
  if (N == 0 || M < 16) return;
  // At most 8 CTAs per SM in all, so that few atomics are left.
  const unsigned max_y = std::max(1u, 8u * current_sm_count() / grid_for(N, kThreads));
  dispatch_mask(mask, [&](auto d) {
    rht_amax_kernel<d()><<<column_grid(N, M / 16, max_y), kThreads, 0, stream>>>(x, M, N, mask, rule, reinterpret_cast<unsigned*>(out));
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
  const dim3 grid = column_grid(N, (blocks + kChunksPerThread - 1) / kChunksPerThread, 65535u);
  dispatch_knobs(params.profile, [&](auto te) {
    dispatch_mask(mask, [&](auto d) {
      rht_quantize_kernel<te(), d()><<<grid, kThreads, 0, stream>>>(x, M, N, mask, params, data_t, scale_t);
    });
  });
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
