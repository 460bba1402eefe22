#include "io/sha256.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "io/safetensors.h"

namespace nvfp4::io {
namespace {

// FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of the cube roots of the
// first 64 primes.
constexpr std::array<std::uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,  //
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,  //
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,  //
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,  //
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,  //
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,  //
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,  //
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,  //
};

// Section 5.3.3: the first 32 bits of the fractional parts of the square roots of the first 8
// primes.
constexpr std::array<std::uint32_t, 8> kInitialHash = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

// Section 4.1.2's functions; ROTR is section 3.2's rotate right.
constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
constexpr std::uint32_t ch(std::uint32_t x, std::uint32_t y, std::uint32_t z) { return (x & y) ^ (~x & z); }
constexpr std::uint32_t maj(std::uint32_t x, std::uint32_t y, std::uint32_t z) { return (x & y) ^ (x & z) ^ (y & z); }
constexpr std::uint32_t big_sigma0(std::uint32_t x) { return rotr(x, 2) ^ rotr(x, 13) ^ rotr(x, 22); }
constexpr std::uint32_t big_sigma1(std::uint32_t x) { return rotr(x, 6) ^ rotr(x, 11) ^ rotr(x, 25); }
constexpr std::uint32_t small_sigma0(std::uint32_t x) { return rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3); }
constexpr std::uint32_t small_sigma1(std::uint32_t x) { return rotr(x, 17) ^ rotr(x, 19) ^ (x >> 10); }

// Words are big-endian (section 3.1).
std::uint32_t load_be32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | std::uint32_t{p[3]};
}

std::string to_hex(const std::array<std::uint8_t, 32>& digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * digest.size());
  for (std::uint8_t b : digest) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

}  // namespace

Sha256::Sha256() : state_(kInitialHash) {}

// Section 6.2.2: one 512-bit block.
void Sha256::compress(const std::uint8_t* block) {
  // 1. The message schedule.
  std::array<std::uint32_t, 64> w;
  for (int t = 0; t < 16; ++t) w[t] = load_be32(block + 4 * t);
  for (int t = 16; t < 64; ++t) w[t] = small_sigma1(w[t - 2]) + w[t - 7] + small_sigma0(w[t - 15]) + w[t - 16];

  // 2. The working variables, from the previous hash value.
  std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  std::uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];

  // 3. The 64 rounds.
  for (int t = 0; t < 64; ++t) {
    const std::uint32_t t1 = h + big_sigma1(e) + ch(e, f, g) + kRoundConstants[t] + w[t];
    const std::uint32_t t2 = big_sigma0(a) + maj(a, b, c);
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }

  // 4. The intermediate hash value.
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Sha256::update(const void* data, std::size_t n) {
  if (finished_) throw std::logic_error("Sha256::update after digest()");
  const auto* p = static_cast<const std::uint8_t*>(data);
  message_len_ += n;
  // Top up a partly filled block first, then whole blocks straight from the input, then keep the
  // rest for the next call.
  if (block_len_ > 0) {
    const std::size_t take = std::min(n, block_.size() - block_len_);
    std::copy_n(p, take, block_.begin() + block_len_);
    block_len_ += take;
    p += take;
    n -= take;
    if (block_len_ < block_.size()) return;
    compress(block_.data());
    block_len_ = 0;
  }
  for (; n >= block_.size(); p += block_.size(), n -= block_.size()) compress(p);
  std::copy_n(p, n, block_.begin());
  block_len_ = n;
}

std::array<std::uint8_t, 32> Sha256::digest() {
  if (!finished_) {
    // Section 5.1.1: a 1 bit, zeros up to 448 bits mod 512, then the message's length in bits as
    // a 64-bit big-endian integer (the length is below 2^64 bits, the standard's limit).
    const std::uint64_t bits = message_len_ * 8;
    block_[block_len_++] = 0x80;
    if (block_len_ > 56) {
      std::fill(block_.begin() + block_len_, block_.end(), 0);
      compress(block_.data());
      block_len_ = 0;
    }
    std::fill(block_.begin() + block_len_, block_.begin() + 56, 0);
    for (int i = 0; i < 8; ++i) block_[56 + i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
    compress(block_.data());
    block_len_ = 0;
    finished_ = true;
  }
  // Section 6.2.2: the hash is H0..H7, each big-endian.
  std::array<std::uint8_t, 32> out;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<std::uint8_t>(state_[i] >> (24 - 8 * j));
  return out;
}

std::string sha256_hex(std::span<const std::uint8_t> bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return to_hex(h.digest());
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes.data(), bytes.size());
  return to_hex(h.digest());
}

std::string sha256_file_hex(const std::filesystem::path& file) {
  const auto fail = [&](std::string_view why) { throw FormatError(fmt::format("{}: cannot read file: {}", file.string(), why)); };
  // Checked before opening, so that a FIFO is refused rather than waited on.
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (ec) fail(ec.message());
  if (!std::filesystem::is_regular_file(status)) fail("not a regular file");

  std::ifstream in(file, std::ios::binary);
  if (!in.is_open()) fail(std::generic_category().message(errno));
  Sha256 h;
  std::vector<char> chunk(64 * 1024);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    h.update(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) fail("read error");
  return to_hex(h.digest());
}

}  // namespace nvfp4::io
