// The EXACT GEMM kernel (device/kernels/gemm.cu) against the reference (§3.20), bit for bit (NaN == any
// NaN): shapes off the tile sizes, scales over the whole E4M3 range, the §6.21 cancellation, exact
// ties, β·C cancelling α·S, NaN scales and special α/β/C, subnormal and overflowing results, every
// output dtype, bias, row scaling and swizzled scales; and the same rejections. Output buffers are
// poisoned by the device backend; inputs are fresh random data. Without a usable CUDA device every
// test skips and says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/diff.h"
#include "device/backend/device_backend.h"
#include "device/kernels/gemm_split.h"
#include "device/kernels/launch.h"
#include "io/tensor_convert.h"
#include "reference/layout.h"
#include "reference/scale_layout.h"
#include "tests/support/gpu.h"

namespace nvfp4 {
namespace {

device::DeviceBackend* gpu() {
  static std::unique_ptr<device::DeviceBackend> backend =
      gpu_unavailable_reason() ? nullptr : std::make_unique<device::DeviceBackend>();
  return backend.get();
}

std::uint32_t fresh_seed() { return std::random_device{}(); }

struct Operand {
  io::Tensor data, scale, amax;
};

// How the scale bytes of the real blocks are drawn.
enum class Scales { kFinite, kSigned, kNearOne, kWithNan };
constexpr const char* kScalesName[] = {"finite", "signed", "near-one", "with-nan"};

std::uint8_t scale_byte(Scales kind, std::mt19937& rng) {
  const std::uint8_t b = std::uint8_t(rng());
  switch (kind) {
    case Scales::kFinite:
      return b % 0x7F;  // 0 .. 448, subnormals
    case Scales::kSigned:
      return (b & 0x7F) == 0x7F ? b ^ 1 : b;  // either sign, no NaN
    case Scales::kNearOne:
      return std::uint8_t(0x30 + b % 16);  // 0.5 .. 1.875
    case Scales::kWithNan:
      return rng() % 64 ? b % 0x7F : (b & 0x80) | 0x7F;  // a NaN now and then
  }
  return 0;
}

io::Tensor amax_tensor(const std::vector<float>& v) {
  return io::make_tensor_from<float>(io::DType::F32, {std::int64_t(v.size())}, std::span(v));
}

// Random bytes for every code; the padding of the scale matrix is 0x00 or, with garbage, random
// bytes (NaN included) that the kernel must not read as scales of real blocks.
Operand random_operand(std::int64_t rows, std::int64_t K, Scales kind, std::mt19937& rng, bool garbage = false) {
  ByteMatrix data = xt::empty<std::uint8_t>({std::size_t(rows), std::size_t(K / 2)});
  for (std::uint8_t& b : data) b = std::uint8_t(rng());
  ByteMatrix scale = xt::zeros<std::uint8_t>({std::size_t(scale_rows(rows)), std::size_t(scale_cols(K))});
  for (std::size_t r = 0; r < scale.shape(0); ++r)
    for (std::size_t j = 0; j < scale.shape(1); ++j) {
      const bool real = std::int64_t(r) < rows && std::int64_t(j) < K / 16;
      if (real)
        scale(r, j) = scale_byte(kind, rng);
      else if (garbage)
        scale(r, j) = rng() % 4 ? 0x7F : std::uint8_t(rng());
    }
  const float amax = std::ldexp(1.0f + float(rng() % 1024) / 1024.0f, int(rng() % 12));
  return {io::from_byte_matrix(data), io::from_byte_matrix(scale), amax_tensor({amax})};
}

// An operand from one E2M1 code per element ([rows, K]) and one scale byte per block ([rows, K/16]).
Operand operand_of(const ByteMatrix& codes, const ByteMatrix& blocks, float amax = 1.0f) {
  const std::size_t rows = codes.shape(0), K = codes.shape(1);
  ByteMatrix data = xt::empty<std::uint8_t>({rows, K / 2});
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t k = 0; k < K / 2; ++k) data(r, k) = std::uint8_t(codes(r, 2 * k) | (codes(r, 2 * k + 1) << 4));
  ByteMatrix scale =
      xt::zeros<std::uint8_t>({std::size_t(scale_rows(std::int64_t(rows))), std::size_t(scale_cols(std::int64_t(K)))});
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < K / 16; ++j) scale(r, j) = blocks(r, j);
  return {io::from_byte_matrix(data), io::from_byte_matrix(scale), amax_tensor({amax})};
}

