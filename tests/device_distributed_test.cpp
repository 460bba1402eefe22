// The multi-tensor kernels of the distributed 2D weight cast (device/kernels/distributed.h) against the
// CPU reference, bit for bit (a NaN float equals any NaN). Every launch covers a list of tasks of
// mixed shapes and shards; inputs are fresh random data with special values (the seed is printed
// on failure), outputs are poisoned with 0xA5 or prefilled with random bytes, and pointers sit at
// assorted alignments. Without a usable CUDA device every test skips and says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "device/kernels/distributed.h"
#include "device/kernels/launch.h"
#include "device/runtime/device_buffer.h"
#include "reference/fused_scale.h"
#include "reference/half_float.h"
#include "reference/layout.h"
#include "reference/nibble_gather.h"
#include "reference/partial_amax.h"
#include "reference/partial_cast.h"
#include "reference/partition.h"
#include "reference/transpose.h"
#include "tests/support/gpu.h"

namespace nvfp4 {
namespace {

using device::DeviceBuffer;

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { NVFP4_CUDA_CHECK(cudaStreamCreate(&s)); }
  ~Stream() { cudaStreamDestroy(s); }
  operator cudaStream_t() const { return s; }
};

std::uint32_t fresh_seed() { return std::random_device{}(); }

// Weight shapes: 16 .. 304, widths that are not multiples of 64 (16, 48, 80, 272, 1040).
struct Dims {
  std::int64_t M, K;
};
constexpr Dims kShapes[] = {{16, 16}, {32, 48}, {48, 80}, {16, 1040}, {304, 304}, {144, 272}, {1040, 16}, {64, 512}};
// More tiles than one zero-filling CTA of amax_partial writes, above and below a shard.
constexpr Dims kManyTiles = {1024, 1040};

// Device memory for many small buffers at chosen byte offsets (so pointers come at assorted
// alignments), filled from host bytes.
class Arena {
 public:
  // Reserves `bytes` at `misalign` bytes past a 16-byte boundary; returns the offset.
  std::size_t reserve(std::size_t bytes, std::size_t misalign) {
    const std::size_t at = (host_.size() + 15) / 16 * 16 + 16 + misalign;
    host_.resize(at + bytes + 16, 0xA5);
    return at;
  }
  std::uint8_t* host(std::size_t at) { return host_.data() + at; }
  void upload(cudaStream_t s) {
    buffer_ = DeviceBuffer(host_.size());
    buffer_.upload(host_.data(), s);
  }
  template <class T = std::uint8_t>
  T* device(std::size_t at) const {
    return reinterpret_cast<T*>(buffer_.get<std::uint8_t>() + at);
  }
  std::vector<std::uint8_t> download(cudaStream_t s) const { return buffer_.download(s); }

 private:
  std::vector<std::uint8_t> host_;
  DeviceBuffer buffer_;
};

// Bitwise equality, except that any NaN equals any NaN (NUMERICS.md contract).
bool same_float(float a, float b) { return bits_of(a) == bits_of(b) || (is_nan(a) && is_nan(b)); }

std::string float_diff(const float* want, const float* got, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!same_float(want[i], got[i]))
      return fmt::format("float {} of {}: want 0x{:08X}, got 0x{:08X}", i, n, bits_of(want[i]), bits_of(got[i]));
  return "";
}

std::string byte_diff(const std::uint8_t* want, const std::uint8_t* got, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (want[i] != got[i]) return fmt::format("byte {} of {}: want 0x{:02X}, got 0x{:02X}", i, n, want[i], got[i]);
  return "";
}

float float_at(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  float f;
  std::memcpy(&f, bytes.data() + at, sizeof f);
  return f;
}

// BF16 bit patterns: normals of assorted per-tile magnitudes, and with probability `special`
// one of the values every kernel must get right (zeros, infinities, NaNs, subnormals, maxima).
std::vector<std::uint16_t> random_bf16(std::size_t n, double special, std::mt19937& rng) {
  static constexpr std::uint16_t kSpecials[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x0001,
                                                0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x40C0, 0x3E80, 0xC0A0};
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 30);
  std::uniform_int_distribution<std::size_t> which(0, std::size(kSpecials) - 1);
  std::bernoulli_distribution is_special(special);
  std::vector<std::uint16_t> v(n);
  int e = exponent(rng);
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 256 == 0) e = exponent(rng);
    v[i] = is_special(rng) ? kSpecials[which(rng)] : float_to_bf16(std::ldexp(normal(rng), e));
  }
  return v;
}

