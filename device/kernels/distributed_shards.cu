// The shard kernels of the distributed 2D weight cast: partial amax (NUMERICS.md §3.4), fused
// scale (§3.15) and partial cast (§3.16), each one launch over a task list.
#include "device/kernels/distributed_tables.cuh"
#include "device/kernels/e2m1_codes.cuh"
#include "device/kernels/element_io.cuh"
#include "device/kernels/unaligned_access.cuh"
#include "reference/distributed_formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {

using namespace tables;

namespace {

// ---- segments of a shard -------------------------------------------------------------------------

// Where a band CTA lies: its tile row and first tile column (fewer than 2^31 CTAs: 32-bit division).
struct BandPos {
  std::int64_t tile_row, tile0;
};

__device__ __forceinline__ BandPos band_pos(const Bands& b, std::int64_t cta) {
  const unsigned c = unsigned(cta), n = unsigned(b.chunks);
  return {b.first + c / n, std::int64_t(c % n) * kBandTiles};
}

// Tile column and first flattened element of segment u of this thread in a band CTA.
struct Segment {
  std::int64_t tile, e0;
};

__device__ __forceinline__ Segment segment(const BandPos& pos, std::int64_t K, int u) {
  const std::int64_t tile = pos.tile0 + threadIdx.x % 16 + 16 * u;
  return {tile, (16 * pos.tile_row + threadIdx.x / 16) * K + 16 * tile};
}

// Segment [e0, e0 + 16) of a shard (xs[i] = W.flat[start + i]) as 8 words of two BF16 values,
// element e0 + 2j in the low half of word j. Elements outside the shard read as +0, which no amax
// and no stored nibble sees.
__device__ __forceinline__ void load_segment(const std::uint16_t* xs, std::int64_t start, std::int64_t length, std::int64_t e0,
                                             std::uint32_t (&w)[8]) {
  const std::int64_t i0 = e0 - start;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(xs);
  if (i0 >= 0 && i0 + 16 <= length && vectors_inside(bytes + 2 * i0, 32, bytes, 2 * length)) {
    load_unaligned<2>(bytes + 2 * i0, w);
    return;
  }
  // The shard's first and last segments: element by element.
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const std::int64_t i = i0 + 2 * j;
    const std::uint32_t lo = i >= 0 && i < length ? xs[i] : 0u, hi = i + 1 >= 0 && i + 1 < length ? xs[i + 1] : 0u;
    w[j] = lo | hi << 16;
  }
}

__device__ __forceinline__ float segment_value(const std::uint32_t (&w)[8], int i) {
  return bf16_to_float(std::uint16_t(w[i / 2] >> (16 * (i % 2))));
}

__device__ __forceinline__ bool overlaps(std::int64_t e0, std::int64_t start, std::int64_t end) {
  return e0 + 16 > start && e0 < end;
}

// ---- §3.4 partial amax -----------------------------------------------------------------------------