struct Options {
  io::DType out = io::DType::F32;
  bool swizzled = false;
  std::optional<float> alpha, beta;
  std::optional<FloatMatrix> c;
  std::optional<FloatVector> bias;
  bool row_scaled = false, accumulate = false;
  std::string accumulation = "exact";
};

io::FloatType float_type(io::DType t) {
  return t == io::DType::BF16 ? io::FloatType::BF16 : t == io::DType::F16 ? io::FloatType::F16 : io::FloatType::F32;
}

io::Tensor swizzled(const io::Tensor& compact) {
  return io::from_byte_matrix(swizzle_scales(io::to_byte_matrix(compact, "test", "scale")));
}

cases::Case gemm_case(const Operand& a, const Operand& b, const Options& o) {
  cases::Case c = cases::make_case("gemm");
  c.inputs = {{"a_data", a.data}, {"a_scale", o.swizzled ? swizzled(a.scale) : a.scale}, {"a_amax", a.amax},
              {"b_data", b.data}, {"b_scale", o.swizzled ? swizzled(b.scale) : b.scale}, {"b_amax", b.amax}};
  c.params.set("output_dtype", std::string(io::dtype_name(o.out)));
  c.params.set("scale_layout", std::string(o.swizzled ? "swizzled" : "compact"));
  if (o.alpha) c.params.set("alpha", cases::F32Bits{bits_of(*o.alpha)});
  if (o.beta) c.params.set("beta", cases::F32Bits{bits_of(*o.beta)});
  if (o.c) c.inputs["c"] = io::from_float_matrix(*o.c, o.accumulate ? float_type(o.out) : io::FloatType::F32);
  if (o.bias) {
    c.params.set("with_bias", true);
    c.inputs["bias"] = io::from_float_vector(*o.bias);
  }
  c.params.set("row_scaled", o.row_scaled);
  c.params.set("accumulate", o.accumulate);
  c.params.set("accumulation", o.accumulation);
  return c;
}

std::string describe_options(const Options& o) {
  return fmt::format("out={} swizzled={} alpha={} beta={} c={} bias={} row_scaled={} accumulate={} accumulation={}",
                     io::dtype_name(o.out), o.swizzled, o.alpha ? fmt::format("0x{:08X}", bits_of(*o.alpha)) : "amax",
                     o.beta ? fmt::format("0x{:08X}", bits_of(*o.beta)) : "none", o.c.has_value(), o.bias.has_value(),
                     o.row_scaled, o.accumulate, o.accumulation);
}

void expect_device_equals_reference(const cases::Case& c, const std::string& what) {
  const cases::TensorMap want = cases::ReferenceBackend().run(c);
  const cases::TensorMap got = gpu()->run(c);
  const std::vector<compare::TensorDiff> d = compare::diff_outputs(want, got);
  EXPECT_TRUE(d.empty()) << what << "\n" << compare::describe(d);
}

FloatMatrix reference_d(const cases::Case& c) {
  return io::to_float_matrix(cases::ReferenceBackend().run(c).at("d"), "test", "d");
}

FloatMatrix random_matrix(std::size_t rows, std::size_t cols, std::mt19937& rng) {
  FloatMatrix m = xt::empty<float>({rows, cols});
  std::normal_distribution<float> normal(0.0f, 8.0f);
  for (float& v : m) v = normal(rng);
  return m;
}

FloatVector random_vector(std::size_t n, std::mt19937& rng) {
  FloatVector v = xt::empty<float>({n});
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (float& x : v) x = normal(rng);
  return v;
}

constexpr io::DType kOutputs[] = {io::DType::F32, io::DType::BF16, io::DType::F16};

// An operand as the quantizer writes it (te profile, rowwise, compact) from a random [rows, K] matrix.
Operand quantized_operand(std::int64_t rows, std::int64_t K, std::mt19937& rng) {
  cases::Case q = cases::make_case("quantize");
  q.inputs["x"] = io::from_float_matrix(random_matrix(std::size_t(rows), std::size_t(K), rng), io::FloatType::F32);
  q.params.set("profile", std::string("te"));
  cases::set_quantize_params(q, BlockShape::k1D, Direction::kRowwise);
  const cases::TensorMap t = cases::ReferenceBackend().run(q);
  return Operand{t.at("data"), t.at("scale"), t.at("amax")};
}