FloatVector bf16_values(const std::uint16_t* bits, std::int64_t n) {
  FloatVector x = xt::empty<float>({std::size_t(n)});
  for (std::int64_t i = 0; i < n; ++i) x(i) = bf16_to_float(bits[i]);
  return x;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = std::uint8_t(byte(rng));
  return v;
}

// Shards of an M x K weight that reach every edge of the kernels: the whole weight, empty shards
// at even and odd starts, single elements, starts and ends that cut a byte, a 16-element
// segment, a tile and a row, shards across tile rows, and a random partition into 1-6 ranks.
std::vector<Shard> edge_shards(std::int64_t M, std::int64_t K, std::mt19937& rng) {
  const std::int64_t n = M * K;
  std::vector<Shard> shards;
  auto add = [&](std::int64_t start, std::int64_t length) {
    start = std::clamp<std::int64_t>(start, 0, n);
    shards.push_back({start, std::clamp<std::int64_t>(length, 0, n - start)});
  };
  add(0, n);
  add(0, 0);
  add(1, 0);
  add(n, 0);
  add(0, 1);
  add(1, 1);
  add(n - 1, 1);
  add(17, 1);
  add(3, 30);                    // odd start and end inside one row
  add(K / 2 + 1, K);             // odd start mid-row, across a row
  add(7, 16 * K + 9);            // across a tile row, odd end
  add(16 * K - 3, 6);            // across a tile-row boundary
  add(8 * K + 24, 40 * K - 13);  // mid-tile start, several tile rows
  const int ranks = std::uniform_int_distribution<int>(1, 6)(rng);
  std::vector<std::int64_t> cuts;
  for (int r = 1; r < ranks; ++r) cuts.push_back(std::uniform_int_distribution<std::int64_t>(0, n)(rng));
  std::sort(cuts.begin(), cuts.end());
  for (const RankRange& r : rank_ranges(n, ranks, cuts)) add(r.begin, r.end - r.begin);
  return shards;
}

std::string describe(Dims d, const Shard& s) { return fmt::format("{}x{} shard [{}, {})", d.M, d.K, s.start, s.end()); }

// ---- §3.4 partial amax --------------------------------------------------------------------------

TEST(DeviceDistributed, PartialAmaxEqualsReferenceForMixedShardLists) {
  REQUIRE_GPU();
  Stream stream;
  for (const AmaxRule rule : {AmaxRule::IGNORE, AmaxRule::PROPAGATE})
    for (const double special : {0.0, 0.003, 0.3}) {
      const std::uint32_t seed = fresh_seed();
      std::mt19937 rng(seed);
      struct Case {
        Dims d;
        Shard shard;
        std::vector<std::uint16_t> xs;
        std::size_t xs_at, tiles_at, amax_at;
      };
      std::vector<Case> cases;
      Arena arena;
      std::uniform_int_distribution<std::size_t> misalign(0, 7);
      std::vector<Dims> shapes(std::begin(kShapes), std::end(kShapes));
      shapes.push_back(kManyTiles);
      for (const Dims d : shapes) {
        const std::vector<std::uint16_t> w = random_bf16(std::size_t(d.M * d.K), special, rng);
        for (const Shard& s : edge_shards(d.M, d.K, rng)) {
          Case c{d, s, std::vector<std::uint16_t>(w.begin() + s.start, w.begin() + s.end()), 0, 0, 0};
          c.xs_at = arena.reserve(2 * c.xs.size(), 2 * misalign(rng));
          std::memcpy(arena.host(c.xs_at), c.xs.data(), 2 * c.xs.size());
          c.tiles_at = arena.reserve(4 * std::size_t(d.M * d.K / 256), 0);  // poisoned: 0xA5
          c.amax_at = arena.reserve(4, 0);
          std::memset(arena.host(c.amax_at), 0, 4);  // +0, as the launch requires
          cases.push_back(std::move(c));
        }
      }
      arena.upload(stream);
      std::vector<device::PartialAmaxTask> tasks;
      for (const Case& c : cases)
        tasks.push_back({arena.device<std::uint16_t>(c.xs_at), c.d.M, c.d.K, c.shard.start, c.shard.length,
                         arena.device<float>(c.tiles_at), arena.device<float>(c.amax_at)});
      const device::TaskList<device::PartialAmaxTask> list(tasks);
      device::launch_amax_partial(list, rule, stream);
      const std::vector<std::uint8_t> got = arena.download(stream);
      for (const Case& c : cases) {
        const PartialAmax want = amax_partial(bf16_values(c.xs.data(), c.shard.length), c.d.M, c.d.K, c.shard, rule);
        std::vector<float> tiles(want.tiles.size());
        std::memcpy(tiles.data(), got.data() + c.tiles_at, 4 * tiles.size());
        const std::string what = fmt::format("amax_partial {} rule={} special={} seed=0x{:x}", describe(c.d, c.shard),
                                             rule == AmaxRule::IGNORE ? "IGNORE" : "PROPAGATE", special, seed);
        EXPECT_EQ(float_diff(want.tiles.data(), tiles.data(), tiles.size()), "") << what << " (tile amax)";
        EXPECT_TRUE(same_float(want.amax, float_at(got, c.amax_at)))
            << what << ": amax want 0x" << std::hex << bits_of(want.amax) << ", got 0x" << bits_of(float_at(got, c.amax_at));
      }
    }
}

