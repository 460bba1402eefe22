// The fault catalogue (docs/spec/faults.md) and the verdicts built on it: each formula step of a
// pattern against values worked out by hand from NUMERICS.md, and each pattern named as the first
// cause of a mismatch that its own variant produces on fresh random cases (NVFP4_TEST_SEED=N replays
// the run whose failure message printed seed N). The labelled fault suite in tests/faults/ checks
// the same with faults written independently, through a worker.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <set>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/explain.h"
#include "compare/fault_catalogue.h"
#include "fuzz/campaign.h"
#include "io/tensor_convert.h"
#include "reference/fault_steps.h"
#include "tests/support/campaign_seed.h"
#include "vectors/generate.h"

namespace nvfp4 {
namespace {

using faults::e2m1_no_saturation;
using faults::e2m1_ties_away;
using faults::e2m1_toward_zero;

TEST(FaultSteps, E2m1RoundingsDeviateOnlyWhereTheirPatternSays) {
  EXPECT_EQ(e2m1_ties_away(E2M1Encoder::HW, 0.25f), 0x1);          // RNE gives 0x0
  EXPECT_EQ(e2m1_ties_away(E2M1Encoder::HW, -2.5f), 0xD);          // -3, RNE gives -2 (0xC)
  EXPECT_EQ(e2m1_ties_away(E2M1Encoder::HW, 5.0f), 0x7);           // 6, RNE gives 4
  EXPECT_EQ(e2m1_ties_away(E2M1Encoder::HW, 0.3f), 0x1);           // no tie: as the encoder
  EXPECT_EQ(e2m1_toward_zero(E2M1Encoder::HW, 0.9f), 0x1);         // 0.5, RNE gives 1
  EXPECT_EQ(e2m1_toward_zero(E2M1Encoder::HW, 5.9f), 0x6);         // 4
  EXPECT_EQ(e2m1_toward_zero(E2M1Encoder::HW, 7.0f), 0x7);         // saturates at 6
  EXPECT_EQ(e2m1_toward_zero(E2M1Encoder::HW, -0.4f), 0x8);        // -0 under HW
  EXPECT_EQ(e2m1_toward_zero(E2M1Encoder::TABLE_TE, -0.4f), 0x0);  // TE's table has no -0
  EXPECT_EQ(e2m1_no_saturation(E2M1Encoder::HW, 6.0f), 0x7);
  EXPECT_EQ(e2m1_no_saturation(E2M1Encoder::HW, 6.5f), 0x0);
  EXPECT_EQ(e2m1_no_saturation(E2M1Encoder::HW, -7.0f), 0x8);
  EXPECT_EQ(e2m1_no_saturation(E2M1Encoder::HW, INFINITY), 0x0);
  EXPECT_EQ(e2m1_no_saturation(E2M1Encoder::HW, NAN), 0x7);
}

TEST(FaultSteps, E4m3TiesUpAndSubnormalsDecodedAsNormal) {
  // 0.1953125 is halfway between 0x24 (0.1875) and 0x25 (0.203125): RNE takes the even 0x24.
  EXPECT_EQ(e4m3sat(0.1953125f), 0x24);
  EXPECT_EQ(faults::e4m3_ties_up(E4M3Cast::SAT, 0.1953125f), 0x25);
  EXPECT_EQ(faults::e4m3_ties_up(E4M3Cast::SAT, 0.19f), e4m3sat(0.19f));
  EXPECT_EQ(faults::e4m3_ties_up(E4M3Cast::SAT, 464.0f), 0x7E);            // no larger finite value
  EXPECT_EQ(faults::e4m3_decode_subnormal_as_normal(0x01), 1.125f / 128);  // m * 2^-9 would be 2^-9
  EXPECT_EQ(faults::e4m3_decode_subnormal_as_normal(0x87), -1.875f / 128);
  EXPECT_EQ(faults::e4m3_decode_subnormal_as_normal(0x00), 1.0f / 128);  // no exponent-0 branch at all
  EXPECT_EQ(faults::e4m3_decode_subnormal_as_normal(0x08), 1.0f / 64);   // normal: as specified
}

TEST(FaultSteps, MasksLayoutsAndSpans) {
  EXPECT_EQ(faults::reverse_mask_bits(0x0001), 0x8000);
  EXPECT_EQ(faults::reverse_mask_bits(0xD7E8), 0x17EB);
  ByteMatrix compact = xt::zeros<std::uint8_t>({128, 4});
  compact(1, 0) = 0x11;
  compact(32, 3) = 0x22;
  const ByteMatrix plain = faults::swizzle_scales_plain_rows(compact);
  EXPECT_EQ(plain.data()[4], 0x11);  // row 1 right after row 0, where the specified layout has row 32
  EXPECT_EQ(plain.data()[32 * 4 + 3], 0x22);
  EXPECT_EQ(faults::unswizzle_scales_plain_rows(plain), compact);
  FloatMatrix a = {{1.0f, 3.0f, 2.0f}};
  faults::block_amax_span_32(AmaxRule::IGNORE, a);
  EXPECT_EQ(a, (FloatMatrix{{3.0f, 3.0f, 2.0f}}));
}

// Whether variant v of pattern p changes case c's outputs, and the outputs it gives.
std::optional<cases::TensorMap> changed_outputs(const compare::FaultPattern& p, const cases::Case& c) {
  if (!p.applies(c)) return std::nullopt;
  compare::Variant v{c, {}, {}, {}};
  p.apply(v);
  cases::TensorMap expected, actual;
  try {
    expected = cases::ReferenceBackend().run(c);
    actual = compare::run_variant(v, c);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const bool same = std::equal(expected.begin(), expected.end(), actual.begin(), actual.end(), [](const auto& a, const auto& b) {
    return a.first == b.first && a.second.shape == b.second.shape && a.second.bytes == b.second.bytes;
  });
  if (same) return std::nullopt;
  return actual;
}

// A random case of the pattern's operation, small enough to be diagnosed, that the pattern's
// variant changes. A pattern whose condition random draws seldom meet (gs-no-zero-guard needs
// amax 0 under a TE profile) may find none in 400 draws: then the first level-1 conformance vector
// of the operation that it changes (docs/vectors.md), whose classes meet every pattern's condition.
std::optional<std::pair<cases::Case, cases::TensorMap>> exercised_case(const compare::FaultPattern& p, std::string op,
                                                                       std::uint64_t seed) {
  fuzz::CaseSpace space;
  space.ops = {op};
  space.max_dim = 48;
  for (const cases::CaseRecord& r : fuzz::sample_cases(space, 400, seed)) {
    std::int64_t elements = 0;  // the diagnosis searches cases up to 2^20 input elements
    for (const auto& [name, t] : r.c.inputs) elements += t.numel();
    if (elements > (1 << 20)) continue;
    if (auto actual = changed_outputs(p, r.c)) return std::pair{r.c, *actual};
  }
  for (const vectors::VectorSet& set : vectors::generate({vectors::Level::k1, seed, {op}, {}}))
    for (const vectors::Vector& v : set.vectors)
      if (auto actual = changed_outputs(p, v.c)) return std::pair{v.c, *actual};
  return std::nullopt;
}

TEST(FaultCatalogue, EachVariantIsNamedFirstOnAMismatchItProduces) {
  const std::uint64_t seed = test_support::campaign_seed();
  for (const compare::FaultPattern& p : compare::fault_patterns()) {
    if (!p.apply) continue;                              // detectors: below
    for (std::string_view ops = p.ops; !ops.empty();) {  // each operation the pattern applies to
      const std::string op(ops.substr(0, ops.find(',')));
      ops.remove_prefix(std::min(ops.size(), op.size() + 2));
      SCOPED_TRACE(std::string(p.name) + " through " + op + ", seed " + std::to_string(seed));
      const auto found = exercised_case(p, op, seed);
      if (!found) {
        ADD_FAILURE() << "no case of " << op << " in 400 draws or in the level-1 vectors exercises the pattern";
        continue;
      }
      const auto& [c, actual] = *found;
      const compare::Explanation x = compare::explain(c, cases::ReferenceBackend().run(c), actual);
      ASSERT_FALSE(x.causes.empty()) << x.verdict;
      const bool named = std::any_of(x.causes.begin(), x.causes.end(), [&](const auto& k) { return k.name == p.name; });
      EXPECT_TRUE(named) << x.verdict;
      EXPECT_TRUE(x.causes.front().exact) << x.verdict;
      EXPECT_NE(x.verdict.find(x.causes.front().name), std::string::npos) << x.verdict;
    }
  }
}

// NUMERICS.md §3.6 with g = 2688 (S = 1): A = 1.171875 gives t = RN(A * r6) = 0.1953125, halfway
// between E4M3 0x24 (0.1875) and 0x25 (0.203125). A cast that rounds ties up writes 0x25; the
// verdict names the pattern and the tie with its operands.
TEST(FaultCatalogue, TheVerdictNamesTheTieThatDecidesAScaleByte) {
  cases::Case c = cases::make_case("quantize");
  c.params.set("amax", cases::F32Bits{bits_of(2688.0f)});
  FloatMatrix x = xt::zeros<float>({16, 16});
  x(0, 0) = 1.171875f;
  x(0, 1) = -0.5f;
  c.inputs["x"] = io::from_float_matrix(x, io::FloatType::F32);
  const cases::TensorMap expected = cases::ReferenceBackend().run(c);
  ASSERT_EQ(expected.at("scale").bytes[0], 0x24);
  compare::Variant v{c, {}, {}, {}};  // the faulty cast; the codes follow the larger scale
  compare::find_fault_pattern("e4m3-ties-up")->apply(v);
  const cases::TensorMap actual = compare::run_variant(v, c);
  ASSERT_EQ(actual.at("scale").bytes[0], 0x25);
  const compare::Explanation e = compare::explain(c, expected, actual);
  ASSERT_FALSE(e.causes.empty()) << e.verdict;
  EXPECT_EQ(e.causes.front().name, "e4m3-ties-up") << e.verdict;
  EXPECT_NE(e.verdict.find("the pre-cast scale 0.1953125 of rowwise block (0, 0) lies exactly halfway between E4M3 0x24 and "
                           "0x25; the expected side rounds to even (0x24)"),
            std::string::npos)
      << e.verdict;
}

// A tensor too large to search whole (a real checkpoint's weight, say) is diagnosed on the 16-row
// band (16 columns, for the columnwise copy) of its first mismatching block, run alone with the
// tensor's amax.
TEST(FaultCatalogue, ALargeTensorIsDiagnosedOnItsFirstMismatchingBand) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> n;
  FloatMatrix x = xt::empty<float>({std::size_t(1040), std::size_t(1024)});  // more than 2^20 elements
  for (float& v : x) v = n(rng);
  for (const char* direction : {"rowwise", "columnwise"})
    for (const char* layout : {"compact", "swizzled"}) {
      SCOPED_TRACE(std::string(direction) + ", " + layout);
      cases::Case c = cases::make_case("quantize");
      c.params.set("direction", std::string(direction));
      c.params.set("scale_layout", std::string(layout));
      c.inputs["x"] = io::from_float_matrix(x, io::FloatType::F32);
      const cases::TensorMap expected = cases::ReferenceBackend().run(c);
      // A quantizer whose block amax spans 32 elements: random data shows it in the first band.
      compare::Variant v{c, {}, {}, {}};
      compare::find_fault_pattern("block-amax-span-32")->apply(v);
      const compare::Explanation e = compare::explain(c, expected, compare::run_variant(v, c));
      ASSERT_FALSE(e.causes.empty()) << e.verdict;
      EXPECT_EQ(e.causes.front().name, "block-amax-span-32") << e.verdict;
      EXPECT_TRUE(e.causes.front().exact) << e.verdict;
      EXPECT_TRUE(e.verdict.starts_with(std::string(direction) == "rowwise"
                                            ? "in rows 0..15, run alone with the tensor's amax: "
                                            : "in columns 0..15 of x (the columnwise copy), run alone"))
          << e.verdict;
    }
}

TEST(FaultCatalogue, UnzeroedScalePaddingIsDetected) {
  cases::Case c = cases::make_case("quantize");
  FloatMatrix x = xt::ones<float>({16, 32});
  c.inputs["x"] = io::from_float_matrix(x, io::FloatType::F32);
  const cases::TensorMap expected = cases::ReferenceBackend().run(c);
  cases::TensorMap actual = expected;
  actual.at("scale").bytes.back() = 0xA5;  // row 127: padding
  const compare::Explanation e = compare::explain(c, expected, actual);
  ASSERT_FALSE(e.causes.empty()) << e.verdict;
  EXPECT_EQ(e.causes.front().name, "scale-padding-unzeroed") << e.verdict;
}

TEST(FaultCatalogue, NamesAreUniqueAndDocumented) {
  std::ifstream in(std::string(NVFP4_SOURCE_DIR) + "/docs/spec/faults.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(doc.empty());
  std::set<std::string_view> names;
  for (const compare::FaultPattern& p : compare::fault_patterns()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_NE(doc.find("| `" + std::string(p.name) + "` | " + std::string(p.ops) + " |"), std::string::npos)
        << p.name << ": no row of docs/spec/faults.md with its operations";
    EXPECT_EQ(compare::find_fault_pattern(p.name), &p);
    EXPECT_NE(bool(p.apply), bool(p.detects)) << p.name << ": a variant or a detector";
  }
}

}  // namespace
}  // namespace nvfp4