// 17 x 17 x 65536 (4096 blocks; in an MMA mode a chain of 1,024 instructions) and a grid of 9 x 3
// CTAs that spans two raster groups, α = 1, for finite and near-one scales.
void expect_long_k_and_raster_groups(const std::string& accumulation) {
  for (const auto& [M, N, K] : {std::tuple{17, 17, 65536}, std::tuple{1100, 300, 64}})
    for (const Scales kind : {Scales::kFinite, Scales::kNearOne}) {
      const std::uint32_t seed = fresh_seed();
      std::mt19937 rng(seed);
      const Operand a = random_operand(M, K, kind, rng), b = random_operand(N, K, kind, rng);
      Options o;
      o.accumulation = accumulation;
      o.alpha = 1.0f;
      expect_device_equals_reference(gemm_case(a, b, o), fmt::format("gemm {} {}x{}x{} scales={} seed=0x{:x}", accumulation, M, N,
                                                                     K, kScalesName[int(kind)], seed));
    }
}

// Every M, N of {1, 17, 100, 128, 130, 257} with every K of {16, 32, 48, 272, 1040, 4096}: partial
// tiles, one and several CTAs, K not a multiple of the 64-element stage, several 64-block flushes.
TEST(DeviceGemm, EqualsReferenceOnShapesOffTheTiles) {
  REQUIRE_GPU();
  const std::pair<std::int64_t, std::int64_t> mn[] = {{1, 1}, {17, 257}, {100, 130}, {128, 128}, {130, 17}, {257, 100}};
  int cases = 0;
  for (const std::int64_t K : {16, 32, 48, 272, 1040, 4096})
    for (const auto& [M, N] : mn) {
      const std::uint32_t seed = fresh_seed();
      std::mt19937 rng(seed);
      const Scales kind = Scales(cases % 3);
      const Operand a = random_operand(M, K, kind, rng), b = random_operand(N, K, kind, rng);
      Options o;
      o.out = kOutputs[cases % 3];
      if (cases % 2) o.alpha = std::ldexp(1.0f + float(rng() % 4096) / 4096.0f, int(rng() % 40) - 60);
      expect_device_equals_reference(gemm_case(a, b, o), fmt::format("gemm {}x{}x{} scales={} {} seed=0x{:x}", M, N, K,
                                                                     kScalesName[int(kind)], describe_options(o), seed));
      ++cases;
    }
}

TEST(DeviceGemm, EqualsReferenceOnLongKAndAcrossRasterGroups) {
  REQUIRE_GPU();
  expect_long_k_and_raster_groups("exact");
}

// The tail split's rule (device/kernels/gemm_split.h), on an H100's 132 SMs: 8192^3 has 4,096 tiles of
// 128 stages, 31 full waves and 4 tiles left, each cut into 32 parts of 4 stages.
TEST(GemmSplit, CutsOnlyTheLastPartialWaveIntoPartsOfAtLeastFourStages) {
  const device::GemmSplit big = device::gemm_split(4096, 128, 132);
  EXPECT_EQ(big.whole_tiles, 4092);
  EXPECT_EQ(big.parts, 32);  // 132 / 4 = 33 parts would leave 3.9 stages each
  EXPECT_EQ(big.ctas(4096), 4092 + 4 * 32);
  const device::GemmSplit one = device::gemm_split(1, 1024, 132);  // 17 x 17 x 65536
  EXPECT_EQ(one.whole_tiles, 0);
  EXPECT_EQ(one.parts, 132);
  EXPECT_EQ(device::gemm_split(1024, 128, 132).parts, 1);  // 100 tiles left: 132 / 100 < 2
  EXPECT_EQ(device::gemm_split(264, 128, 132).parts, 1);   // whole waves only
  EXPECT_EQ(device::gemm_split(1, 7, 132).parts, 1);       // 7 stages: no part would have 4
  EXPECT_EQ(device::gemm_split(1, 8, 132).parts, 2);
}