// ---- §3.15 fused scale -----------------------------------------------------------------------------

// Tile amaxes: positive magnitudes over the whole binary32 range and special values.
std::vector<float> random_tile_amax(std::size_t n, std::mt19937& rng) {
  static constexpr std::uint32_t kSpecials[] = {0x00000000, 0x7F800000, 0x7FFFFFFF, 0x00000001, 0x007FFFFF,
                                                0x7F7FFFFF, 0x40C00000, 0x43E00000, 0x3A800000, 0x46A80000};
  std::uniform_int_distribution<std::uint32_t> bits(0, 0x7F7FFFFF);
  std::uniform_int_distribution<std::size_t> which(0, std::size(kSpecials) - 1);
  std::bernoulli_distribution is_special(0.2);
  std::vector<float> v(n);
  for (float& x : v) x = float_of(is_special(rng) ? kSpecials[which(rng)] : bits(rng));
  return v;
}

TEST(DeviceDistributed, FusedScaleEqualsReferenceForSpecialGlobalAmaxes) {
  REQUIRE_GPU();
  Stream stream;
  // 0, +inf, NaN, subnormals, FLT_MAX, normal values (6 = a tile amax of 6 gives the unit scale).
  const std::uint32_t globals[] = {0x00000000, 0x7F800000, 0x7FFFFFFF, 0x00000001, 0x006CE3EE,
                                   0x7F7FFFFF, 0x40C00000, 0x46A80000, 0x3F9E0419};
  for (const GlobalScaleRule rule : {GlobalScaleRule::TE, GlobalScaleRule::TE_HELPER}) {
    const std::uint32_t seed = fresh_seed();
    std::mt19937 rng(seed);
    struct Case {
      Dims d;
      std::uint32_t g;
      std::vector<float> tiles;
      std::size_t tiles_at, g_at, p_at, scale_at, s_at;
    };
    std::vector<Case> cases;
    Arena arena;
    for (const Dims d : kShapes)
      for (const std::uint32_t g : globals) {
        const std::size_t n = std::size_t(d.M * d.K / 256);
        Case c{d, g, random_tile_amax(n, rng), 0, 0, 0, 0, 0};
        c.tiles_at = arena.reserve(4 * n, 0);
        std::memcpy(arena.host(c.tiles_at), c.tiles.data(), 4 * n);
        c.g_at = arena.reserve(4, 0);
        std::memcpy(arena.host(c.g_at), &g, 4);
        c.p_at = arena.reserve(4 * n, 0);
        c.scale_at = arena.reserve(std::size_t(scale_rows(d.M) * scale_cols(d.K)), 4 * (n % 4));
        c.s_at = arena.reserve(4, 0);
        cases.push_back(std::move(c));
      }
    arena.upload(stream);
    std::vector<device::FusedScaleTask> tasks;
    for (const Case& c : cases)
      tasks.push_back({arena.device<float>(c.tiles_at), arena.device<float>(c.g_at), c.d.M, c.d.K, arena.device<float>(c.p_at),
                       arena.device(c.scale_at), arena.device<float>(c.s_at)});
    const device::TaskList<device::FusedScaleTask> list(tasks);
    device::launch_fused_scale_2d(list, rule, stream);
    const std::vector<std::uint8_t> got = arena.download(stream);
    for (const Case& c : cases) {
      FloatMatrix t = xt::empty<float>({std::size_t(c.d.M / 16), std::size_t(c.d.K / 16)});
      std::copy(c.tiles.begin(), c.tiles.end(), t.begin());
      const FusedScale want = fused_scale_2d(t, float_of(c.g), rule);
      std::vector<float> p(c.tiles.size());
      std::memcpy(p.data(), got.data() + c.p_at, 4 * p.size());
      const std::string what = fmt::format("fused_scale_2d {}x{} g=0x{:08X} rule={} seed=0x{:x}", c.d.M, c.d.K, c.g,
                                           rule == GlobalScaleRule::TE ? "TE" : "TE_HELPER", seed);
      EXPECT_EQ(float_diff(want.tile_scale.data(), p.data(), p.size()), "") << what << " (P)";
      EXPECT_EQ(byte_diff(want.scale.data(), got.data() + c.scale_at, want.scale.size()), "") << what << " (scale)";
      EXPECT_TRUE(same_float(want.S, float_at(got, c.s_at)))
          << what << ": S want 0x" << std::hex << bits_of(want.S) << ", got 0x" << bits_of(float_at(got, c.s_at));
    }
  }
}

