// A rank's share of one weight: the flattened (row-major) element range [start, start + length)
// of an M x K weight, as ZeRO/FSDP cut the flattened parameters (NUMERICS.md §3.4, §3.16).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace nvfp4 {

struct Shard {
  std::int64_t start = 0, length = 0;

  std::int64_t end() const { return start + length; }
  // The packed bytes a shard-local buffer covers: [start div 2, (end + 1) div 2) (§3.16; an empty
  // shard at an odd start still covers the one byte it would share).
  std::int64_t first_byte() const { return start >> 1; }
  std::int64_t local_bytes() const { return ((end() + 1) >> 1) - first_byte(); }
};

// E_DIM16_M / E_DIM16_K for a weight that is not made of 16x16 tiles.
void validate_weight_dims(std::string_view op, std::int64_t M, std::int64_t K);
// validate_weight_dims, and E_SHARD for a range that is negative or reaches past M*K elements.
void validate_shard(std::string_view op, std::int64_t M, std::int64_t K, const Shard& s);
// E_DATA_SHAPE unless the shard's values (xs) number its length.
void validate_shard_values(std::string_view op, const Shard& s, std::size_t values);

// A writable byte range (a shard-local buffer, or a piece of a rank's buffer).
struct ByteSpan {
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
};

}  // namespace nvfp4