// More tiles than one wave of CTAs (one per SM): a tail of one tile cut along K into 4 parts,
// whose integer totals are added in whatever order the parts finish, and a tail of SMs - 1
// tiles that is not cut. N is off the tile size, so the tail tile is a partial one.
TEST(DeviceGemm, EqualsReferenceWhenTheLastWaveIsSplitAlongK) {
  REQUIRE_GPU();
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  constexpr std::int64_t M = 128, K = 1024;  // 16 stages
  for (const std::int64_t tiles : {std::int64_t(sms) + 1, 2 * std::int64_t(sms) - 1}) {
    const std::int64_t N = 128 * (tiles - 1) + 5;
    const device::GemmSplit split = device::gemm_split(tiles, K / 64, sms);
    EXPECT_EQ(split.parts, tiles == sms + 1 ? 4 : 1);
    const std::uint32_t seed = fresh_seed();
    std::mt19937 rng(seed);
    const Operand a = random_operand(M, K, Scales::kSigned, rng), b = random_operand(N, K, Scales::kSigned, rng);
    Options o;
    o.alpha = 1.0f;
    expect_device_equals_reference(gemm_case(a, b, o),
                                   fmt::format("gemm {}x{}x{}, {} parts per tail tile, seed=0x{:x}", M, N, K, split.parts, seed));
  }
}

// Operands as the quantizer writes them (te profile), α from their amaxes.
TEST(DeviceGemm, EqualsReferenceOnQuantizedOperands) {
  REQUIRE_GPU();
  for (const auto& [M, N, K] : {std::tuple{64, 48, 256}, std::tuple{144, 272, 1040}})  // the quantizer needs M % 16 == 0
    for (const io::DType out : kOutputs) {
      const std::uint32_t seed = fresh_seed();
      std::mt19937 rng(seed);
      Options o;
      o.out = out;
      const Operand a = quantized_operand(M, K, rng);
      expect_device_equals_reference(
          gemm_case(a, quantized_operand(N, K, rng), o),
          fmt::format("gemm of quantized operands {}x{}x{} out={} seed=0x{:x}", M, N, K, io::dtype_name(out), seed));
    }
}

// §6.21: blocks 2^24, 1 and -2^24. Binary32 accumulation in block order loses the 1; EXACT keeps it.
TEST(DeviceGemm, WorkedExample621IsExactlyOne) {
  REQUIRE_GPU();
  ByteMatrix qa = xt::zeros<std::uint8_t>({1, 48}), qb = xt::zeros<std::uint8_t>({1, 48});
  for (int k = 0; k < 16; ++k) {
    qa(0, k) = qb(0, k) = qa(0, 32 + k) = 0x6;
    qb(0, 32 + k) = 0xE;
  }
  qa(0, 16) = qb(0, 16) = 0x2;
  const ByteMatrix scales = {{0x78, 0x38, 0x78}};
  for (const bool from_amax : {false, true}) {
    Options o;
    if (!from_amax) o.alpha = 1.0f;
    const cases::Case c = gemm_case(operand_of(qa, scales, 2688.0f), operand_of(qb, scales, 2688.0f), o);  // α = 1.0 from 2688²
    expect_device_equals_reference(c, fmt::format("§6.21 from_amax={}", from_amax));
    const io::Tensor d = gpu()->run(c).at("d");
    std::uint32_t bits;
    std::memcpy(&bits, d.bytes.data(), 4);
    EXPECT_EQ(bits, 0x3F800000u) << "§6.21: EXACT D must be 1.0";
  }
}