// ---- §3.16 partial cast ---------------------------------------------------------------------------

// One weight's cast inputs: BF16 values and the tile scales P and encode scale S of its fused scale.
struct CastWeight {
  Dims d;
  std::vector<std::uint16_t> w;
  FloatMatrix P;
  float S;
  std::size_t p_at, s_at;
};

// Casts every edge shard of every weight, into shard-local buffers (poisoned) and into whole
// tensors prefilled with random bytes, in one launch; checks each buffer against the reference.
void expect_cast_equals_reference(std::vector<CastWeight>& weights, std::mt19937& rng, const std::string& what) {
  Stream stream;
  struct Case {
    const CastWeight* weight;
    Shard shard;
    bool whole;
    std::vector<std::uint8_t> prefill;
    std::size_t xs_at, dst_at;
  };
  std::vector<Case> cases;
  Arena arena;
  std::uniform_int_distribution<std::size_t> misalign(0, 15);
  for (CastWeight& cw : weights) {
    cw.p_at = arena.reserve(4 * cw.P.size(), 0);
    std::memcpy(arena.host(cw.p_at), cw.P.data(), 4 * cw.P.size());
    cw.s_at = arena.reserve(4, 0);
    std::memcpy(arena.host(cw.s_at), &cw.S, 4);
    for (const Shard& s : edge_shards(cw.d.M, cw.d.K, rng))
      for (const bool whole : {false, true}) {
        Case c{&cw, s, whole, {}, 0, 0};
        c.xs_at = arena.reserve(2 * std::size_t(s.length), 2 * (misalign(rng) % 8));
        std::memcpy(arena.host(c.xs_at), cw.w.data() + s.start, 2 * std::size_t(s.length));
        // Whole tensors start with random bytes, so that a lost neighbour nibble shows.
        c.prefill = whole ? random_bytes(std::size_t(cw.d.M * cw.d.K / 2), rng)
                          : std::vector<std::uint8_t>(std::size_t(s.local_bytes()), 0xA5);
        c.dst_at = arena.reserve(c.prefill.size(), misalign(rng));
        std::memcpy(arena.host(c.dst_at), c.prefill.data(), c.prefill.size());
        cases.push_back(std::move(c));
      }
  }
  arena.upload(stream);
  std::vector<device::PartialCastTask> tasks;
  for (const Case& c : cases)
    tasks.push_back({arena.device<std::uint16_t>(c.xs_at), c.weight->d.M, c.weight->d.K, c.shard.start, c.shard.length,
                     arena.device<float>(c.weight->p_at), arena.device<float>(c.weight->s_at), arena.device(c.dst_at), c.whole});
  const device::TaskList<device::PartialCastTask> list(tasks);
  device::launch_partial_cast_2d(list, stream);
  const std::vector<std::uint8_t> got = arena.download(stream);
  for (Case& c : cases) {
    const CastWeight& cw = *c.weight;
    partial_cast_2d(bf16_values(cw.w.data() + c.shard.start, c.shard.length), cw.d.M, cw.d.K, c.shard, cw.P, cw.S,
                    c.whole ? CastTarget::kWholeTensor : CastTarget::kShardLocal, ByteSpan{c.prefill.data(), c.prefill.size()});
    EXPECT_EQ(byte_diff(c.prefill.data(), got.data() + c.dst_at, c.prefill.size()), "")
        << what << " " << describe(cw.d, c.shard) << (c.whole ? " into the whole tensor" : " into its local buffer") << " S=0x"
        << std::hex << bits_of(cw.S);
  }
}

