// Shared by the quantize tests (quantize_*_test.cpp): profiles by name, random inputs, the table of
// shapes with hand-computed scale shapes, and checks of bytes, zero padding and errors.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fuzz/generators.h"
#include "reference/error.h"
#include "reference/profiles.h"
#include "reference/quantize.h"

namespace nvfp4::test_support {

inline const Profile& te() { return find_profile("te")->knobs; }
inline const Profile& profile(const char* name) {
  const NamedProfile* p = find_profile(name);
  EXPECT_NE(p, nullptr) << name;
  return p->knobs;
}

inline FloatMatrix randn(std::size_t M, std::size_t K, std::uint32_t seed) {
  return fuzz::fill_data({M, K}, fuzz::Dist::kRandn, seed);
}

inline std::vector<std::size_t> shape_of(const ByteMatrix& m) { return {m.shape(0), m.shape(1)}; }
inline std::vector<std::size_t> shape_of(const FloatVector& v) { return {v.shape(0)}; }

// Every entry with r >= rows or j >= cols must be 0x00 (§2.4.1); every entry inside must be
// nonzero for the data used here (so that a misplaced block lands in padding and is caught).
inline void expect_padding(const ByteMatrix& s, std::size_t rows, std::size_t cols, const std::string& what) {
  std::size_t bad = 0, zero_inside = 0;
  for (std::size_t r = 0; r < s.shape(0); ++r)
    for (std::size_t j = 0; j < s.shape(1); ++j) {
      if (r >= rows || j >= cols)
        bad += s(r, j) != 0;
      else
        zero_inside += s(r, j) == 0;
    }
  EXPECT_EQ(bad, 0u) << what << ": nonzero padding entries";
  EXPECT_EQ(zero_inside, 0u) << what << ": zero scale bytes inside the logical region";
}

inline void expect_bytes_eq(const ByteMatrix& a, const ByteMatrix& b, const std::string& what) {
  ASSERT_EQ(shape_of(a), shape_of(b)) << what;
  for (std::size_t r = 0; r < a.shape(0); ++r)
    for (std::size_t c = 0; c < a.shape(1); ++c)
      ASSERT_EQ(int(a(r, c)), int(b(r, c))) << what << " at (" << r << ", " << c << ")";
}

inline void expect_error(const std::function<void()>& f, ErrorCode code, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no nvfp4::Error thrown, expected " << error_code_name(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& s : fragments) EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr(s));
  }
}

// Shapes of the shape, reference and layout tests (§2.3, §2.4.1, §2.5, §6.15).
struct ShapeCase {
  std::size_t M, K;
  // hand-computed: rowwise scale [roundup(M,128), roundup(K/16,4)], columnwise scale
  // [roundup(K,128), roundup(M/16,4)]
  std::size_t row_sr, row_sc, col_sr, col_sc;
};
inline constexpr ShapeCase kShapes[] = {
    {16, 16, 128, 4, 128, 4},  {16, 32, 128, 4, 128, 4},   {48, 80, 128, 8, 128, 4},
    {112, 96, 128, 8, 128, 8}, {128, 128, 128, 8, 128, 8}, {304, 304, 384, 20, 384, 20},
};

}  // namespace nvfp4::test_support