// Results exactly halfway between two neighbours: binary32 (normal and subnormal), BF16 and FP16.
TEST(DeviceGemm, ExactTiesRoundToEven) {
  REQUIRE_GPU();
  auto single = [](std::vector<std::uint8_t> a_codes, std::vector<std::uint8_t> b_codes, std::vector<std::uint8_t> a_scales,
                   std::vector<std::uint8_t> b_scales) {
    const std::size_t blocks = a_scales.size();
    ByteMatrix qa = xt::zeros<std::uint8_t>({std::size_t(1), 16 * blocks}), qb = qa;
    ByteMatrix sa = xt::zeros<std::uint8_t>({std::size_t(1), blocks}), sb = sa;
    for (std::size_t j = 0; j < blocks; ++j) {  // element 0 of each block; the rest are zero
      qa(0, 16 * j) = a_codes[j];
      qb(0, 16 * j) = b_codes[j];
      sa(0, j) = a_scales[j];
      sb(0, j) = b_scales[j];
    }
    return std::pair{operand_of(qa, sa), operand_of(qb, sb)};
  };
  // S = 0.75 (P = 3·1, scales 1.0); α = 1 + k·2^-23 with k odd: α·S has 25 significant bits, the last one set.
  for (const std::uint8_t sign : {0x0, 0x8})
    for (const std::uint32_t k : {1u, 3u, 5u, 7u, 0x3FFFFFu, 0x7FFFFDu, 0x555555u, 0x2AAAABu}) {
      const auto [a, b] = single({std::uint8_t(0x3 | sign)}, {0x1}, {0x38}, {0x38});
      Options o;
      o.alpha = float_of(0x3F800000u | k);
      for (const io::DType out : kOutputs) {
        o.out = out;
        expect_device_equals_reference(gemm_case(a, b, o),
                                       fmt::format("binary32 tie k=0x{:x} sign={} {}", k, sign, describe_options(o)));
      }
    }
  // Subnormal ties: S = 0.5, α = k·2^-149 with k odd.
  for (const std::uint32_t k : {1u, 3u, 0x7FFFFFu, 0x12345u}) {
    const auto [a, b] = single({0x1}, {0x2}, {0x38}, {0x38});
    Options o;
    o.alpha = float_of(k);
    expect_device_equals_reference(gemm_case(a, b, o), fmt::format("subnormal tie k=0x{:x}", k));
  }
  // S = 1 + m·2^-8 (BF16 ties) and 1 + m·2^-11 (FP16 ties) for m = 1, 3, with α = 1, both signs:
  // block 0 gives 1 (P = 4 at scales 1), block 1 the half step (P = 4 or 12 at small scales).
  struct HalfStep {
    io::DType out;
    std::uint8_t sa, sb;  // n_a·n_b·4 = the step: 2^12 (BF16) or 2^9 (FP16)
  };
  for (const HalfStep h : {HalfStep{io::DType::BF16, 0x18, 0x18}, HalfStep{io::DType::F16, 0x08, 0x10}})
    for (const std::uint8_t b1 : {0x2, 0x5})  // 2·f4 = 2 or 6: P = 4 or 12
      for (const std::uint8_t sign : {0x0, 0x8}) {
        const auto [a, b] = single({std::uint8_t(0x2 | sign), std::uint8_t(0x2 | sign)}, {0x2, b1}, {0x38, h.sa}, {0x38, h.sb});
        Options o;
        o.alpha = 1.0f;
        o.out = h.out;
        expect_device_equals_reference(gemm_case(a, b, o), fmt::format("{} tie b1={} sign={}", io::dtype_name(h.out), b1, sign));
      }
}

// β·C = -α·S exactly (an exact zero: +0.0), and one binary32 step away: the result is the
// residual below the rounding of α·S, which only an exact sum gets right.
TEST(DeviceGemm, BetaCCancellingAlphaS) {
  REQUIRE_GPU();
  for (const io::DType out : kOutputs) {
    const std::uint32_t seed = fresh_seed();
    std::mt19937 rng(seed);
    const Operand a = random_operand(40, 272, Scales::kFinite, rng), b = random_operand(33, 272, Scales::kFinite, rng);
    Options o;
    o.alpha = float_of(0x3F800001u);                        // 24 significant bits, so that α·S is rarely representable
    const FloatMatrix d = reference_d(gemm_case(a, b, o));  // RN(α·S) in binary32
    o.out = out;
    for (const float beta : {1.0f, -1.0f, 0.5f, -3.0f}) {
      FloatMatrix c = xt::empty<float>(d.shape());
      for (std::size_t i = 0; i < d.size(); ++i) {
        float v = -d.data()[i] / beta;  // exact for β = ±1 and 0.5 unless it underflows
        if (i % 3 == 1) v = float_of(bits_of(v) + 1);
        if (i % 3 == 2) v = float_of(bits_of(v) - 1);
        c.data()[i] = v;
      }
      o.beta = beta;
      o.c = c;
      o.bias = rng() % 2 ? std::optional(random_vector(33, rng)) : std::nullopt;
      expect_device_equals_reference(gemm_case(a, b, o), fmt::format("cancellation {} seed=0x{:x}", describe_options(o), seed));
    }
  }
}