TEST(DeviceDistributed, PartialCastEqualsReferenceForEveryShardEdge) {
  REQUIRE_GPU();
  // The global amaxes of the flow (the weight's own, then 0, +inf, NaN, a subnormal, FLT_MAX).
  const std::uint32_t overrides[] = {0xFFFFFFFF, 0x00000000, 0x7F800000, 0x7FFFFFFF, 0x00000001, 0x7F7FFFFF};
  for (const GlobalScaleRule rule : {GlobalScaleRule::TE, GlobalScaleRule::TE_HELPER})
    for (const std::uint32_t g_bits : overrides) {
      const std::uint32_t seed = fresh_seed();
      std::mt19937 rng(seed);
      std::vector<CastWeight> weights;
      for (const Dims d : kShapes) {
        CastWeight cw{d, random_bf16(std::size_t(d.M * d.K), 0.01, rng), {}, 0.0f, 0, 0};
        const PartialAmax t = amax_partial(bf16_values(cw.w.data(), d.M * d.K), d.M, d.K, Shard{0, d.M * d.K}, AmaxRule::IGNORE);
        const FusedScale f = fused_scale_2d(t.tiles, g_bits == 0xFFFFFFFF ? t.amax : float_of(g_bits), rule);
        cw.P = f.tile_scale;
        cw.S = f.S;
        weights.push_back(std::move(cw));
      }
      expect_cast_equals_reference(weights, rng,
                                   fmt::format("partial_cast_2d rule={} g=0x{:08X} seed=0x{:x}",
                                               rule == GlobalScaleRule::TE ? "TE" : "TE_HELPER", g_bits, seed));
    }
}

TEST(DeviceDistributed, PartialCastEqualsReferenceForArbitraryTileAndEncodeScales) {
  REQUIRE_GPU();
  // P and S as no fused scale makes them: negative, NaN, infinite, subnormal, zero.
  const std::uint32_t encode_scales[] = {0x00000000, 0x80000000, 0xBF800000, 0x7FFFFFFF, 0x7F800000,
                                         0x00000001, 0x7F7FFFFF, 0x3F800000, 0x44A80000};
  const std::uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  std::vector<CastWeight> weights;
  for (const std::uint32_t S : encode_scales) {
    const Dims d = kShapes[weights.size() % std::size(kShapes)];
    CastWeight cw{d,
                  random_bf16(std::size_t(d.M * d.K), 0.05, rng),
                  xt::empty<float>({std::size_t(d.M / 16), std::size_t(d.K / 16)}),
                  float_of(S),
                  0,
                  0};
    const std::vector<float> specials = random_tile_amax(cw.P.size(), rng);
    for (std::size_t i = 0; i < cw.P.size(); ++i) cw.P.data()[i] = i % 3 ? specials[i] : float_of(any_bits(rng));
    weights.push_back(std::move(cw));
  }
  expect_cast_equals_reference(weights, rng, fmt::format("partial_cast_2d arbitrary P seed=0x{:x}", seed));
}

// ---- §3.14 transposes ------------------------------------------------------------------------------

