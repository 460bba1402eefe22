// The 16 codes of one block under round-to-nearest, fast: formulas.h's encode_element with the
// knobs that pick its formula (the encoder's operation, [knob YCLAMP], [knob E2M1]) fixed at
// compile time, so that the compiler drops the per-element switches and can vectorize the block.
// The arithmetic is encode_element's, unchanged; tests/block_encoder_test.cpp checks every
// combination against it.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "reference/e2m1_table.h"
#include "reference/formulas.h"

namespace nvfp4 {

using BlockCodes = void (*)(float factor, const float* x, std::uint8_t* packed);

namespace block_encoder_detail {

// flatten: every call inlined, so that the fixed knobs fold the switches away.
template <ElementEncoder::Op kOp, YClamp kClamp, E2M1Encoder kEncoder>
[[gnu::flatten]] void codes(float factor, const float* x, std::uint8_t* packed) {
  Profile p{};
  p.yclamp = kClamp;
  p.e2m1 = kEncoder;
  const ElementEncoder e{kOp, factor};
  std::uint8_t c[16];
  if constexpr (kEncoder == E2M1Encoder::HW && kOp != ElementEncoder::Op::ALL_ZERO && kOp != ElementEncoder::Op::ARGMIN) {
    const auto& hw = e2m1_hw_codes();  // the hardware encoder without its data-dependent branches
    std::uint32_t index[16];           // arithmetic first, in a loop of its own that the compiler vectorizes
    for (int i = 0; i < 16; ++i) index[i] = e2m1_table_index(scale_element(p, e, x[i]));
    for (int i = 0; i < 16; ++i) c[i] = hw[index[i]];
  } else {
    for (int i = 0; i < 16; ++i) c[i] = encode_element(p, e, x[i]);
  }
  for (int i = 0; i < 8; ++i) packed[i] = pack_nibbles(c[2 * i], c[2 * i + 1]);
}

constexpr int kOps = 5, kClamps = 3, kEncoders = 7;  // the enumerators of each knob
static_assert(int(ElementEncoder::Op::ARGMIN) == kOps - 1 && int(YClamp::FCLAMP6) == kClamps - 1 &&
                  int(E2M1Encoder::BF16_TORCH) == kEncoders - 1,
              "a knob gained a value: extend the table");

template <std::size_t... I>
constexpr std::array<BlockCodes, sizeof...(I)> table(std::index_sequence<I...>) {
  return {&codes<ElementEncoder::Op(I / (kClamps * kEncoders)), YClamp(I / kEncoders % kClamps), E2M1Encoder(I % kEncoders)>...};
}

inline constexpr auto kTable = table(std::make_index_sequence<kOps * kClamps * kEncoders>());

}  // namespace block_encoder_detail

// The function that encodes a block with encoder `e` under profile p: packed[i] holds elements
// 2i (low nibble) and 2i + 1 of x[0..16), each encode_element(p, e, x) with e.factor.
inline BlockCodes block_codes(const Profile& p, const ElementEncoder& e) {
  using namespace block_encoder_detail;
  return kTable[(std::size_t(e.op) * kClamps + std::size_t(p.yclamp)) * kEncoders + std::size_t(p.e2m1)];
}

}  // namespace nvfp4