// NaN scale bytes (and NaN garbage in the padding, which must not count), α = ±inf with rows of
// S = 0, α NaN and ±0, β = 0 with a NaN C (never read), β and C infinite.
TEST(DeviceGemm, NanScalesAndSpecialAlphaBetaC) {
  REQUIRE_GPU();
  const std::uint32_t seed = fresh_seed();
  std::mt19937 rng(seed);
  for (const std::int64_t K : {48, 272}) {
    const Operand a = random_operand(70, K, Scales::kWithNan, rng, true), b = random_operand(90, K, Scales::kWithNan, rng, true);
    expect_device_equals_reference(gemm_case(a, b, {}), fmt::format("NaN scales K={} seed=0x{:x}", K, seed));
  }
  Operand a = random_operand(48, 64, Scales::kFinite, rng, true);
  const Operand b = random_operand(24, 64, Scales::kFinite, rng, true);
  for (std::int64_t r = 0; r < 48; r += 5)  // rows with S = 0: all codes ±0
    for (std::int64_t k = 0; k < 32; ++k) a.data.bytes[std::size_t(r * 32 + k)] = rng() % 2 ? 0x88 : 0x00;
  FloatMatrix c = random_matrix(48, 24, rng);
  c(0, 0) = float_of(0x7FC00000u);
  c(1, 1) = float_of(0x7F800000u);
  c(2, 2) = float_of(0xFF800000u);
  c(3, 3) = 0.0f;
  for (const std::uint32_t alpha : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x00000000u, 0x80000000u, 0x3F800000u}) {
    Options o;
    o.alpha = float_of(alpha);
    expect_device_equals_reference(gemm_case(a, b, o), fmt::format("alpha=0x{:08X} seed=0x{:x}", alpha, seed));
    for (const std::uint32_t beta : {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x3F800000u}) {
      o.beta = float_of(beta);
      o.c = c;
      expect_device_equals_reference(gemm_case(a, b, o),
                                     fmt::format("alpha=0x{:08X} beta=0x{:08X} seed=0x{:x}", alpha, beta, seed));
    }
  }
}

// α at the bottom and top of binary32: subnormal results, underflow to ±0, overflow to ±inf.
TEST(DeviceGemm, SubnormalAndOverflowingResults) {
  REQUIRE_GPU();
  for (const std::uint32_t alpha : {0x00000001u, 0x00400000u, 0x0D000000u, 0x7F000000u, 0x7F7FFFFFu, 0x72000000u})
    for (const io::DType out : kOutputs) {
      const std::uint32_t seed = fresh_seed();
      std::mt19937 rng(seed);
      const Operand a = random_operand(33, 96, Scales::kFinite, rng), b = random_operand(20, 96, Scales::kFinite, rng);
      Options o;
      o.alpha = float_of(alpha);
      o.out = out;
      expect_device_equals_reference(gemm_case(a, b, o), fmt::format("extreme {} seed=0x{:x}", describe_options(o), seed));
    }
}

// Every output dtype with and without bias and β·C, compact and swizzled scales.
TEST(DeviceGemm, EveryOutputDtypeWithBiasBetaAndSwizzledScales) {
  REQUIRE_GPU();
  for (const io::DType out : kOutputs)
    for (const bool bias : {false, true})
      for (const bool beta : {false, true})
        for (const bool swizzled : {false, true}) {
          const std::uint32_t seed = fresh_seed();
          std::mt19937 rng(seed);
          const Operand a = random_operand(130, 272, Scales::kSigned, rng, true),
                        b = random_operand(257, 272, Scales::kSigned, rng, true);
          Options o;
          o.out = out;
          o.swizzled = swizzled;
          if (bias) o.bias = random_vector(257, rng);
          if (beta) {
            o.beta = std::ldexp(1.0f + float(rng() % 1024) / 1024.0f, int(rng() % 20) - 10);
            o.c = random_matrix(130, 257, rng);
          }
          expect_device_equals_reference(gemm_case(a, b, o), fmt::format("{} seed=0x{:x}", describe_options(o), seed));
        }
}

// §3.20.4: scalar and per-row amaxes on either side (folded or two-step), bias, accumulate, dtypes.
TEST(DeviceGemm, RowScaledPostScaleEqualsReference) {
  REQUIRE_GPU();
  for (const bool row_vector : {false, true})
    for (const bool col_vector : {false, true})
      for (const io::DType out : kOutputs)
        for (const bool accumulate : {false, true}) {
          const std::uint32_t seed = fresh_seed();
          std::mt19937 rng(seed);
          const std::int64_t M = 100, N = 130, K = 272;
          Operand a = random_operand(M, K, Scales::kNearOne, rng), b = random_operand(N, K, Scales::kNearOne, rng);
          auto amaxes = [&](std::int64_t n) {
            std::vector<float> v(static_cast<std::size_t>(n));
            for (float& x : v) x = std::ldexp(1.0f + float(rng() % 8192) / 8192.0f, int(rng() % 16) - 2);
            return amax_tensor(v);
          };
          a.amax = amaxes(row_vector ? M : 1);
          b.amax = amaxes(col_vector ? N : 1);
          Options o;
          o.out = out;
          o.row_scaled = true;
          o.accumulate = accumulate;
          o.swizzled = accumulate;  // the row-scaled path with swizzled scales too
          if (accumulate) o.c = random_matrix(std::size_t(M), std::size_t(N), rng);
          if (rng() % 2) o.bias = random_vector(std::size_t(N), rng);
          expect_device_equals_reference(gemm_case(a, b, o), fmt::format("row-scaled row_vector={} col_vector={} {} seed=0x{:x}",
                                                                         row_vector, col_vector, describe_options(o), seed));
        }
}