TEST(DeviceDistributed, TransposePackedEqualsReferenceForMixedLists) {
  REQUIRE_GPU();
  Stream stream;
  const std::uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  // Even shapes whose pitches allow accesses of 1, 2, 4, 8 and 16 bytes, partial 256 x 256 tiles,
  // empty tensors between others; pointers at every alignment below 16.
  const Dims shapes[] = {{2, 2},  {6, 10},    {20, 36},   {12, 24},   {16, 16},   {0, 16},    {48, 80},   {130, 258},
                         {16, 0}, {304, 304}, {16, 1040}, {1040, 16}, {256, 256}, {288, 544}, {512, 768}, {96, 4096}};
  struct Case {
    Dims d;
    ByteMatrix in;
    std::size_t in_at, out_at;
  };
  std::vector<Case> cases;
  Arena arena;
  for (const std::size_t misalign : {0, 1, 2, 4, 8})
    for (const Dims d : shapes) {
      Case c{d, xt::empty<std::uint8_t>({std::size_t(d.M), std::size_t(d.K / 2)}), 0, 0};
      const std::vector<std::uint8_t> bytes = random_bytes(c.in.size(), rng);
      std::copy(bytes.begin(), bytes.end(), c.in.begin());
      c.in_at = arena.reserve(bytes.size(), misalign);
      std::memcpy(arena.host(c.in_at), bytes.data(), bytes.size());
      c.out_at = arena.reserve(bytes.size(), misalign);
      cases.push_back(std::move(c));
    }
  arena.upload(stream);
  std::vector<device::TransposePackedTask> tasks;
  for (const Case& c : cases) tasks.push_back({arena.device(c.in_at), c.d.M, c.d.K, arena.device(c.out_at)});
  const device::TaskList<device::TransposePackedTask> list(tasks);
  device::launch_transpose_packed(list, stream);
  const std::vector<std::uint8_t> got = arena.download(stream);
  for (const Case& c : cases) {
    const ByteMatrix want = transpose_packed(c.in);
    const std::string what = fmt::format("transpose_packed {}x{} in at +{} seed=0x{:x}", c.d.M, c.d.K, c.in_at % 16, seed);
    EXPECT_EQ(byte_diff(want.data(), got.data() + c.out_at, want.size()), "") << what;
    // The single-tensor launcher of launch.h: the same kernel on a one-task table.
    DeviceBuffer out(want.size());
    out.poison(stream);
    device::launch_transpose_packed(arena.device(c.in_at), c.d.M, c.d.K, out.get<std::uint8_t>(), stream);
    EXPECT_EQ(byte_diff(want.data(), out.download(stream).data(), want.size()), "") << what << " (single tensor)";
  }
}

TEST(DeviceDistributed, TransposeScalesEqualsReferenceForMixedLists) {
  REQUIRE_GPU();
  Stream stream;
  const std::uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  const Dims shapes[] = {{16, 16}, {48, 80}, {0, 16}, {304, 304}, {16, 1040}, {1040, 16}, {1024, 2048}, {144, 272}};
  struct Case {
    Dims d;
    ByteMatrix in;
    std::size_t in_at, out_at, out_bytes;
  };
  std::vector<Case> cases;
  Arena arena;
  for (const Dims d : shapes) {
    Case c{d, xt::empty<std::uint8_t>({std::size_t(scale_rows(d.M)), std::size_t(scale_cols(d.K))}), 0, 0,
           std::size_t(scale_rows(d.K) * scale_cols(d.M))};
    const std::vector<std::uint8_t> bytes = random_bytes(c.in.size(), rng);
    std::copy(bytes.begin(), bytes.end(), c.in.begin());
    c.in_at = arena.reserve(bytes.size(), 3);
    std::memcpy(arena.host(c.in_at), bytes.data(), bytes.size());
    c.out_at = arena.reserve(c.out_bytes, 0);
    cases.push_back(std::move(c));
  }
  arena.upload(stream);
  std::vector<device::TransposeScalesTask> tasks;
  for (const Case& c : cases) tasks.push_back({arena.device(c.in_at), c.d.M, c.d.K, arena.device(c.out_at)});
  const device::TaskList<device::TransposeScalesTask> list(tasks);
  device::launch_transpose_scales_2d(list, stream);
  const std::vector<std::uint8_t> got = arena.download(stream);
  for (const Case& c : cases) {
    const ByteMatrix want = transpose_scales_2d(c.in, std::size_t(c.d.M), std::size_t(c.d.K));
    ASSERT_EQ(want.size(), c.out_bytes);
    const std::string what = fmt::format("transpose_scales_2d {}x{} seed=0x{:x}", c.d.M, c.d.K, seed);
    EXPECT_EQ(byte_diff(want.data(), got.data() + c.out_at, want.size()), "") << what;
    DeviceBuffer out(want.size());
    out.poison(stream);
    device::launch_transpose_scales_2d(arena.device(c.in_at), c.d.M, c.d.K, out.get<std::uint8_t>(), stream);
    EXPECT_EQ(byte_diff(want.data(), out.download(stream).data(), want.size()), "") << what << " (single tensor)";
  }
}

