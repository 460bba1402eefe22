// A consumer of the installed nvfp4verify package: quantizes a 16x32 matrix with the "te" profile
// through nvfp4::quantize and checks the result against values worked out by hand, then
// dequantizes and checks every element against the dequantization chain recomputed here, and
// round-trips the packed data through a safetensors image (nvfp4verify::tensor_convert, ::io).
// Prints each check; exits 1 when any fails.
//
// Hand-worked values (RN = round to nearest binary32):
//   global amax g = 2688 (element [15][31]), so S = RN(2688/g) = 1 and Sd = RN(1/S) = 1;
//   block scale t = RN(A * RN(S * RN(1/6))): A = 6 -> 1.0 (E4M3 0x38), A = 0.75 -> 0.125 (0x20),
//   A = 1.5 -> 0.25 (0x28), A = 2688 -> 448 (0x7E);
//   with sf = 1 the element factor RN(1/RN(sf*Sd)) is 1, so y = x and the E2M1 code is x rounded
//   to the grid {0, 0.5, 1, 1.5, 2, 3, 4, 6}, ties to the even code, -0 and tiny negatives -> 0x8;
//   the lower element index goes into the low nibble.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "io/tensor_convert.h"
#include "reference/dequantize.h"
#include "reference/profiles.h"
#include "reference/quantize.h"

namespace {

int g_checks = 0;
int g_failures = 0;

void check(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) ++g_failures;
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
}

std::string hex(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", v);
  return buf;
}

// Exact value of an E2M1 code (bit 3 = sign).
float e2m1_value(unsigned code) {
  static const float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float m = kMagnitude[code & 0x7u];
  return (code & 0x8u) ? -m : m;
}

// Exact value of a finite E4M3 byte (bias 7, subnormals 2^-9 apart).
float e4m3_value(unsigned byte) {
  const unsigned e = (byte >> 3) & 0xFu;
  const unsigned m = byte & 0x7u;
  const float mag = e == 0 ? std::ldexp(float(m), -9) : std::ldexp(1.0f + float(m) / 8.0f, int(e) - 7);
  return (byte & 0x80u) ? -mag : mag;
}

bool same_bits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

// The bytes of packed row r, block b (8 bytes = 16 codes).
std::vector<unsigned> block_bytes(const nvfp4::ByteMatrix& data, std::size_t r, std::size_t b) {
  std::vector<unsigned> out;
  for (std::size_t j = 0; j < 8; ++j) out.push_back(data(r, 8 * b + j));
  return out;
}

std::string bytes_text(const std::vector<unsigned>& v) {
  std::string s;
  for (unsigned x : v) s += (s.empty() ? "" : " ") + hex(x);
  return s;
}

}  // namespace