// The device rejects what the reference rejects, with the same code.
TEST(DeviceGemm, RejectsWhatTheReferenceRejects) {
  REQUIRE_GPU();
  std::mt19937 rng(fresh_seed());
  const Operand a = random_operand(20, 64, Scales::kFinite, rng), b = random_operand(30, 64, Scales::kFinite, rng);
  std::vector<std::pair<std::string, cases::Case>> cases;
  cases.emplace_back("K mismatch", gemm_case(a, random_operand(30, 48, Scales::kFinite, rng), {}));
  cases.emplace_back("K = 8",
                     gemm_case(random_operand(20, 8, Scales::kFinite, rng), random_operand(30, 8, Scales::kFinite, rng), {}));
  cases::Case bad_scale = gemm_case(a, b, {});
  bad_scale.inputs["b_scale"] = io::from_byte_matrix(xt::zeros<std::uint8_t>({128, 8}));
  cases.emplace_back("b_scale [128, 8]", bad_scale);
  Options o;
  o.swizzled = true;
  cases::Case swizzled_shape = gemm_case(a, b, o);
  swizzled_shape.inputs["a_scale"] = io::from_byte_matrix(xt::zeros<std::uint8_t>({100, 4}));
  cases.emplace_back("swizzled a_scale [100, 4]", swizzled_shape);
  cases::Case bad_amax = gemm_case(a, b, {});
  bad_amax.inputs["a_amax"] = amax_tensor({1.0f, 2.0f});
  cases.emplace_back("a_amax of 2 values", bad_amax);
  o = {};
  o.alpha = 1.0f;
  o.row_scaled = true;
  cases.emplace_back("row_scaled with alpha", gemm_case(a, b, o));
  o = {};
  o.c = FloatMatrix(xt::zeros<float>({20, 30}));
  o.accumulate = true;
  cases.emplace_back("accumulate without row_scaled", gemm_case(a, b, o));
  o = {};
  o.beta = 1.0f;
  o.c = FloatMatrix(xt::zeros<float>({20, 31}));
  cases.emplace_back("c [20, 31]", gemm_case(a, b, o));
  o = {};
  o.bias = FloatVector(xt::zeros<float>({29}));
  cases.emplace_back("bias [29]", gemm_case(a, b, o));
  for (const auto& [what, c] : cases) {
    cases::ReferenceBackend reference;
    const cases::Outcome want = cases::run_outcome(reference, c), got = cases::run_outcome(*gpu(), c);
    EXPECT_TRUE(want.rejected) << what << ": the reference accepted it";
    EXPECT_TRUE(got.rejected) << what << ": the device accepted it";
    EXPECT_EQ(want.code, got.code) << what << ": reference: " << want.message << "; device: " << got.message;
  }
}

// K/16 above kGemmMaxBlocks (the 64-bit block sum, §3.20.3) is the kernels' own limit: an
// E_UNSUPPORTED rejection naming it, before anything touches the device (so no GPU is needed).
TEST(DeviceGemm, RejectsKBeyondTheKernelLimitNamingIt) {
  EXPECT_LT(double(device::kGemmMaxBlocks) * 121221156962304.0, 9223372036854775808.0);  // B · max|T_j| < 2^63
  EXPECT_GT(double(device::kGemmMaxBlocks + 1) * 121221156962304.0, 9223372036854775807.0);
  std::mt19937 rng(fresh_seed());
  const std::int64_t K = 16 * (device::kGemmMaxBlocks + 1);
  const cases::Case c = gemm_case(random_operand(1, K, Scales::kNearOne, rng), random_operand(1, K, Scales::kNearOne, rng), {});
  const auto rows = device::device_runners();
  const auto row = std::find_if(rows.begin(), rows.end(), [](const device::DeviceRow& r) { return r.op == "gemm"; });
  ASSERT_NE(row, rows.end());
  try {
    row->run(c, nullptr);
    ADD_FAILURE() << "K=" << K << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::E_UNSUPPORTED) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(16 * device::kGemmMaxBlocks)), std::string::npos) << e.what();
  }
}

