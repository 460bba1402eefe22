// SHA-256 (FIPS 180-4), for the hashes a conformance vector pack's manifest.json records of each
// of its files. None of the project's dependencies provides one, so it is here, small and exact.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace nvfp4::io {

// A streaming hash: update() with the message in chunks of any sizes, then digest().
class Sha256 {
 public:
  Sha256();

  // Appends n bytes to the message. Not allowed after digest(): throws std::logic_error.
  void update(const void* data, std::size_t n);
  // Pads and finalises the message and returns its hash; a second call returns the same hash.
  std::array<std::uint8_t, 32> digest();

 private:
  void compress(const std::uint8_t* block);  // one 64-byte block into state_

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> block_{};  // the message's bytes not yet compressed
  std::size_t block_len_ = 0;
  std::uint64_t message_len_ = 0;  // bytes so far
  bool finished_ = false;
};

// The SHA-256 of `bytes` as 64 lowercase hex digits, as manifest.json writes it.
std::string sha256_hex(std::span<const std::uint8_t> bytes);
std::string sha256_hex(std::string_view bytes);

// The hash of a file's contents, as sha256_hex. Throws FormatError (io/safetensors.h)
// "<path>: cannot read file: <why>" when it is missing, not a regular file, or cannot be read.
std::string sha256_file_hex(const std::filesystem::path& file);

}  // namespace nvfp4::io
