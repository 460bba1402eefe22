// The 16-point random Hadamard transform (docs/NUMERICS.md §3.19) of x, stored: one thread
// transforms 16-row chunks of two adjacent columns (hadamard16.cuh, hadamard_chunks.cuh).
#include "device/kernels/hadamard_chunks.cuh"
#include "device/kernels/launch.h"
#include "device/runtime/check.h"

namespace nvfp4::device {
namespace {

using namespace hadamard;

// kDefaultMask: the mask is kRhtDefaultMask, compiled as a constant (the signs fold into the
// butterfly's first additions). The outputs leave through WarpRows, one chunk per step.
template <bool kDefaultMask>
__global__ void __launch_bounds__(kThreads, kCtasPerSm)
    rht_kernel(const std::uint16_t* __restrict__ x, std::int64_t M, std::int64_t N, std::uint16_t runtime_mask, RhtSum sum,
               std::uint16_t* __restrict__ out) {
  const std::uint16_t mask = kDefaultMask ? constants::kRhtDefaultMask : runtime_mask;
  __shared__ uint4 staged[kWarps][128], chunks[kWarps][ChunkStage::kSlots];
  const WarpRows rows{staged[threadIdx.x / 32], int(threadIdx.x % 32)};
  const PairColumns pc = pair_columns(N, rows.lane);
  const ChunkRange range = chunk_range(M / 16);
  for_each_chunk<1>(
      x, N, pc.c, range, ChunkStage(chunks[threadIdx.x / 32], x, N, pc.warp_first, rows.lane, range.first), mask, sum,
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

}  // namespace

void launch_rht(const std::uint16_t* x, std::int64_t M, std::int64_t N, std::uint16_t mask, RhtSum sum, std::uint16_t* out,
                cudaStream_t stream) {
  if (N == 0 || M < 16) return;
  const dim3 grid = column_pair_grid(x, M, N);
  dispatch_mask(mask, [&](auto d) { rht_kernel<d()><<<grid, kThreads, 0, stream>>>(x, M, N, mask, sum, out); });
  NVFP4_CUDA_CHECK_LAUNCH();
}

}  // namespace nvfp4::device
