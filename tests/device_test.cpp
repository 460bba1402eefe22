// GPU kernels against the CPU reference, bit for bit (NaN == any NaN), for every operation,
// profile and dtype. Output buffers are poisoned (0xA5) by the device backend before every
// launch, inputs are fresh random data with special values, and every CUDA call is checked.
// Without a usable CUDA device every test skips and says why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstring>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/diff.h"
#include "device/backend/device_backend.h"
#include "device/kernels/launch.h"
#include "device/runtime/device_buffer.h"
#include "fuzz/generators.h"
#include "io/tensor_convert.h"
#include "reference/hadamard.h"
#include "reference/half_float.h"
#include "reference/layout.h"
#include "reference/philox.h"
#include "reference/profiles.h"
#include "tests/support/gpu.h"

namespace nvfp4 {
namespace {

using fuzz::Dist;
using fuzz::Shape;

// The backend is created once; a missing device becomes the skip reason of every test (REQUIRE_GPU).
device::DeviceBackend* gpu() {
  static std::unique_ptr<device::DeviceBackend> backend =
      gpu_unavailable_reason() ? nullptr : std::make_unique<device::DeviceBackend>();
  return backend.get();
}

std::uint32_t fresh_seed() { return std::random_device{}(); }
std::uint64_t fresh_u64() { return (std::uint64_t(fresh_seed()) << 32) | fresh_seed(); }

io::Tensor float_tensor(const FloatMatrix& x, io::DType dtype) {
  const io::FloatType t = dtype == io::DType::BF16  ? io::FloatType::BF16
                          : dtype == io::DType::F16 ? io::FloatType::F16
                                                    : io::FloatType::F32;
  return io::from_float_matrix(x, t);
}

// Runs c on both backends and expects identical outputs; `what` names the case on failure.
void expect_device_equals_reference(const cases::Case& c, const std::string& what) {
  const cases::TensorMap want = cases::ReferenceBackend().run(c);
  const cases::TensorMap got = gpu()->run(c);
  const std::vector<compare::TensorDiff> d = compare::diff_outputs(want, got);
  EXPECT_TRUE(d.empty()) << what << "\n" << compare::describe(d);
}

cases::Case op_case(std::string_view op, cases::TensorMap inputs) {
  cases::Case c = cases::make_case(op);
  c.inputs = std::move(inputs);
  return c;
}

cases::Case quantize_case(const FloatMatrix& x, io::DType dtype, const std::string& profile, BlockShape block, Direction dir,
                          bool row_scaled, ScaleLayout layout = ScaleLayout::kCompact, std::optional<float> amax = {}) {
  cases::Case c = op_case("quantize", {{"x", float_tensor(x, dtype)}});
  c.params.set("profile", profile);
  cases::set_quantize_params(c, block, dir, row_scaled, layout);
  if (amax) c.params.set("amax", cases::F32Bits{bits_of(*amax)});
  return c;
}

// The same case under stochastic rounding (§3.18) with this seed and offset.
cases::Case with_sr(cases::Case c, std::uint64_t seed, std::uint64_t offset) {
  c.params.set("rounding", std::string("stochastic"));
  c.params.set("seed", seed);
  c.params.set("offset", offset);
  return c;
}

struct Mode {
  const char* name;
  BlockShape block;
  Direction dir;
  bool row_scaled;
  ScaleLayout layout;
};
constexpr Mode kModes[] = {
    {"1d-rowwise", BlockShape::k1D, Direction::kRowwise, false, ScaleLayout::kCompact},
    {"1d-columnwise", BlockShape::k1D, Direction::kColumnwise, false, ScaleLayout::kCompact},
    {"1d-both-swizzled", BlockShape::k1D, Direction::kBoth, false, ScaleLayout::kSwizzled},
    {"2d-both", BlockShape::k2D, Direction::kBoth, false, ScaleLayout::kCompact},
    {"2d-columnwise", BlockShape::k2D, Direction::kColumnwise, false, ScaleLayout::kCompact},
    {"row-scaled-both", BlockShape::k1D, Direction::kBoth, true, ScaleLayout::kCompact},
};
constexpr io::DType kDtypes[] = {io::DType::F32, io::DType::BF16, io::DType::F16};
constexpr Dist kDists[] = {Dist::kRandn, Dist::kSpecials, Dist::kBlockLogUniform, Dist::kGrid, Dist::kUniform};

TEST(DeviceQuantize, EqualsReferenceForEveryProfileDtypeModeAndShape) {
  REQUIRE_GPU();
  const Shape shapes[] = {{16, 16}, {16, 32}, {48, 80}, {128, 128}, {256, 272}, {304, 304}, {16, 1040}, {1040, 16}};
  int cases = 0;
  for (const Shape s : shapes)
    for (const NamedProfile& p : all_profiles())
      for (const io::DType dtype : kDtypes)
        for (const Mode& m : kModes) {
          const Dist dist = kDists[cases % std::size(kDists)];
          const std::uint32_t seed = fresh_seed();
          const FloatMatrix x = fuzz::fill_data(s, dist, seed);
          expect_device_equals_reference(quantize_case(x, dtype, std::string(p.name), m.block, m.dir, m.row_scaled, m.layout),
                                         fmt::format("quantize {}x{} {} {} {} dist={} seed=0x{:x}", s.M, s.K, p.name,
                                                     io::dtype_name(dtype), m.name, int(dist), seed));
          ++cases;
        }
  RecordProperty("cases", cases);
}

TEST(DeviceQuantize, EqualsReferenceOn4096x4096) {
  REQUIRE_GPU();
  for (const io::DType dtype : kDtypes)
    for (const BlockShape block : {BlockShape::k1D, BlockShape::k2D}) {
      const std::uint32_t seed = fresh_seed();
      const FloatMatrix x = fuzz::fill_data({4096, 4096}, Dist::kSpecials, seed);
      expect_device_equals_reference(quantize_case(x, dtype, "te", block, Direction::kBoth, false),
                                     fmt::format("quantize 4096x4096 te {} {} seed=0x{:x}", io::dtype_name(dtype),
                                                 block == BlockShape::k2D ? "2d" : "1d", seed));
    }
}

TEST(DeviceQuantize, EqualsReferenceForSpecialGlobalAmaxOverrides) {
  REQUIRE_GPU();
  const std::uint32_t overrides[] = {0x00000000, 0x7F800000, 0x7FC00000, 0x00000001, 0x006CE3EE,
                                     0x05280000, 0x7F7FFFFF, 0x46A80000, 0x40C00000};
  for (const std::uint32_t g : overrides)
    for (const NamedProfile& p : all_profiles())
      for (const BlockShape block : {BlockShape::k1D, BlockShape::k2D}) {
        const std::uint32_t seed = fresh_seed();
        const FloatMatrix x = fuzz::fill_data({48, 80}, Dist::kSpecials, seed);
        expect_device_equals_reference(quantize_case(x, io::DType::BF16, std::string(p.name), block, Direction::kBoth, false,
                                                     ScaleLayout::kCompact, float_of(g)),
                                       fmt::format("quantize 48x80 {} amax=0x{:08X} seed=0x{:x}", p.name, g, seed));
      }
}

TEST(DeviceQuantize, EqualsReferenceForAllZeroAndAllNanTensors) {
  REQUIRE_GPU();
  for (const std::uint32_t fill : {0x00000000u, 0x80000000u, 0x7FC00000u, 0xFF800000u})
    for (const NamedProfile& p : all_profiles()) {
      FloatMatrix x = xt::empty<float>({32, 48});
      x.fill(float_of(fill));
      expect_device_equals_reference(
          quantize_case(x, io::DType::F32, std::string(p.name), BlockShape::k1D, Direction::kBoth, false),
          fmt::format("quantize 32x48 filled with 0x{:08X} {}", fill, p.name));
    }
}

// The kernels' encoder keeps a NaN's sign (e2m1_hw_value_over_64, reference/e2m1.h): it relies on
// the GPU's multiply returning the positive canonical NaN for any NaN input, so that an element
// that is a negative NaN gets e2m1_hw's code 0x7 as in the reference. Negative NaNs with random
// payloads among normal values (te's amax skips NaN, so the scales stay finite), written as raw
// bits in every dtype (a conversion from binary32 would make them canonical), every mode, RN and SR.
TEST(DeviceQuantize, NegativeNanInputsGiveTheCodeOfPositiveSix) {
  REQUIRE_GPU();
  for (const io::DType dtype : kDtypes)
    for (const Mode& m : kModes)
      for (const bool sr : {false, true}) {
        const std::uint32_t seed = fresh_seed();
        cases::Case c =
            quantize_case(fuzz::fill_data({64, 96}, Dist::kRandn, seed), dtype, "te", m.block, m.dir, m.row_scaled, m.layout);
        if (sr) c = with_sr(c, fresh_u64(), fresh_u64());
        io::Tensor& x = c.inputs.at("x");
        const std::size_t size = io::dtype_size(x.dtype);
        std::mt19937 rng(seed);
        for (int i = 0; i < 300; ++i) {
          const std::uint32_t payload = rng() | 1u;  // nonzero: a NaN, not an infinity
          const std::uint32_t bits = size == 4                  ? 0xFF800000u | (payload & 0x7FFFFFu)
                                     : dtype == io::DType::BF16 ? 0xFF80u | (payload & 0x7Fu)
                                                                : 0xFC00u | (payload & 0x3FFu);
          std::memcpy(&x.bytes[(rng() % std::size_t(x.numel())) * size], &bits, size);  // little-endian
        }
        expect_device_equals_reference(c, fmt::format("quantize 64x96 te {} {}{} with negative NaNs seed=0x{:x}",
                                                      io::dtype_name(dtype), m.name, sr ? " SR" : "", seed));
      }
}

TEST(DeviceAmax, EveryAmaxOperationEqualsReference) {
  REQUIRE_GPU();
  const char* ops[] = {"amax_global", "amax_rows", "amax_cols", "amax_blocks_1x16", "amax_blocks_16x1", "amax_tiles_16x16"};
  for (const Shape s : {Shape{16, 16}, Shape{48, 80}, Shape{304, 304}, Shape{1024, 2064}})
    for (const char* op : ops)
      for (const io::DType dtype : kDtypes)
        for (const char* profile : {"te", "torchao"})  // AMAX = IGNORE and PROPAGATE
          for (const Dist dist : {Dist::kSpecials, Dist::kBlockLogUniform}) {
            const std::uint32_t seed = fresh_seed();
            cases::Case c = op_case(op, {{"x", float_tensor(fuzz::fill_data(s, dist, seed), dtype)}});
            c.params.set("profile", std::string(profile));
            expect_device_equals_reference(
                c, fmt::format("{} {}x{} {} {} seed=0x{:x}", op, s.M, s.K, io::dtype_name(dtype), profile, seed));
          }
}

TEST(DeviceDequantize, EqualsReferenceForEveryProfileAndOutputDtype) {
  REQUIRE_GPU();
  for (const Shape s : {Shape{16, 16}, Shape{48, 80}, Shape{304, 304}, Shape{256, 4096}})
    for (const NamedProfile& p : all_profiles())
      for (const io::DType out : kDtypes)
        for (const bool row_scaled : {false, true}) {
          // Real quantizer output, and raw random bytes (NaN scale bytes, every code).
          const std::uint32_t seed = fresh_seed();
          const FloatMatrix x = fuzz::fill_data(s, Dist::kSpecials, seed);
          cases::TensorMap q = cases::ReferenceBackend().run(
              quantize_case(x, io::DType::F32, std::string(p.name), BlockShape::k1D, Direction::kRowwise, row_scaled));
          for (const bool random_bytes : {false, true}) {
            cases::Case c = op_case("dequantize", {{"data", q["data"]}, {"scale", q["scale"]}, {"amax", q["amax"]}});
            if (random_bytes) {
              c.inputs["data"] = io::from_byte_matrix(fuzz::fill_bytes(s.M, s.K / 2, seed + 1));
              c.inputs["scale"] = io::from_byte_matrix(fuzz::fill_bytes(scale_rows(s.M), scale_cols(s.K), seed + 2));
            }
            c.params.set("profile", std::string(p.name));
            c.params.set("output_dtype", std::string(io::dtype_name(out)));
            expect_device_equals_reference(c, fmt::format("dequantize {}x{} {} -> {} row_scaled={} random={} seed=0x{:x}", s.M,
                                                          s.K, p.name, io::dtype_name(out), row_scaled, random_bytes, seed));
          }
        }
}

TEST(DeviceLayout, SwizzleUnswizzleAndTransposesEqualReference) {
  REQUIRE_GPU();
  for (const auto& [rows, cols] : {std::pair{128, 4}, {128, 8}, {256, 36}, {384, 68}, {1024, 260}}) {
    const std::uint32_t seed = fresh_seed();
    for (const char* op : {"swizzle", "unswizzle"}) {
      cases::Case c = op_case(op, {{"scale", io::from_byte_matrix(fuzz::fill_bytes(rows, cols, seed))}});
      expect_device_equals_reference(c, fmt::format("{} [{}, {}] seed=0x{:x}", op, rows, cols, seed));
    }
  }
  for (const auto& [M, K] : {std::pair{16, 16}, {2, 2}, {6, 10}, {48, 80}, {130, 258}, {304, 304}, {1024, 2048}}) {
    const std::uint32_t seed = fresh_seed();
    cases::Case c = op_case("transpose_packed", {{"data", io::from_byte_matrix(fuzz::fill_bytes(M, K / 2, seed))}});
    expect_device_equals_reference(c, fmt::format("transpose_packed {}x{} seed=0x{:x}", M, K, seed));
  }
  for (const auto& [M, K] : {std::pair{16, 16}, {48, 80}, {304, 304}, {1024, 2048}}) {
    const std::uint32_t seed = fresh_seed();
    cases::Case c =
        op_case("transpose_scales_2d", {{"scale", io::from_byte_matrix(fuzz::fill_bytes(scale_rows(M), scale_cols(K), seed))}});
    c.params.set("M", std::int64_t(M));
    c.params.set("K", std::int64_t(K));
    expect_device_equals_reference(c, fmt::format("transpose_scales_2d {}x{} seed=0x{:x}", M, K, seed));
  }
}

// ---- stochastic rounding and the Hadamard transform (§3.18, §3.19) ----------------------------

// CUDA's Philox (the kernels') and Random123's (the reference's) agree on random counters and keys.
TEST(DevicePhilox, CudaGeneratorEqualsRandom123OnRandomCountersAndKeys) {
  REQUIRE_GPU();
  constexpr std::int64_t n = 1 << 16;
  std::mt19937_64 rng(fresh_u64());
  std::vector<PhiloxCounter> counters(n);
  std::vector<PhiloxKey> keys(n);
  for (std::int64_t i = 0; i < n; ++i) {
    counters[i] = {std::uint32_t(rng()), std::uint32_t(rng()), std::uint32_t(rng()), std::uint32_t(rng())};
    keys[i] = {std::uint32_t(rng()), std::uint32_t(rng())};
  }
  counters[0] = {};  // the all-zero and all-ones known answers among them
  keys[0] = {};
  counters[1] = {~0u, ~0u, ~0u, ~0u};
  keys[1] = {~0u, ~0u};
  device::DeviceBuffer dc(n * sizeof(PhiloxCounter)), dk(n * sizeof(PhiloxKey)), dout(n * sizeof(PhiloxCounter));
  dc.upload(counters.data(), nullptr);
  dk.upload(keys.data(), nullptr);
  dout.poison(nullptr);
  device::launch_philox4x32_10(dc.get<PhiloxCounter>(), dk.get<PhiloxKey>(), n, dout.get<PhiloxCounter>(), nullptr);
  const std::vector<std::uint8_t> bytes = dout.download(nullptr);
  int mismatches = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    PhiloxCounter got;
    std::memcpy(&got, bytes.data() + i * sizeof got, sizeof got);
    if (!(got == philox4x32_10(counters[i], keys[i])) && ++mismatches <= 5)
      ADD_FAILURE() << "counter " << i << ": CUDA and Random123 differ";
  }
  EXPECT_EQ(mismatches, 0);
}

// The tile kernel's CTAs loop over tiles with three stages of asynchronous copies in flight; this
// shape has more 64x64 tiles (21 x 26) than CTAs on a 132-SM GPU (4 per SM), edge tiles in both
// directions, and M % 32 != 0 (the columnwise codes' 8-byte store path). Run under racecheck too.
TEST(DeviceQuantize, EqualsReferenceWhenEachCtaLoopsOverSeveralTiles) {
  REQUIRE_GPU();
  for (const Mode& m : kModes)
    for (const bool sr : {false, true}) {
      const std::uint32_t seed = fresh_seed();
      const FloatMatrix x = fuzz::fill_data({1296, 1616}, Dist::kRandn, seed);
      cases::Case c = quantize_case(x, io::DType::BF16, "te", m.block, m.dir, m.row_scaled, m.layout);
      if (sr) c = with_sr(c, fresh_u64(), fresh_u64());
      expect_device_equals_reference(c,
                                     fmt::format("quantize 1296x1616 te bf16 {}{} seed=0x{:x}", m.name, sr ? " SR" : "", seed));
    }
}

// Every profile, dtype and quantize mode under SR, over shapes that are not multiples of 64, with
// seeds and offsets at the 2^32 and 2^64 edges and fresh ones.
TEST(DeviceStochasticRounding, EqualsReferenceForEveryProfileDtypeModeAndSeed) {
  REQUIRE_GPU();
  const Shape shapes[] = {{16, 16}, {48, 80}, {144, 208}, {16, 1040}};
  const std::uint64_t edges[] = {0, 0xFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull, fresh_u64()};
  int cases = 0;
  for (const Shape s : shapes)
    for (const NamedProfile& p : all_profiles())
      for (const io::DType dtype : kDtypes)
        for (const Mode& m : kModes) {
          const std::uint32_t seed = fresh_seed();
          const std::uint64_t key = edges[cases % 4], offset = edges[(cases / 4) % 4];
          const FloatMatrix x = fuzz::fill_data(s, kDists[cases % std::size(kDists)], seed);
          expect_device_equals_reference(
              with_sr(quantize_case(x, dtype, std::string(p.name), m.block, m.dir, m.row_scaled, m.layout), key, offset),
              fmt::format("SR quantize {}x{} {} {} {} data seed=0x{:x} key=0x{:x} offset=0x{:x}", s.M, s.K, p.name,
                          io::dtype_name(dtype), m.name, seed, key, offset));
          ++cases;
        }
  RecordProperty("cases", cases);
}

// The transform alone and inside quantize (the columnwise copy of rht(x)), BF16, every data
// distribution (BlockLogUniform spans far more than the 41 binades of the kernel's binary64 path,
// Specials holds NaN and infinities), masks 0xD7E8, 0 and fresh ones, shapes not multiples of 64.
TEST(DeviceRht, TransformAndRhtQuantizeEqualReference) {
  REQUIRE_GPU();
  const Shape shapes[] = {{16, 16}, {48, 80}, {144, 208}, {1040, 16}, {16, 1040}, {4096, 272}};
  int cases = 0;
  for (const Shape s : shapes)
    for (const Dist dist : kDists) {
      const std::uint32_t seed = fresh_seed();
      const std::uint64_t mask = cases % 3 == 0 ? kRhtDefaultMask : cases % 3 == 1 ? 0 : fresh_seed() & 0xFFFF;
      const FloatMatrix x = fuzz::fill_data(s, dist, seed);
      cases::Case t = op_case("rht", {{"x", float_tensor(x, io::DType::BF16)}});
      t.params.set("rht_mask", mask);
      const std::string what = fmt::format("{}x{} dist={} seed=0x{:x} mask=0x{:04x}", s.M, s.K, int(dist), seed, mask);
      expect_device_equals_reference(t, "rht " + what);
      t.params.set("accumulation", std::string("mma-sm90"));  // [knob RHT] MMA_SM90
      expect_device_equals_reference(t, "rht mma-sm90 " + what);
      for (const NamedProfile& p : all_profiles())
        for (const bool row_scaled : {false, true}) {
          cases::Case q = quantize_case(x, io::DType::BF16, std::string(p.name), BlockShape::k1D, Direction::kBoth, row_scaled);
          q.params.set("rht", true);
          q.params.set("rht_mask", mask);
          expect_device_equals_reference(q, fmt::format("rht quantize {} {} {}", p.name, row_scaled ? "row-scaled" : "", what));
          expect_device_equals_reference(with_sr(q, fresh_u64(), fresh_u64()),
                                         fmt::format("rht SR quantize {} {} {}", p.name, row_scaled ? "row-scaled" : "", what));
        }
      ++cases;
    }
  // Chunks of zeros only, of random signs: the sign of each zero sum comes from its 16 products.
  std::mt19937 rng(fresh_seed());
  FloatMatrix zeros = xt::zeros<float>({64, 48});
  for (float& v : zeros) v = rng() & 1 ? -0.0f : 0.0f;
  for (const std::uint64_t mask : {std::uint64_t(kRhtDefaultMask), std::uint64_t(0), std::uint64_t(fresh_seed() & 0xFFFF)}) {
    cases::Case t = op_case("rht", {{"x", float_tensor(zeros, io::DType::BF16)}});
    t.params.set("rht_mask", mask);
    expect_device_equals_reference(t, fmt::format("rht of signed zeros, mask 0x{:04x}", mask));
    t.params.set("accumulation", std::string("mma-sm90"));  // every zero sum +0.0
    expect_device_equals_reference(t, fmt::format("rht mma-sm90 of signed zeros, mask 0x{:04x}", mask));
  }
  // Chunks of signed zeros and +-1 (many exact zero sums, of both signs in the butterfly), beside
  // all-zero ones in the same column pair; chunks of one large value, whose unscaled sums overflow
  // binary32 from exponent field 251 up (the kernel's binary32 path stops at 250); and chunks
  // spanning 13 to 26 binades, which the kernel sums by two binary32 butterflies up to 25 (and
  // MMA_SM90 truncates past 18).
  FloatMatrix edges = xt::zeros<float>({128, 64});
  for (std::size_t r = 0; r < 64; ++r)
    for (std::size_t c = 0; c < 64; ++c) {
      const std::uint32_t u = rng();
      edges(r, c) = c % 4 == 1 ? (u & 1 ? -0.0f : 0.0f) : (u & 2 ? (u & 1 ? -1.0f : 1.0f) : (u & 1 ? -0.0f : 0.0f));
    }
  for (std::size_t r = 64; r < 96; ++r)
    for (std::size_t c = 0; c < 64; ++c)
      edges(r, c) = bf16_to_float(std::uint16_t((249 + c % 5) << 7 | 0x7F)) * (c % 3 == 0 && r % 7 == 0 ? -1.0f : 1.0f);
  for (std::size_t r = 96; r < 128; ++r)
    for (std::size_t c = 0; c < 64; ++c) {
      const std::uint32_t u = rng(),
                          field = r % 4 == 0 ? 140 - 13 - c % 14 : 140 - u % 13;  // one far below, the rest near the top
      edges(r, c) = bf16_to_float(std::uint16_t((u >> 8 & 1) << 15 | field << 7 | (u >> 9 & 0x7F)));
    }
  for (const std::uint64_t mask : {std::uint64_t(kRhtDefaultMask), std::uint64_t(0)}) {
    cases::Case t = op_case("rht", {{"x", float_tensor(edges, io::DType::BF16)}});
    t.params.set("rht_mask", mask);
    expect_device_equals_reference(t, fmt::format("rht of zeros, ones and large fields, mask 0x{:04x}", mask));
    t.params.set("accumulation", std::string("mma-sm90"));  // spans past 18 binades: truncated terms
    expect_device_equals_reference(t, fmt::format("rht mma-sm90 of zeros, ones and large fields, mask 0x{:04x}", mask));
    for (const NamedProfile& p : all_profiles()) {
      cases::Case q = quantize_case(edges, io::DType::BF16, std::string(p.name), BlockShape::k1D, Direction::kColumnwise, false);
      q.params.set("rht", true);
      q.params.set("rht_mask", mask);
      expect_device_equals_reference(q,
                                     fmt::format("rht quantize of zeros, ones and large fields {} mask 0x{:04x}", p.name, mask));
    }
  }
  RecordProperty("cases", cases);
}

// Tall tensors, whose CTA rows each take a range of several chunks (the shapes above give most a
// single one): every chunk of column 7 spans more binades than binary32 sums exactly (30 or 60, so
// both wide paths), and one of them, first, last or anywhere, holds the tensor's largest output,
// four times any other. The amax pass visits each range backwards and rescans it for such chunks
// after its loop: one it missed would change amax_t and every scale. The transform alone visits
// forwards, and its wide outputs are compared too.
TEST(DeviceRht, TallTensorsFindTheLargestWideChunkAnywhereInARange) {
  REQUIRE_GPU();
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const std::size_t chunks = 16 * std::size_t(sms), M = 16 * chunks, N = 48;  // 8 chunks a CTA row at 2 CTAs per SM
  std::mt19937 rng(fresh_seed());
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (const std::size_t largest : {std::size_t(0), chunks - 1, std::size_t(rng() % chunks)}) {
    FloatMatrix x = xt::zeros<float>({M, N});
    for (float& v : x) v = bf16_to_float(float_to_bf16(unit(rng)));
    for (std::size_t k = 0; k < chunks; ++k) {
      x(16 * k + rng() % 8, 7) = (k == largest ? 0x1p22f : 0x1p20f) * (rng() & 1 ? -1.0f : 1.0f);
      x(16 * k + 8 + rng() % 8, 7) = k % 2 ? 0x1p-40f : 0x1p-10f;
    }
    const std::string what = fmt::format("{}x{}, largest in chunk {} of {}", M, N, largest, chunks);
    expect_device_equals_reference(op_case("rht", {{"x", float_tensor(x, io::DType::BF16)}}), "rht " + what);
    cases::Case q = quantize_case(x, io::DType::BF16, "te", BlockShape::k1D, Direction::kColumnwise, false);
    q.params.set("rht", true);
    expect_device_equals_reference(q, "rht quantize " + what);
  }
}

// Runs without a GPU: the rht launchers check what the kernels' 16-byte copies of rows assume
// before any CUDA call, and say what is wrong; x + 2 is 4-byte aligned, which the 4-byte loads of
// column pairs alone would accept.
TEST(DeviceRht, LaunchersRejectMisalignedInputAndShapesNotMultiplesOf16) {
  using ::testing::StrEq;
  using ::testing::ThrowsMessage;
  alignas(16) static const std::uint16_t x[64 * 128 + 8] = {};
  EXPECT_THAT([&] { device::launch_rht(x + 2, 64, 128, kRhtDefaultMask, RhtSum::EXACT, nullptr, nullptr); },
              ThrowsMessage<std::invalid_argument>(StrEq("rht: x must be 16-byte aligned")));
  EXPECT_THAT([&] { device::launch_rht(x, 64, 120, kRhtDefaultMask, RhtSum::EXACT, nullptr, nullptr); },
              ThrowsMessage<std::invalid_argument>(StrEq("rht: M and N must be multiples of 16")));
  // 64 x 128 has no scale padding, so no memset comes before the check.
  EXPECT_THAT([&] { device::launch_rht_quantize_columnwise(x + 2, 64, 128, kRhtDefaultMask, {}, nullptr, nullptr, nullptr); },
              ThrowsMessage<std::invalid_argument>(StrEq("rht: x must be 16-byte aligned")));
}

// Random shapes, data, profiles and options; RapidCheck shrinks a failure to a small case.
// A plain TEST around rc::check, so that a machine without a GPU skips instead of discarding.
TEST(DeviceProperty, QuantizeEqualsReferenceOnGeneratedCases) {
  REQUIRE_GPU();
  const bool ok = rc::check("device quantize == reference quantize", [] {
    const auto data = *fuzz::data_matrix(320);
    const auto profile = *fuzz::profile();
    const auto dtype = *rc::gen::element(io::DType::F32, io::DType::BF16, io::DType::F16);
    const auto mode = *rc::gen::elementOf(std::vector<Mode>(std::begin(kModes), std::end(kModes)));
    cases::Case c = quantize_case(data.x, dtype, std::string(profile.name()), mode.block, mode.dir, mode.row_scaled, mode.layout);
    if (!mode.row_scaled && *rc::gen::weightedElement<bool>({{4, false}, {1, true}}))
      c.params.set("amax", cases::F32Bits{*fuzz::float_bits()});
    RC_ASSERT(compare::describe(compare::diff_outputs(cases::ReferenceBackend().run(c), gpu()->run(c))) == "");
  });
  EXPECT_TRUE(ok) << "RapidCheck found a case where the device differs (counterexample above)";
}

// Runs without a GPU: the device layer's runner table matches the registry.
TEST(DeviceRegistry, EveryOperationHasAKernelRowOrAStatedReason) {
  for (const cases::OperationSpec& op : cases::operations()) {
    const auto rows = device::device_runners();
    const bool has_row = std::any_of(rows.begin(), rows.end(), [&](const device::DeviceRow& r) { return r.op == op.name; });
    EXPECT_NE(has_row, !op.no_device_reason.empty())
        << op.name << ": needs a row in device/backend/device_backend.cpp or a no_device_reason in its descriptor, not both";
  }
  for (const device::DeviceRow& r : device::device_runners())
    EXPECT_NE(cases::find_operation(r.op), nullptr) << "device row for an operation the registry lacks: " << r.op;
}

}  // namespace
}  // namespace nvfp4
