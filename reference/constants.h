// Named constants of NUMERICS.md §1.2, as binary32 bit patterns so that no compiler or
// decimal-literal rounding can change them. Shared by the reference and the kernels.
#pragma once

#include "reference/arith.h"

namespace nvfp4::constants {

constexpr std::uint32_t kRecip6Bits = 0x3E2AAAABu;        // r6 = RN(1/6)
constexpr std::uint32_t kRecip2688Bits = 0x39C30C31u;     // r2688 = RN(1/2688)
constexpr std::uint32_t kRecip7225344Bits = 0x34149B93u;  // RN(1/(36*448*448)), GEMM alpha
constexpr std::uint32_t kRecip1e8Bits = 0x322BCC77u;      // RN(1/1e8), vLLM reciprocal guard
constexpr std::uint32_t kFltMaxBits = 0x7F7FFFFFu;
constexpr std::uint32_t kFltMinBits = 0x00800000u;         // smallest normal
constexpr std::uint32_t kBf16MaxBits = 0x7F7F0000u;        // 0x1.FEp127
constexpr std::uint32_t kTwoPowMinus6Bits = 0x3C800000u;   // E4M3 min normal
constexpr std::uint32_t kTwoPowMinus9Bits = 0x3B000000u;   // E4M3 min subnormal
constexpr std::uint32_t kTwoPowMinus10Bits = 0x3A800000u;  // E4M3 underflow threshold (a tie)
constexpr std::uint32_t kTwoPowMinus16Bits = 0x37800000u;  // obsolete lower clamp

constexpr float kE2M1Max = 6.0f;
constexpr float kE4M3Max = 448.0f;
constexpr float kE4M3SatThreshold = 464.0f;  // midpoint of 448 and the next (absent) code 480
constexpr float kFp4TimesFp8Max = 2688.0f;   // 6 * 448, exact
constexpr float kFp4Times256 = 1536.0f;      // 6 * 256, exact: TE 4over6's global E4M3 bound
constexpr float k1e8 = 100000000.0f;         // exact in binary32

constexpr std::uint16_t kRhtDefaultMask = 0xD7E8;  // §3.19: TransformerEngine's fixed sign vector

constexpr int kBlock = 16;           // elements per scale block (1x16, 16x1, 16x16)
constexpr int kScaleRowAlign = 128;  // compact scale rows are padded to a multiple of 128
constexpr int kScaleColAlign = 4;    // compact scale columns are padded to a multiple of 4

NVFP4_HD float recip6() { return float_of(kRecip6Bits); }
NVFP4_HD float recip2688() { return float_of(kRecip2688Bits); }
NVFP4_HD float recip1e8() { return float_of(kRecip1e8Bits); }
NVFP4_HD float flt_max() { return float_of(kFltMaxBits); }
NVFP4_HD float flt_min() { return float_of(kFltMinBits); }
NVFP4_HD float bf16_max() { return float_of(kBf16MaxBits); }
NVFP4_HD float two_pow_minus10() { return float_of(kTwoPowMinus10Bits); }

}  // namespace nvfp4::constants
