// Steps 1 and 7 of the master-weight cast (NUMERICS.md §3.17): RNbf16 of the FP32 master values,
// and the nibble-aware merge of the ranks' all-gathered chunks.
#include "device/kernels/distributed_tables.cuh"
#include "device/kernels/element_io.cuh"
#include "device/kernels/unaligned_access.cuh"
#include "reference/distributed_formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {

using namespace tables;

namespace {

// ---- §3.17 step 1: RNbf16 ------------------------------------------------------------------------------

constexpr int kRoundElems = 8;  // per thread: two 16-byte loads, one 16-byte store

__global__ void __launch_bounds__(kThreads)
    round_to_bf16_kernel(const float* __restrict__ in, std::int64_t n, std::uint16_t* __restrict__ out, bool vectors) {
  const std::int64_t i = (std::int64_t(blockIdx.x) * kThreads + threadIdx.x) * kRoundElems;
  if (vectors && i + kRoundElems <= n) {
    const float4 a = __ldcs(reinterpret_cast<const float4*>(in + i)), b = __ldcs(reinterpret_cast<const float4*>(in + i + 4));
    auto pair = [](float lo, float hi) { return std::uint32_t(float_to_bf16(lo)) | std::uint32_t(float_to_bf16(hi)) << 16; };
    __stcs(reinterpret_cast<uint4*>(out + i), make_uint4(pair(a.x, a.y), pair(a.z, a.w), pair(b.x, b.y), pair(b.z, b.w)));
    return;
  }
  for (std::int64_t e = i; e < i + kRoundElems && e < n; ++e) out[e] = float_to_bf16(in[e]);
}

// ---- §3.17 step 7: nibble-aware gather -------------------------------------------------------------

struct GatherArgs {
  const std::uint8_t* chunks;
  std::int64_t pitch;
  std::uint8_t* out;
  int ranks;
  std::int64_t bound[kMaxRanks + 1];  // rank ρ owns elements [bound[ρ], bound[ρ + 1]); bound[0] = 0
};

// A thread writes 16 output bytes (32 elements): one 16-byte copy when one rank owns all of them,
// else nibble by nibble from their owners.
__global__ void __launch_bounds__(kThreads) gather_nibbles_kernel(GatherArgs a) {
  __shared__ std::int64_t bound[kMaxRanks + 1];
  for (int i = threadIdx.x; i <= a.ranks; i += kThreads) bound[i] = a.bound[i];
  __syncthreads();
  const std::int64_t total = bound[a.ranks], bytes = (total + 1) / 2;
  const std::int64_t b0 = (std::int64_t(blockIdx.x) * kThreads + threadIdx.x) * 16;
  if (b0 >= bytes) return;
  // The owner of element e < total: the last rank starting at or before e (empty ranks precede it).
  auto owner = [&](std::int64_t e) {
    int lo = 0, hi = a.ranks - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (bound[mid] <= e)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  };
  const int rho = owner(2 * b0);
  const std::uint8_t* src = a.chunks + rho * a.pitch + (b0 - (bound[rho] >> 1));
  if (2 * b0 + 32 <= bound[rho + 1] && vectors_inside(src, 16, a.chunks, a.ranks * a.pitch)) {
    std::uint32_t w[4];
    load_unaligned<1>(src, w);
    store_unaligned<4>(a.out + b0, w);
    return;
  }
  for (std::int64_t B = b0; B < b0 + 16 && B < bytes; ++B) {
    std::uint8_t v = 0;  // element `total` (odd total) has no owner: 0, as in the reference
    for (std::int64_t e = 2 * B; e < 2 * B + 2 && e < total; ++e) {
      const int r = owner(e);
      v = with_nibble(v, e, nibble_at(a.chunks[r * a.pitch + shard_local_byte(e, bound[r])], int(e & 1)));
    }
    a.out[B] = v;
  }
}

}  // namespace

void launch_round_to_bf16(const float* in, std::int64_t n, std::uint16_t* out, cudaStream_t stream) {
  if (n < 0) invalid("round_to_bf16", "negative length");
  if (n == 0) return;
  const bool vectors = aligned(in, 16) && aligned(out, 16);
  round_to_bf16_kernel<<<grid_for(ceil_div(n, kRoundElems), kThreads), kThreads, 0, stream>>>(in, n, out, vectors);
  NVFP4_CUDA_CHECK_LAUNCH();
}

void launch_gather_nibbles(const std::uint8_t* chunks, std::int64_t chunk_pitch, const std::vector<RankRange>& ranks,
                           std::uint8_t* out, cudaStream_t stream) {
  constexpr const char* op = "gather_nibbles";
  if (ranks.size() > std::size_t(kMaxRanks)) invalid(op, "more than kMaxRanks ranks");
  GatherArgs a{chunks, chunk_pitch, out, int(ranks.size()), {}};
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].begin != (r ? ranks[r - 1].end : 0) || ranks[r].end < ranks[r].begin)
      invalid(op, "the ranks must cut [0, total) into consecutive ranges");
    if (ranks[r].buffer_bytes() > chunk_pitch) invalid(op, "a rank's buffer is longer than the chunk pitch");
    a.bound[r] = ranks[r].begin;
    a.bound[r + 1] = ranks[r].end;
  }
  const std::int64_t bytes = ranks.empty() ? 0 : (ranks.back().end + 1) / 2;
  if (bytes == 0) return;
  gather_nibbles_kernel<<<grid_for(ceil_div(bytes, 16), kThreads), kThreads, 0, stream>>>(a);
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
