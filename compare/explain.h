// Explaining a mismatch between two backends' quantize outputs: where it is (blocks), what kind
// it is (classification), the reference's intermediate values for a block, and which profile or
// known upstream variant reproduces the actual output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cases/case.h"
#include "compare/compare.h"
#include "compare/diff.h"

namespace nvfp4::compare {

// The kinds of element/byte mismatch the report names.
enum class MismatchKind {
  kScaleOffByOneCode,  // E4M3 scale byte differs by one code
  kScaleOther,         // scale byte differs otherwise
  kTieFlipped,         // codes are neighbours and the scaled value sits on an E2M1 tie
  kRoundingOther,      // codes are neighbours, not on a tie
  kZeroSign,           // 0x0 vs 0x8
  kNanEncoding,        // the input element is NaN and the codes differ
  kNibbleOrder,        // the byte equals the expected byte with its nibbles swapped
  kMisplacedByte,      // the byte equals an expected byte elsewhere in the same row
  kPadding,            // a padding byte of the scale matrix differs
  kAmax,               // stored amax / global scale differs
  // The distributed weight cast (NUMERICS.md §5.1-§5.3):
  kShardByteShift,       // a rank starting at an odd element wrote its element pairs one byte low
  kSharedByteNibble,     // a byte shared by two ranks kept only one rank's nibble
  kShiftOrSharedNibble,  // every mismatching byte fits both of the two above: the bytes cannot tell them apart
  kScaleRowPitch,        // expanded rowwise scales written at row pitch K/16 instead of roundup(K/16, 4)
  // Stochastic rounding (§3.18):
  kSrOtherNeighbour,  // codes are neighbours: the other side of the element's random-byte threshold
  // The Hadamard transform's BF16 outputs (§3.19):
  kRhtSingleRounding,  // the exact sum rounded once to BF16 (the binary32 step skipped)
  kRhtOtherSum,        // the other sum rule's value ([knob RHT]: exact where mma-sm90 is expected, or back)
  kRhtOneUlp,          // one BF16 ulp from the expected value, neither of the above
  kOther,
};
std::string_view mismatch_kind_name(MismatchKind k);

// A stochastically rounded element: its random byte r8 and the smallest r8 that rounds its scaled
// value up to the upper grid neighbour (256: none does, the value is on the grid).
struct SrElement {
  std::uint8_t random_byte = 0;
  int threshold = 256;
};

// One mismatching element of a quantize output (rowwise or columnwise copy).
struct ElementMismatch {
  std::string tensor;                     // "data", "data_t", "scale", ...
  std::int64_t row = 0, col = 0;          // element position in the stored orientation (data: element index)
  std::uint32_t input_bits = 0;           // binary32 bits of the input element (data tensors)
  std::uint8_t expected = 0, actual = 0;  // code (data) or byte (scale)
  MismatchKind kind = MismatchKind::kOther;
  std::optional<SrElement> sr = std::nullopt;  // with stochastic rounding
};

// The reference's intermediate values of one block, for the report's table.
struct BlockTrace {
  std::string direction;            // "rowwise" or "columnwise"
  std::int64_t row = 0, block = 0;  // stored row, block index within it
  float global_amax = 0, S = 0, Sd = 0, block_amax = 0, precast = 0, encode_factor = 0;
  std::uint8_t scale_byte = 0;
  std::vector<float> inputs, scaled;  // 16 values and y = scaled values
  std::vector<std::uint8_t> expected_codes, actual_codes;
  std::vector<SrElement> sr;  // with stochastic rounding: each element's byte and threshold
};

// One mismatching output of the Hadamard transform: x_t[row][col] is output n = col % 16 of the
// 16-vector x[16 * (col / 16) .. + 15][row].
struct RhtTrace {
  std::string tensor;  // "x_t"
  std::int64_t row = 0, col = 0;
  std::uint16_t mask = 0;
  std::vector<float> inputs;                            // the 16 BF16 inputs
  std::string exact_sum;                                // exact hexadecimal float
  float binary32 = 0;                                   // RN(exact sum)
  float expected = 0, actual = 0, single_rounding = 0;  // BF16 values; single: RNbf16(exact sum)
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
  std::vector<BlockTrace> traces;    // the first few mismatching blocks
  std::vector<RhtTrace> rht_traces;  // the first few mismatching transform outputs
  std::vector<std::pair<MismatchKind, std::size_t>> kind_counts;
  // The kinds of the mismatches that are not consequences of others (cast_master_weights), which
  // the catalogue's detectors of the distributed-cast bugs read.
  std::vector<MismatchKind> root_kinds;
  // The fault catalogue's patterns, profiles or knob variants that reproduce the actual outputs,
  // best first (compare/diagnose.h); empty when none does.
  struct Cause {
    std::string name;     // "e2m1-ties-away", "profile te-2.13", "te with E4M3=TORCH", "a + b"
    std::string summary;  // one line: what the kernel does wrong
    bool exact = false;   // reproduces every output byte (else every byte where actual differs)
  };
  std::vector<Cause> causes;
  // How many leading causes reproduce every output byte alike: the case cannot tell them apart
  // (1 when the first stands alone, 0 without causes).
  std::size_t tied = 0;
  std::vector<std::string> ties;  // ties that decide a differing byte, in words
  bool searched = false;          // the catalogue was searched (not a case too large to search)
  std::string detail;             // the operation's explainer's own sentence (cast_master_weights, rht)
  // The first sentence a reader needs: the cause named, or that nothing reproduces the outputs.
  std::string verdict;
};

// Explains the differences between expected (reference) and actual outputs of case c.
// Also tries every other profile and the known upstream variants to name the formula that
// reproduces `actual`.
// The operation's own explanation where compare/explain.cpp's table has one (quantize: every
// element classified, with SR's random bytes; rht: each output's exact sum and both roundings;
// cast_master_weights: the distributed-cast bugs), else explain_bytes. Any actual outputs are
// explained: when they are not laid out as the expected ones (a tensor missing, extra, or of
// another dtype or shape), explain_bytes with a verdict that names the differences.
Explanation explain(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual);

Explanation explain_quantize(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual);
Explanation explain_rht(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual);
// The explanation of a comparison that failed: explain() of its outputs when both backends ran the
// case, else its problem as the verdict; a failure by ULP distance without a named cause gets the
// distance as its verdict. Every report path (pages, console lines, JUnit, campaign.json, Python)
// takes its verdict from here.
Explanation explain_comparison(const cases::Case& c, const Comparison& cmp);

// Any operation: each differing output tensor with its count of differing bytes.
Explanation explain_bytes(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual);

}  // namespace nvfp4::compare
