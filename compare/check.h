// Checking outputs that another producer (a framework, a kernel, a checkpoint exporter) already
// wrote: the reference runs the same operation with the same parameters on the same inputs, and
// the producer's tensors, read under the reference's names, dtypes and layouts
// (compare/producer_tensors.h), are compared with its outputs bit for bit (compare/diff.h: a NaN
// equals any NaN of the same format, nothing else is relaxed). Which profile reproduces them
// best is found by checking under each. The rules are in docs/guides/check.md.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cases/case.h"
#include "compare/diff.h"
#include "compare/explain.h"

namespace nvfp4::compare {

struct CheckRequest {
  std::string op = "quantize";
  // Parameters given as text, by registry name: an enum's value, true/false, an integer, an
  // integer list ("[1,2]" or "1,2"), or for an exact float "0x" + 8 hex digits or "null" ("none"). The
  // others are inferred from the producer's tensors where that is unambiguous (quantize), else
  // take their defaults.
  std::map<std::string, std::string> params;
  // Reference tensor name -> the file's name (--map): an input's name in X, an output's in THEIRS.
  std::map<std::string, std::string> renames;
  cases::TensorMap inputs;  // X: the inputs the producer was given
  cases::TensorMap theirs;  // THEIRS: what it produced
};

// Compared blocks (docs/guides/check.md). For quantize, a block is one stored 1x16 block of a compared
// copy: row r, block j of data (or data_t) is its 8 bytes data[r, 8j..8j+7] with scale byte
// scale[r, j] of the compact layout, and it matches when those of them that THEIRS holds equal
// the reference's. For every other operation (and a quantize check of amax alone) a block is one
// element of a compared tensor.
struct BlockCount {
  std::size_t matching = 0, total = 0;
  bool all() const { return matching == total; }
  std::string percent() const;  // "99.2%", rounded down: only a full match reads 100.0%
};

struct CheckResult {
  cases::Case c;                                    // the inputs and every parameter: given, inferred or default
  cases::TensorMap reference;                       // every output of the reference
  cases::TensorMap expected, actual;                // the reference's outputs that THEIRS holds, and THEIRS' tensors as them
  std::map<std::string, std::string> stored_names;  // reference name -> THEIRS' name, where they differ
  std::vector<TensorDiff> diffs;                    // expected vs actual
  BlockCount blocks;
  std::vector<std::string> notes;  // what was inferred, renamed, reinterpreted, ignored or not compared
  bool match() const { return diffs.empty(); }
};

// Throws nvfp4::Error or io::FormatError for bad input: an unknown operation, parameter, value or
// --map name, a missing input, THEIRS holding none of the outputs, a tensor of the wrong dtype or
// shape, or inputs the reference rejects.
CheckResult check_outputs(const CheckRequest& r);

// The explanation of r's differences (compare/explain.h), where the outputs THEIRS lacks count as
// equal.
Explanation explain_check(const CheckResult& r);

struct ProfileMatch {
  std::string profile;
  std::optional<CheckResult> result;  // none when the reference rejects the case under the profile
  std::string rejection;              // its message then
};

// check_outputs under every profile of the operation (r gives none), best first: by the fraction
// of matching blocks, then bit-exact before not, then more tensors compared, then registry order;
// profiles under which the reference rejects the case come last. Throws when it rejects the case
// under every profile (bad input), or when the operation has no profile parameter.
std::vector<ProfileMatch> identify_profile(const CheckRequest& r);

}  // namespace nvfp4::compare