// The NaN rule is a template parameter, so that neither rule tests it per element.
template <AmaxRule kRule>
__global__ void __launch_bounds__(kThreads) amax_partial_kernel(Table<PartialAmaxTask> table) {
  const auto [t, p, cta] = locate(table);
  const std::int64_t tc = t.K / 16, band_ctas = p.bands.ctas();
  if (cta < p.head || cta >= p.head + band_ctas) {
    // Tile rows above or below the shard own nothing: +0.
    const bool above = cta < p.head;
    const std::int64_t first =
        above ? cta * kZeroTiles : (p.bands.first + p.bands.rows) * tc + (cta - p.head - band_ctas) * kZeroTiles;
    const std::int64_t end = above ? p.bands.first * tc : t.M / 16 * tc;
    for (std::int64_t i = first + threadIdx.x; i < first + kZeroTiles && i < end; i += kThreads) t.tile_amax[i] = 0.0f;
    return;
  }
  const BandPos pos = band_pos(p.bands, cta - p.head);
  const std::int64_t end = t.start + t.length;
  std::uint32_t w[kSegments][8];
  bool owns[kSegments];
#pragma unroll
  for (int u = 0; u < kSegments; ++u) {  // both loads in flight before any use
    const Segment s = segment(pos, t.K, u);
    owns[u] = s.tile < tc && overlaps(s.e0, t.start, end);
    if (owns[u]) load_segment(t.xs, t.start, t.length, s.e0, w[u]);
  }
  float m[kSegments];
#pragma unroll
  for (int u = 0; u < kSegments; ++u) {
    m[u] = 0.0f;
    if (owns[u])
#pragma unroll
      for (int i = 0; i < 16; ++i) m[u] = amax_step(kRule, m[u], segment_value(w[u], i));
  }
  // A tile's 16 rows: lanes l and l + 16 of each warp (rows 2 warp, 2 warp + 1), then the 8 warps.
  __shared__ float warp_tiles[kThreads / 32][kBandTiles];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int u = 0; u < kSegments; ++u) {
    m[u] = amax_combine(kRule, m[u], __shfl_xor_sync(0xFFFFFFFFu, m[u], 16));
    if (lane < 16) warp_tiles[warp][lane + 16 * u] = m[u];
  }
  __syncthreads();
  if (warp != 0) return;
  float tile = warp_tiles[0][lane];
  for (int i = 1; i < kThreads / 32; ++i) tile = amax_combine(kRule, tile, warp_tiles[i][lane]);
  if (pos.tile0 + lane < tc) t.tile_amax[pos.tile_row * tc + pos.tile0 + lane] = tile;
  for (int o = 16; o > 0; o >>= 1) tile = amax_combine(kRule, tile, __shfl_xor_sync(0xFFFFFFFFu, tile, o));
  // Non-negative floats and the canonical NaN order like their bits (amax_step yields no other NaN).
  if (lane == 0) atomicMax(reinterpret_cast<unsigned*>(t.amax), bits_of(tile));
}

// ---- §3.15 fused scale -------------------------------------------------------------------------------

// A thread computes 4 tile columns of one tile row (P and their E4M3 bytes) and writes that word
// to the band's 16 scale rows; padding rows and columns get 0x00.
__global__ void __launch_bounds__(kThreads) fused_scale_kernel(Table<FusedScaleTask> table, GlobalScaleRule rule) {
  const auto [t, p, cta] = locate(table);
  const float S = distributed_encode_scale(rule, __ldg(t.amax));
  if (cta == 0 && threadIdx.x == 0) *t.encode_scale = S;
  const std::int64_t band = unsigned(cta) / unsigned(p.chunks);
  const std::int64_t word = std::int64_t(unsigned(cta) % unsigned(p.chunks)) * kThreads + threadIdx.x;
  if (band >= p.bands || word >= p.words) return;
  const std::int64_t tr = t.M / 16, tc = t.K / 16;
  const float mult = fused_scale_multiplier(S);
  std::uint32_t bytes = 0;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const std::int64_t j = 4 * word + c;
    if (band < tr && j < tc) {
      const float P = fused_tile_scale(__ldg(t.tile_amax + band * tc + j), mult);
      t.tile_scale[band * tc + j] = P;
      bytes |= std::uint32_t(e4m3sat(P)) << (8 * c);
    }
  }
  auto* rows = reinterpret_cast<std::uint32_t*>(t.scale) + 16 * band * p.words + word;
#pragma unroll
  for (int r = 0; r < 16; ++r) rows[r * p.words] = bytes;
}

// ---- §3.16 partial cast ---------------------------------------------------------------------------

// The nibbles of the owned elements of a segment that straddles a shard end, byte by byte; a byte
// shared with the neighbouring shard keeps its other nibble.
__device__ void store_owned_nibbles(std::uint8_t* dst, std::int64_t byte0, const std::uint32_t (&codes)[2], std::int64_t e0,
                                    std::int64_t start, std::int64_t end) {
  for (int b = 0; b < 8; ++b) {
    const std::int64_t e = e0 + 2 * b;
    const bool lo = e >= start && e < end, hi = e + 1 >= start && e + 1 < end;
    if (!lo && !hi) continue;
    std::uint8_t& out = dst[byte0 + b];
    std::uint8_t v = lo && hi ? 0 : out;
    const std::uint32_t pair = codes[b / 4] >> (8 * (b % 4));
    if (lo) v = with_nibble(v, e, nibble_at(std::uint8_t(pair), 0));
    if (hi) v = with_nibble(v, e + 1, nibble_at(std::uint8_t(pair), 1));
    out = v;
  }
}

