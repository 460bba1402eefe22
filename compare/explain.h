// Explaining a mismatch between two backends' quantize outputs: where it is (blocks), what kind
// it is (classification), the reference's intermediate values for a block, and which profile or
// known upstream variant reproduces the actual output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compare/diff.h"
#include "cases/case.h"

namespace nvfp4 {

// The kinds of element/byte mismatch the report names.
enum class MismatchKind {
  kScaleOffByOneCode,   // E4M3 scale byte differs by one code
  kScaleOther,          // scale byte differs otherwise
  kTieFlipped,          // codes are neighbours and the scaled value sits on an E2M1 tie
  kRoundingOther,       // codes are neighbours, not on a tie
  kZeroSign,            // 0x0 vs 0x8
  kNanEncoding,         // the input element is NaN and the codes differ
  kNibbleOrder,         // the byte equals the expected byte with its nibbles swapped
  kMisplacedByte,       // the byte equals an expected byte elsewhere in the same row
  kPadding,             // a padding byte of the scale matrix differs
  kAmax,                // stored amax / global scale differs
  // The distributed weight cast (NUMERICS.md §5.1-§5.3):
  kShardByteShift,      // a rank starting at an odd element wrote its element pairs one byte low
  kSharedByteNibble,    // a byte shared by two ranks kept only one rank's nibble
  kScaleRowPitch,       // expanded rowwise scales written at row pitch K/16 instead of roundup(K/16, 4)
  kOther,
};
std::string_view mismatch_kind_name(MismatchKind k);

// One mismatching element of a quantize output (rowwise or columnwise copy).
struct ElementMismatch {
  std::string tensor;          // "data", "data_t", "scale", ...
  std::int64_t row = 0, col = 0;  // element position in the stored orientation (data: element index)
  std::uint32_t input_bits = 0;   // binary32 bits of the input element (data tensors)
  std::uint8_t expected = 0, actual = 0;  // code (data) or byte (scale)
  MismatchKind kind = MismatchKind::kOther;
};

// The reference's intermediate values of one block, for the report's table.
struct BlockTrace {
  std::string direction;  // "rowwise" or "columnwise"
  std::int64_t row = 0, block = 0;  // stored row, block index within it
  float global_amax = 0, S = 0, Sd = 0, block_amax = 0, precast = 0, encode_factor = 0;
  std::uint8_t scale_byte = 0;
  std::vector<float> inputs, scaled;          // 16 values and y = scaled values
  std::vector<std::uint8_t> expected_codes, actual_codes;
};

struct Explanation {
  std::vector<ElementMismatch> mismatches;  // every mismatching element/byte (capped at 4096)
  std::size_t total_mismatches = 0;
  // Mismatching blocks per stored tensor: (tensor, rows, blocks per row, flags row-major).
  struct BlockMap {
    std::string tensor;
    std::int64_t rows = 0, blocks = 0;
    std::vector<std::uint8_t> mismatching;  // 1 where any element or the scale of the block differs
  };
  std::vector<BlockMap> maps;
  std::vector<BlockTrace> traces;                 // the first few mismatching blocks
  std::vector<std::pair<MismatchKind, std::size_t>> kind_counts;
  std::string verdict;  // e.g. "actual matches profile te-2.13 on 14/14 mismatching blocks"
};

// Explains the differences between expected (reference) and actual outputs of case c.
// Also tries every other profile and the known upstream variants to name the formula that
// reproduces `actual`.
// The operation's own explanation where compare/explain.cpp's table has one (quantize: every
// element classified; cast_master_weights: the distributed-cast bugs), else explain_bytes.
Explanation explain(const Case& c, const TensorMap& expected, const TensorMap& actual);

Explanation explain_quantize(const Case& c, const TensorMap& expected, const TensorMap& actual);
// Any operation: each differing output tensor with its count of differing bytes.
Explanation explain_bytes(const Case& c, const TensorMap& expected, const TensorMap& actual);

}  // namespace nvfp4