// ---- the MMA modes (§3.20.6) -------------------------------------------------------------------

constexpr const char* kMmaModes[] = {"mma-sm100", "mma-sm120"};

// Shapes off the tiles and K off the 64-element chunk, every kind of scale bytes (near one: the
// kernel's exact chunks; the whole E4M3 range: chunks that truncate terms, left to the exact pass;
// negative bytes, read as UE4M3; NaN), every output dtype, α, β·C, bias and swizzled scales, and
// B copying A with half of each row's blocks negated (whole groups cancelling to P = 0).
TEST(DeviceGemmMma, EqualsReferenceOnShapesScalesAndEpilogues) {
  REQUIRE_GPU();
  const std::tuple<std::int64_t, std::int64_t, std::int64_t> shapes[] = {{1, 1, 16},      {17, 257, 48},   {100, 130, 80},
                                                                         {128, 128, 272}, {130, 17, 1040}, {257, 100, 4096}};
  int cases = 0;
  for (const char* mode : kMmaModes)
    for (const auto& [M, N, K] : shapes)
      for (const Scales kind : {Scales::kNearOne, Scales::kFinite, Scales::kSigned, Scales::kWithNan}) {
        const std::uint32_t seed = fresh_seed();
        std::mt19937 rng(seed);
        const Operand a = random_operand(M, K, kind, rng, cases % 2 == 1);
        Operand b = random_operand(N, K, kind, rng);
        const bool cancel = cases % 5 == 2 && M == N;
        if (cancel) {  // row r of B: row r of A, its second half of blocks negated
          ByteMatrix bd = io::to_byte_matrix(a.data, "test", "a_data");
          for (std::size_t r = 0; r < bd.shape(0); ++r)
            for (std::size_t k = bd.shape(1) / 2; k < bd.shape(1); ++k) bd(r, k) ^= 0x88;
          b = {io::from_byte_matrix(bd), a.scale, a.amax};
        }
        Options o;
        o.accumulation = mode;
        o.out = kOutputs[cases % 3];
        o.swizzled = cases % 4 == 3;
        if (cases % 2) o.alpha = std::ldexp(1.0f + float(rng() % 4096) / 4096.0f, int(rng() % 40) - 30);
        if (cases % 3 == 1) {
          o.beta = cases % 2 ? -1.0f : std::ldexp(1.0f + float(rng() % 16) / 16.0f, int(rng() % 8) - 4);
          o.c = random_matrix(std::size_t(M), std::size_t(N), rng);
        }
        if (cases % 4 == 1) o.bias = random_vector(std::size_t(N), rng);
        expect_device_equals_reference(
            gemm_case(a, b, o), fmt::format("gemm {}x{}x{} scales={} cancel={} {} seed=0x{:x}", M, N, K, kScalesName[int(kind)],
                                            cancel, describe_options(o), seed));
        ++cases;
      }
}

// A chain of 1,024 instructions, several raster groups, quantized operands (α from their amaxes),
// and the row-scaled post-scale around the MMA product.
TEST(DeviceGemmMma, EqualsReferenceOnLongChainsQuantizedOperandsAndRowScaling) {
  REQUIRE_GPU();
  for (const char* mode : kMmaModes) {
    expect_long_k_and_raster_groups(mode);
    const std::uint32_t seed = fresh_seed();
    std::mt19937 rng(seed);
    const Operand a = quantized_operand(144, 1040, rng), b = quantized_operand(272, 1040, rng);
    Options o;
    o.accumulation = mode;
    o.out = io::DType::BF16;
    expect_device_equals_reference(gemm_case(a, b, o), fmt::format("gemm {} quantized 144x272x1040 seed=0x{:x}", mode, seed));
    o.row_scaled = true;
    o.out = io::DType::F32;
    Operand ar = a;
    std::vector<float> rows(144);
    for (float& v : rows) v = std::ldexp(1.0f + float(rng() % 256) / 256.0f, int(rng() % 6));
    ar.amax = amax_tensor(rows);
    expect_device_equals_reference(gemm_case(ar, b, o), fmt::format("gemm {} row-scaled seed=0x{:x}", mode, seed));
  }
}

}  // namespace
}  // namespace nvfp4