// ---- §3.17 steps 1 and 7 ----------------------------------------------------------------------------

TEST(DeviceDistributed, RoundToBf16EqualsReference) {
  REQUIRE_GPU();
  Stream stream;
  const std::uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  // Specials, BF16 ties (low half 0x8000) and values that round up into infinity.
  static constexpr std::uint32_t kSpecials[] = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFFFFFFF,
                                                0x7F800001, 0x00000001, 0x00008000, 0x3F808000, 0x3F818000, 0x7F7FFFFF,
                                                0xFF7F8000, 0x7F7F7FFF, 0x007FFFFF, 0xBF7FFFFF};
  std::uniform_int_distribution<std::uint32_t> any_bits;
  std::uniform_int_distribution<std::size_t> which(0, std::size(kSpecials) - 1);
  for (const std::int64_t n : {1, 7, 8, 9, 1000, 65539})
    for (const std::size_t misalign : {0, 1}) {
      std::vector<float> in(std::size_t(n) + misalign);
      for (float& x : in) x = float_of(any_bits(rng) % 4 ? any_bits(rng) : kSpecials[which(rng)]);
      DeviceBuffer din(4 * in.size()), dout(2 * in.size());
      din.upload(in.data(), stream);
      dout.poison(stream);
      device::launch_round_to_bf16(din.get<float>() + misalign, n, dout.get<std::uint16_t>() + misalign, stream);
      const std::vector<std::uint8_t> got = dout.download(stream);
      for (std::int64_t i = 0; i < n; ++i) {
        std::uint16_t g;
        std::memcpy(&g, got.data() + 2 * (misalign + i), 2);
        const std::uint16_t want = float_to_bf16(in[misalign + i]);
        ASSERT_EQ(g, want) << fmt::format("round_to_bf16 n={} at +{}: element {} = 0x{:08X} seed=0x{:x}", n, misalign, i,
                                          bits_of(in[misalign + i]), seed);
      }
    }
}

TEST(DeviceDistributed, GatherNibblesEqualsReference) {
  REQUIRE_GPU();
  Stream stream;
  const std::uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  struct Shape {
    std::int64_t total;
    int ranks;
  };
  for (const Shape sh : {Shape{0, 1}, {1, 1}, {2, 2}, {33, 3}, {64, 2}, {1001, 8}, {100002, 5}, {262144, 64}, {4096, 64}})
    for (const std::int64_t extra_pitch : {0, 5, 16}) {
      std::vector<std::int64_t> cuts;
      for (int r = 1; r < sh.ranks; ++r) cuts.push_back(std::uniform_int_distribution<std::int64_t>(0, sh.total)(rng));
      if (extra_pitch == 16) cuts = equal_cuts(sh.total, sh.ranks);  // the default partition
      std::sort(cuts.begin(), cuts.end());
      const std::vector<RankRange> ranks = rank_ranges(sh.total, sh.ranks, cuts);
      std::int64_t pitch = 0;
      for (const RankRange& r : ranks) pitch = std::max(pitch, r.buffer_bytes());
      pitch += extra_pitch;
      // Chunks as an all-gather leaves them: rank ρ's bytes at ρ * pitch, anything after them.
      const std::vector<std::uint8_t> chunks = random_bytes(std::size_t(pitch * sh.ranks), rng);
      std::vector<std::vector<std::uint8_t>> buffers;
      for (std::size_t r = 0; r < ranks.size(); ++r)
        buffers.emplace_back(chunks.begin() + std::int64_t(r) * pitch,
                             chunks.begin() + std::int64_t(r) * pitch + ranks[r].buffer_bytes());
      const std::vector<std::uint8_t> want = gather_nibbles(ranks, buffers);
      DeviceBuffer dchunks(chunks.size()), out(want.size() + 1);
      dchunks.upload(chunks.data(), stream);
      out.poison(stream);
      device::launch_gather_nibbles(dchunks.get<std::uint8_t>(), pitch, ranks, out.get<std::uint8_t>() + 1, stream);
      const std::vector<std::uint8_t> got = out.download(stream);
      EXPECT_EQ(byte_diff(want.data(), got.data() + 1, want.size()), "")
          << fmt::format("gather_nibbles total={} ranks={} pitch={} seed=0x{:x}", sh.total, sh.ranks, pitch, seed);
      EXPECT_EQ(got[0], 0xA5) << "gather_nibbles wrote before its output";
    }
}

