// The grouped (MoE) layout and GEMM (docs/NUMERICS.md §2.4.3, §3.20.5): outer-axis groups of whole
// 128-row bands are one whole-extent swizzle, inner-axis groups are not; unswizzling inverts; an
// M-grouped GEMM is each group's own GEMM, row-scaled included; empty token ranges give +0.0.
#include <gtest/gtest.h>

#include <random>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "io/tensor_convert.h"
#include "reference/error.h"
#include "reference/gemm.h"
#include "reference/grouped_layout.h"
#include "reference/layout.h"
#include "reference/scale_layout.h"

namespace nvfp4 {
namespace {

ByteMatrix random_bytes(std::size_t rows, std::size_t cols, std::mt19937& rng) {
  ByteMatrix m = xt::zeros<std::uint8_t>({rows, cols});
  for (std::uint8_t& b : m) b = std::uint8_t(rng());
  return m;
}

std::vector<std::uint8_t> bytes_of(const ByteMatrix& m) { return {m.begin(), m.end()}; }

TEST(GroupedLayout, OuterGroupsOfWhole128RowBandsAreOneWholeExtentSwizzle) {
  std::mt19937 rng(std::random_device{}());
  const ByteMatrix compact = random_bytes(384, 8, rng);
  EXPECT_EQ(grouped_swizzle(compact, GroupAxis::kOuter, {128, 256}), bytes_of(swizzle_scales(compact)));
}

TEST(GroupedLayout, InnerGroupsAreSwizzledOnTheirOwnExtentNotAsOneWhole) {
  std::mt19937 rng(std::random_device{}());
  const std::vector<std::int64_t> sizes = {80, 32, 48};  // 5, 2 and 3 scale columns
  const ByteMatrix compact = random_bytes(128, std::size_t(scale_cols(160)), rng);
  const std::vector<std::uint8_t> grouped = grouped_swizzle(compact, GroupAxis::kInner, sizes);
  // Group 1 (columns 5, 6) is its own [128, 4] block after group 0's [128, 8], swizzled alone.
  ByteMatrix g1 = xt::zeros<std::uint8_t>({128, 4});
  for (std::size_t r = 0; r < 128; ++r)
    for (std::size_t c = 0; c < 2; ++c) g1(r, c) = compact(r, 5 + c);
  const ByteMatrix s1 = swizzle_scales(g1);
  EXPECT_TRUE(std::equal(s1.begin(), s1.end(), grouped.begin() + 128 * 8));
  EXPECT_EQ(grouped.size(), std::size_t(128 * (8 + 4 + 4)));
  EXPECT_NE(grouped, bytes_of(swizzle_scales(compact))) << "a whole-extent swizzle is wrong here";
  const ByteMatrix back = grouped_unswizzle(grouped, GroupAxis::kInner, sizes, 128);
  for (std::size_t r = 0; r < 128; ++r)
    for (std::size_t c = 0; c < 10; ++c) EXPECT_EQ(back(r, c), compact(r, c));
}

TEST(GroupedLayout, GroupExtentsAreCheckedWithE_GROUPS) {
  try {
    check_groups("grouped_swizzle", {16, 24}, 40);
    ADD_FAILURE() << "24 is not a multiple of 16";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::E_GROUPS);
  }
  EXPECT_THROW(check_groups("grouped_swizzle", {16, 16}, 48), Error);
}

// A quantized operand [rows, K] from random data, with per-row amaxes when row_scaled.
cases::TensorMap operand(std::int64_t rows, std::int64_t K, bool row_scaled, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> x(std::size_t(rows * K));
  for (float& v : x) v = normal(rng);
  cases::Case q = cases::make_case("quantize");
  q.params.set("row_scaled", row_scaled);
  q.inputs["x"] = io::make_tensor_from<float>(io::DType::F32, {rows, K}, x);
  return cases::ReferenceBackend().run(q);
}

io::Tensor rows_of(const io::Tensor& t, std::int64_t r0, std::int64_t n) {
  const std::size_t row = std::size_t(t.numel() / t.shape[0]) * io::dtype_size(t.dtype);
  io::Tensor out{
      t.dtype, t.shape, {t.bytes.begin() + std::ptrdiff_t(r0 * row), t.bytes.begin() + std::ptrdiff_t((r0 + n) * row)}};
  out.shape[0] = n;
  return out;
}

TEST(GroupedGemm, MGroupedRowScaledIsEachGroupsOwnRowScaledGemm) {
  std::mt19937 rng(std::random_device{}());
  const std::vector<std::int64_t> sizes = {32, 0, 48};
  const cases::TensorMap a = operand(80, 64, true, rng);
  std::vector<cases::TensorMap> b;
  for (int g = 0; g < 3; ++g) b.push_back(operand(32, 64, true, rng));
  cases::Case c = cases::make_case("grouped_gemm");
  c.params.set("group_sizes", sizes);
  c.params.set("row_scaled", true);
  c.inputs["a_data"] = a.at("data");
  c.inputs["a_scale"] = a.at("scale");
  c.inputs["a_amax"] = a.at("amax");
  io::Tensor bd{io::DType::U8, {3, 32, 32}, {}}, bs{io::DType::U8, {3, 128, 4}, {}}, ba{io::DType::F32, {3, 32}, {}};
  for (const cases::TensorMap& t : b) {
    bd.bytes.insert(bd.bytes.end(), t.at("data").bytes.begin(), t.at("data").bytes.end());
    bs.bytes.insert(bs.bytes.end(), t.at("scale").bytes.begin(), t.at("scale").bytes.end());
    ba.bytes.insert(ba.bytes.end(), t.at("amax").bytes.begin(), t.at("amax").bytes.end());
  }
  c.inputs["b_data"] = bd;
  c.inputs["b_scale"] = bs;
  c.inputs["b_amax"] = ba;
  const FloatMatrix d = io::to_float_matrix(cases::ReferenceBackend().run(c).at("d"), "t", "d");
  ASSERT_EQ(d.shape(0), 80u);
  // Group 0 is rows [0, 32) with weight 0; group 2 rows [32, 80) with weight 2: plain gemm cases.
  for (const auto& [g, r0, n] : {std::tuple{0, 0, 32}, std::tuple{2, 32, 48}}) {
    cases::Case k = cases::make_case("gemm");
    k.params.set("row_scaled", true);
    k.inputs["a_data"] = rows_of(a.at("data"), r0, n);
    ByteMatrix s = xt::zeros<std::uint8_t>({128, 4});
    const ByteMatrix whole = io::to_byte_matrix(a.at("scale"), "t", "s");
    for (int r = 0; r < n; ++r)
      for (int j = 0; j < 4; ++j) s(r, j) = whole(r0 + r, j);
    k.inputs["a_scale"] = io::from_byte_matrix(s);
    k.inputs["a_amax"] = rows_of(a.at("amax"), r0, n);
    k.inputs["b_data"] = b[g].at("data");
    k.inputs["b_scale"] = b[g].at("scale");
    k.inputs["b_amax"] = b[g].at("amax");
    const FloatMatrix dg = io::to_float_matrix(cases::ReferenceBackend().run(k).at("d"), "t", "d");
    for (int r = 0; r < n; ++r)
      for (int col = 0; col < 32; ++col) EXPECT_EQ(bits_of(d(r0 + r, col)), bits_of(dg(r, col))) << g << " " << r << " " << col;
  }
}

TEST(GroupedGemm, AnEmptyTokenRangeContractsNothingAndGivesPlusZero) {
  std::mt19937 rng(std::random_device{}());
  const cases::TensorMap a = operand(32, 32, false, rng), b = operand(16, 32, false, rng);  // "columnwise" copies [M, T], [N, T]
  cases::Case c = cases::make_case("grouped_gemm");
  c.params.set("grouping", std::string("k"));
  c.params.set("group_sizes", std::vector<std::int64_t>{32, 0});
  c.inputs["a_data"] = a.at("data");
  c.inputs["a_scale"] = a.at("scale");
  c.inputs["a_amax"] = io::from_float_vector(FloatVector({2.0f, 3.0f}));
  c.inputs["b_data"] = b.at("data");
  c.inputs["b_scale"] = b.at("scale");
  c.inputs["b_amax"] = io::from_float_vector(FloatVector({5.0f, 7.0f}));
  const io::Tensor d = cases::ReferenceBackend().run(c).at("d");
  ASSERT_EQ(d.shape, (std::vector<std::int64_t>{2, 32, 16}));
  for (std::size_t i = 32 * 16 * 4; i < d.bytes.size(); ++i) EXPECT_EQ(d.bytes[i], 0) << "group 1 is all +0.0";
}

TEST(GroupedLimits, GroupExtentsWhoseSumWrapsAroundAreRefused) {
  // Four extents of 2^62 wrap a 64-bit sum to 0, so the five would "sum" to the axis's 16.
  const std::int64_t huge = std::int64_t{1} << 62;
  try {
    check_groups("grouped_swizzle", {huge, huge, huge, huge, 16}, 16);
    FAIL() << "extents that sum to 2^64 + 16 were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::E_GROUPS);
  }
}

}  // namespace
}  // namespace nvfp4