int main() {
  constexpr std::size_t M = 16, K = 32;

  // ---- profiles ----
  const nvfp4::NamedProfile* te = nvfp4::find_profile("te");
  check(te != nullptr && te->name == "te", "find_profile(\"te\") finds the profile");
  check(nvfp4::find_profile("no-such-profile") == nullptr, "find_profile of an unknown name is nullptr");
  if (te == nullptr) return 1;

  // ---- input: a fixed pattern in [-1.5, 1.5] and four hand-worked blocks ----
  nvfp4::FloatMatrix x({M, K});
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t c = 0; c < K; ++c) x(r, c) = float(int((r * K + c) % 13) - 6) * 0.25f;
  // Row 0, block 0: the 16 E2M1 values in code order (A = 6, sf = 1): codes 0x0..0xF.
  const float grid[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  // Row 1, block 0: rounding to the grid (A = 6, sf = 1, y = x); ties go to the even code.
  const float rounding[16] = {6.0f,  2.4f, 2.6f, 0.24f, 0.26f,  4.9f, 5.1f, -2.6f,
                              0.75f, 2.5f, 5.0f, 1.25f, -1.75f, 3.5f, 0.1f, -0.1f};
  const unsigned rounding_codes[16] = {0x7, 0x4, 0x5, 0x0, 0x1, 0x6, 0x7, 0xD, 0x2, 0x4, 0x6, 0x2, 0xC, 0x6, 0x0, 0x8};
  for (std::size_t i = 0; i < 16; ++i) {
    x(0, i) = grid[i];
    x(1, i) = rounding[i];
    x(2, i) = grid[i] * 0.125f;  // Row 2, block 0: the grid scaled by 2^-3 (A = 0.75, sf = 0.125, factor 8).
  }
  x(15, 31) = 2688.0f;  // the global amax: S = 1

  nvfp4::QuantizeOptions options{.profile = te->knobs};
  const nvfp4::Quantization q = nvfp4::quantize(x, options);

  // ---- shapes ----
  check(q.rowwise.has_value() && !q.columnwise.has_value(), "rowwise output only (Direction::kRowwise)");
  if (!q.rowwise) return 1;
  const nvfp4::QuantizedTensor& t = *q.rowwise;
  check(t.data.shape(0) == M && t.data.shape(1) == K / 2, "packed data is 16x16 bytes");
  check(t.scale.shape(0) == 128 && t.scale.shape(1) == 4, "compact scales are [roundup(16,128), roundup(2,4)] = 128x4");
  check(t.amax.size() == 1 && t.amax(0) == 2688.0f, "global amax is 2688");
  if (t.data.shape(0) != M || t.data.shape(1) != K / 2 || t.scale.shape(0) < M || t.scale.shape(1) < 2) return 1;

  // ---- hand-worked blocks ----
  const std::vector<unsigned> grid_bytes = {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE};
  std::vector<unsigned> rounding_bytes;
  for (std::size_t j = 0; j < 8; ++j) rounding_bytes.push_back(rounding_codes[2 * j] | (rounding_codes[2 * j + 1] << 4));

  check(t.scale(0, 0) == 0x38, "row 0 block 0 (A = 6): scale byte 0x38 (1.0), got " + hex(t.scale(0, 0)));
  check(block_bytes(t.data, 0, 0) == grid_bytes,
        "row 0 block 0: the E2M1 grid encodes to codes 0..15: " + bytes_text(block_bytes(t.data, 0, 0)));
  check(t.scale(1, 0) == 0x38, "row 1 block 0 (A = 6): scale byte 0x38, got " + hex(t.scale(1, 0)));
  check(block_bytes(t.data, 1, 0) == rounding_bytes, "row 1 block 0: round to nearest, ties to even, -0.1 -> 0x8: expected " +
                                                         bytes_text(rounding_bytes) + ", got " +
                                                         bytes_text(block_bytes(t.data, 1, 0)));
  check(t.scale(2, 0) == 0x20, "row 2 block 0 (A = 0.75): scale byte 0x20 (0.125), got " + hex(t.scale(2, 0)));
  check(block_bytes(t.data, 2, 0) == grid_bytes, "row 2 block 0: the grid times 2^-3 encodes to codes 0..15");
  check(t.scale(15, 1) == 0x7E, "row 15 block 1 (A = 2688): scale byte 0x7E (448), got " + hex(t.scale(15, 1)));
  bool others = true;
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t b = 0; b < 2; ++b)
      if (!((r <= 2 && b == 0) || (r == 15 && b == 1))) others = others && t.scale(r, b) == 0x28;
  check(others, "every other block (A = 1.5): scale byte 0x28 (0.25)");

  // ---- dequantization: every element against RN(f4 * RN(RN(sf * g) * RN(1/2688))) (DQ = TE) ----
  const nvfp4::FloatMatrix d = nvfp4::dequantize(t.data, t.scale, t.amax, te->knobs);
  check(d.shape(0) == M && d.shape(1) == K, "dequantized matrix is 16x32");
  if (d.shape(0) != M || d.shape(1) != K) return 1;
  const float r2688 = 1.0f / 2688.0f;
  int mismatches = 0;
  for (std::size_t r = 0; r < M; ++r) {
    for (std::size_t c = 0; c < K; ++c) {
      const unsigned byte = t.data(r, c / 2);
      const unsigned code = (c % 2 == 0) ? (byte & 0xFu) : (byte >> 4);
      const float sf = e4m3_value(t.scale(r, c / 16));
      const float factor = (sf * 2688.0f) * r2688;
      const float expected = e2m1_value(code) * factor;
      if (!same_bits(d(r, c), expected)) {
        if (++mismatches <= 5)
          std::printf("     [%zu][%zu]: dequantized %a, expected %a\n", r, c, double(d(r, c)), double(expected));
      }
    }
  }
  check(mismatches == 0, "dequantize matches the DQ = TE chain recomputed here on all 512 elements (" +
                             std::to_string(mismatches) + " mismatches)");
  bool exact = true;
  for (std::size_t i = 0; i < 16; ++i) exact = exact && same_bits(d(0, i), x(0, i)) && same_bits(d(2, i), x(2, i));
  check(exact, "rows 0 and 2, block 0: quantize then dequantize gives back the grid values bit for bit (-0 included)");

  // ---- safetensors round trip of the packed data (nvfp4verify::tensor_convert and ::io) ----
  nvfp4::io::File file;
  file.tensors["data"] = nvfp4::io::from_byte_matrix(t.data);
  const std::vector<std::uint8_t> image = nvfp4::io::serialize(file);
  const nvfp4::io::File back = nvfp4::io::parse(image, "consumer");
  const nvfp4::ByteMatrix data_back = nvfp4::io::to_byte_matrix(back.tensors.at("data"), "consumer", "data");
  check(data_back == t.data,
        "packed data survives a safetensors serialize/parse round trip (" + std::to_string(image.size()) + " bytes)");

  std::printf("%d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