// ---- lists without work, and invalid tasks ----------------------------------------------------------

TEST(DeviceDistributed, EmptyListsAndEmptyTasksLaunchCleanly) {
  REQUIRE_GPU();
  Stream stream;
  device::launch_amax_partial(device::TaskList<device::PartialAmaxTask>({}), AmaxRule::IGNORE, stream);
  device::launch_fused_scale_2d(device::TaskList<device::FusedScaleTask>({}), GlobalScaleRule::TE, stream);
  device::launch_partial_cast_2d(device::TaskList<device::PartialCastTask>({}), stream);
  device::launch_transpose_packed(device::TaskList<device::TransposePackedTask>({}), stream);
  device::launch_transpose_scales_2d(device::TaskList<device::TransposeScalesTask>({}), stream);
  // Tasks of empty tensors: nothing to write but the fused scale's S.
  DeviceBuffer g(4), S(4);
  NVFP4_CUDA_CHECK(cudaMemsetAsync(g.get(), 0, 4, stream));
  S.poison(stream);
  device::launch_amax_partial(device::TaskList<device::PartialAmaxTask>({{nullptr, 0, 0, 0, 0, nullptr, nullptr}}),
                              AmaxRule::IGNORE, stream);
  device::launch_fused_scale_2d(
      device::TaskList<device::FusedScaleTask>({{nullptr, g.get<float>(), 0, 16, nullptr, nullptr, S.get<float>()}}),
      GlobalScaleRule::TE, stream);
  device::launch_partial_cast_2d(
      device::TaskList<device::PartialCastTask>({{nullptr, 0, 0, 0, 0, nullptr, nullptr, nullptr, false}}), stream);
  device::launch_transpose_packed(device::TaskList<device::TransposePackedTask>({{nullptr, 0, 16, nullptr}}), stream);
  device::launch_transpose_scales_2d(device::TaskList<device::TransposeScalesTask>({{nullptr, 0, 0, nullptr}}), stream);
  device::launch_round_to_bf16(nullptr, 0, nullptr, stream);
  device::launch_gather_nibbles(nullptr, 0, {}, nullptr, stream);
  EXPECT_EQ(float_at(S.download(stream), 0), 1.0f) << "S of g = 0 under GS=TE";
  NVFP4_CUDA_CHECK(cudaStreamSynchronize(stream));
  NVFP4_CUDA_CHECK(cudaGetLastError());
}

TEST(DeviceDistributed, InvalidTasksAreRejectedBeforeAnyLaunch) {
  REQUIRE_GPU();
  using device::TaskList;
  EXPECT_THROW(TaskList<device::PartialAmaxTask>({{nullptr, 16, 24, 0, 0, nullptr, nullptr}}), std::invalid_argument);
  EXPECT_THROW(TaskList<device::PartialCastTask>({{nullptr, 16, 16, 200, 57, nullptr, nullptr, nullptr, false}}),
               std::invalid_argument);
  EXPECT_THROW(TaskList<device::TransposePackedTask>({{nullptr, 3, 16, nullptr}}), std::invalid_argument);
  EXPECT_THROW(device::launch_fused_scale_2d(TaskList<device::FusedScaleTask>({}), GlobalScaleRule::PTS, nullptr),
               std::invalid_argument);
  EXPECT_THROW(device::launch_gather_nibbles(nullptr, 0, std::vector<RankRange>(kMaxRanks + 1), nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(device::launch_gather_nibbles(nullptr, 8, {{0, 4}, {6, 8}}, nullptr, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace nvfp4