// The 16 codes of a segment, element i in nibble i % 8 of codes[i / 8], looked up in the E2M1
// table: the kernel was bound by the integer pipe, and the lookup needs fewer integer
// instructions than e2m1_hw (55 % -> 72 % of copy bandwidth on H100, docs/performance.md); the
// exhaustive test checks the table's codes on all 2^32 inputs.
__device__ __forceinline__ void encode_segment(const std::uint32_t (&w)[8], float enc, std::uint32_t (&codes)[2]) {
  codes[0] = codes[1] = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) codes[i / 8] |= std::uint32_t(e2m1_hw_by_table(mul_rn(segment_value(w, i), enc))) << (4 * (i % 8));
}

__global__ void __launch_bounds__(kThreads) partial_cast_kernel(Table<PartialCastTask> table) {
  const auto [t, p, cta] = locate(table);
  const BandPos pos = band_pos(p.bands, cta);
  const std::int64_t tc = t.K / 16, end = t.start + t.length;
  // The first warp fetches the CTA's 32 tile scales alongside the data loads.
  const bool scale_thread = threadIdx.x < kBandTiles && pos.tile0 + threadIdx.x < tc;
  const float tile_scale = scale_thread ? __ldg(t.tile_scale + pos.tile_row * tc + pos.tile0 + threadIdx.x) : 0.0f;
  std::uint32_t w[kSegments][8];
  std::int64_t e0[kSegments];
  bool owns[kSegments];
#pragma unroll
  for (int u = 0; u < kSegments; ++u) {
    const Segment s = segment(pos, t.K, u);
    e0[u] = s.e0;
    owns[u] = s.tile < tc && overlaps(s.e0, t.start, end);
    if (owns[u]) load_segment(t.xs, t.start, t.length, s.e0, w[u]);
  }
  // One encode factor per tile, shared by the 16 threads (rows) of its column.
  __shared__ float enc[kBandTiles];
  if (scale_thread) enc[threadIdx.x] = partial_cast_encode_factor(tile_scale, partial_cast_decode_scale(__ldg(t.encode_scale)));
  __syncthreads();
#pragma unroll
  for (int u = 0; u < kSegments; ++u) {
    if (!owns[u]) continue;
    std::uint32_t codes[2];
    encode_segment(w[u], enc[threadIdx.x % 16 + 16 * u], codes);
    const std::int64_t byte0 = t.whole_tensor ? e0[u] >> 1 : shard_local_byte(e0[u], t.start);
    if (e0[u] >= t.start && e0[u] + 16 <= end)
      store_unaligned<2>(t.dst + byte0, codes);
    else
      store_owned_nibbles(t.dst, byte0, codes, e0[u], t.start, end);
  }
}

}  // namespace

void tables::prepare_partial_cast() { prepare_e2m1_codes(); }

void launch_amax_partial(const TaskList<PartialAmaxTask>& list, AmaxRule rule, cudaStream_t stream) {
  launch_list(list, rule == AmaxRule::IGNORE ? amax_partial_kernel<AmaxRule::IGNORE> : amax_partial_kernel<AmaxRule::PROPAGATE>,
              stream);
}

void launch_fused_scale_2d(const TaskList<FusedScaleTask>& list, GlobalScaleRule rule, cudaStream_t stream) {
  if (rule != GlobalScaleRule::TE && rule != GlobalScaleRule::TE_HELPER)
    invalid("fused_scale_2d", "the global scale rule must be TE or TE_HELPER (NUMERICS.md §3.15)");
  launch_list(list, fused_scale_kernel, stream, rule);
}

void launch_partial_cast_2d(const TaskList<PartialCastTask>& list, cudaStream_t stream) {
  launch_list(list, partial_cast_kernel, stream);
}

}  // namespace nvfp4::device
