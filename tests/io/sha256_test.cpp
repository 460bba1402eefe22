#include "io/sha256.h"
#include "io/safetensors.h"
#include "tests/support/temp_dir.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace nvfp4::io {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

std::string hex(const std::array<std::uint8_t, 32>& digest) {
  std::string out;
  for (std::uint8_t b : digest) {
    out += "0123456789abcdef"[b >> 4];
    out += "0123456789abcdef"[b & 0xf];
  }
  return out;
}

// The expected hashes are the standard's: FIPS 180-2 appendix B (B.1 to B.3) and NIST's SHA-256
// examples (csrc.nist.gov, "SHA256.pdf"; the empty message from its SHA-256 "Example Values"),
// written here in words of 8 hex digits as the standard prints them.

TEST(Sha256, EmptyMessage) {
  EXPECT_EQ(sha256_hex(std::string_view{}),
            "e3b0c442"
            "98fc1c14"
            "9afbf4c8"
            "996fb924"
            "27ae41e4"
            "649b934c"
            "a495991b"
            "7852b855");
}

TEST(Sha256, OneBlockMessageAbc) {  // B.1
  EXPECT_EQ(sha256_hex(std::string_view("abc")),
            "ba7816bf"
            "8f01cfea"
            "414140de"
            "5dae2223"
            "b00361a3"
            "96177a9c"
            "b410ff61"
            "f20015ad");
}

TEST(Sha256, TwoBlockMessage448Bits) {  // B.2: 56 bytes, so the padding takes a second block
  EXPECT_EQ(sha256_hex(std::string_view("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61"
            "d20638b8"
            "e5c02693"
            "0c3e6039"
            "a33ce459"
            "64ff2167"
            "f6ecedd4"
            "19db06c1");
}

TEST(Sha256, OneMillionA) {  // B.3: a multiple of 64 bytes, so the padding is a block of its own
  const std::string expected =
      "cdc76e5c"
      "9914fb92"
      "81a1c7e2"
      "84d73e67"
      "f1809a48"
      "a497200e"
      "046d39cc"
      "c7112cd0";
  const std::string message(1'000'000, 'a');
  EXPECT_EQ(sha256_hex(message), expected);

  // The same message in chunks of 1000 bytes, which do not divide a block.
  Sha256 h;
  for (std::size_t i = 0; i < message.size(); i += 1000) h.update(message.data() + i, 1000);
  EXPECT_EQ(hex(h.digest()), expected);
}

TEST(Sha256, SpanAndStringViewAgree) {
  const std::string text = "abc";
  const Bytes bytes(text.begin(), text.end());
  EXPECT_EQ(sha256_hex(std::span<const std::uint8_t>(bytes)), sha256_hex(std::string_view(text)));
}

// Sizes around the padding's boundaries (the length field fits in the last block up to 55 bytes
// of it, and not from 56), one and two blocks up, and a few KB; each split at random into chunks,
// empty ones included, gives the hash of the one update.
TEST(Sha256, StreamingEqualsOneShot) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::size_t size : {0, 1, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096, 4159, 5001}) {
    SCOPED_TRACE("size " + std::to_string(size));
    Bytes data(size);
    for (auto& b : data) b = static_cast<std::uint8_t>(byte(rng));

    Sha256 one;
    one.update(data.data(), data.size());
    const auto expected = one.digest();

    for (int trial = 0; trial < 20; ++trial) {
      // Chunks mostly below a block, sometimes of several.
      std::uniform_int_distribution<std::size_t> chunk(0, trial % 2 == 0 ? 70 : 300);
      Sha256 h;
      std::size_t at = 0;
      while (at < size) {
        const std::size_t n = std::min(chunk(rng), size - at);
        h.update(data.data() + at, n);
        at += n;
      }
      EXPECT_EQ(h.digest(), expected) << "trial " << trial;
    }
  }
}

TEST(Sha256, DigestTwiceIsTheSameAndUpdateAfterItThrows) {
  Sha256 h;
  h.update("abc", 3);
  const auto first = h.digest();
  EXPECT_EQ(h.digest(), first);
  EXPECT_THROW(h.update("d", 1), std::logic_error);
}

class Sha256File : public test_support::TempDirTest {};

TEST_F(Sha256File, EqualsTheHashOfItsBytes) {
  std::mt19937 rng(std::random_device{}());
  // Empty, small, and more than the 64 KiB chunk sha256_file_hex reads at a time.
  for (std::size_t size : {std::size_t{0}, std::size_t{3}, std::size_t{65536}, std::size_t{200'003}}) {
    SCOPED_TRACE("size " + std::to_string(size));
    Bytes data(size);
    for (auto& b : data) b = static_cast<std::uint8_t>(rng());
    const fs::path file = dir_ / ("data_" + std::to_string(size) + ".bin");
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    EXPECT_EQ(sha256_file_hex(file), sha256_hex(std::span<const std::uint8_t>(data)));
  }
}

TEST_F(Sha256File, MissingFileThrowsFormatErrorNamingIt) {
  const fs::path file = dir_ / "missing.bin";
  try {
    sha256_file_hex(file);
    FAIL() << "no exception";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

TEST_F(Sha256File, DirectoryThrowsFormatError) { EXPECT_THROW(sha256_file_hex(dir_), FormatError); }

}  // namespace
}  // namespace nvfp4::io
