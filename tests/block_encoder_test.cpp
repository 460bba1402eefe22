// The fast block encoder (reference/block_encoder.h) is formulas.h's encode_element: every
// combination of the knobs it fixes at compile time, on special values and fresh random bits.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "reference/block_encoder.h"

namespace nvfp4 {
namespace {

// Values at every E2M1 decision point and every special class, for the x and the factor.
const std::vector<std::uint32_t> kSpecialBits = {
    0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF,
    0x00000001, 0x807FFFFF, 0x3E800000, 0x3F400000, 0x3FA00000, 0x3FE00000, 0x40200000, 0x40600000,
    0x40A00000, 0xBE800000, 0xBF400000, 0xC0A00000, 0x40C00000, 0x40C00001, 0x3E7FFFFF, 0x3E800001,
    0x7F7FFFFF, 0x3F800000, 0x3F000000, 0xC0C00000, 0x40400000, 0x40800000, 0x3FC00000, 0x3FFFFFFF};

void expect_same_codes(const Profile& p, const ElementEncoder& e, const float* x, const char* what) {
  std::uint8_t fast[8];
  block_codes(p, e)(e.factor, x, fast);
  for (int i = 0; i < 8; ++i) {
    const std::uint8_t plain = pack_nibbles(encode_element(p, e, x[2 * i]), encode_element(p, e, x[2 * i + 1]));
    ASSERT_EQ(int(fast[i]), int(plain)) << what << ": op " << int(e.op) << ", yclamp " << int(p.yclamp) << ", e2m1 "
                                        << int(p.e2m1) << ", factor bits " << std::hex << bits_of(e.factor) << ", x bits "
                                        << bits_of(x[2 * i]) << " " << bits_of(x[2 * i + 1]);
  }
}

TEST(BlockEncoder, EqualsEncodeElementForEveryKnobCombination) {
  std::mt19937 rng(std::random_device{}());
  for (int op = 0; op <= int(ElementEncoder::Op::ALL_ZERO); ++op)
    for (int clamp = 0; clamp <= int(YClamp::FCLAMP6); ++clamp)
      for (int enc = 0; enc <= int(E2M1Encoder::VALUE_TABLE); ++enc) {
        Profile p{};
        p.yclamp = YClamp(clamp);
        p.e2m1 = E2M1Encoder(enc);
        // Special x values under special and ordinary factors.
        for (const std::uint32_t fb :
             {0x3F800000u, 0x40000000u, 0x3E2AAAABu, 0x00000000u, 0x7F800000u, 0x7FC00000u, 0x00800000u}) {
          const ElementEncoder e{ElementEncoder::Op(op), float_of(fb)};
          for (std::size_t s = 0; s + 16 <= kSpecialBits.size(); s += 16) {
            float x[16];
            for (int i = 0; i < 16; ++i) x[i] = float_of(kSpecialBits[s + std::size_t(i)]);
            expect_same_codes(p, e, x, "special values");
          }
        }
        // Fresh random: any bit pattern, and values near the E2M1 grid scaled by the factor.
        for (int trial = 0; trial < 400; ++trial) {
          const ElementEncoder e{
              ElementEncoder::Op(op),
              trial % 2 ? float_of(rng()) : std::ldexp(1.0f + float(rng() % 1024) / 1024.0f, int(rng() % 40) - 20)};
          float x[16];
          for (int i = 0; i < 16; ++i) {
            const float grid = std::ldexp(float(rng() % 13) * 0.5f, 0) + float(int(rng() % 3) - 1) * std::ldexp(1.0f, -22);
            x[i] = trial % 3 == 0 ? float_of(rng()) : (rng() % 2 ? -grid : grid) / e.factor;
          }
          expect_same_codes(p, e, x, "random values");
        }
      }
}

}  // namespace
}  // namespace nvfp4
