// One checked module of an NVFP4 checkpoint as the registry's quantize case, for explaining a
// mismatch (compare/explain.h) and the check-checkpoint report: the source weight quantized
// rowwise under the profile with the amax check_checkpoint uses (its shared-amax group's) and the
// format's scale layout, the reference's outputs, and the checkpoint's stored tensors under the
// reference's names and layout.
#pragma once

#include <string>

#include "cases/case.h"
#include "checkpoint/format.h"
#include "checkpoint/hf_checkpoint.h"

namespace nvfp4::checkpoint {

struct TensorCase {
  cases::Case c;              // quantize, inputs {x: the source <module>.weight}
  cases::TensorMap expected;  // the reference's outputs of c
  // expected with data, scale and global_scale replaced by the stored <module>.weight,
  // .weight_scale and .weight_scale_2 bytes: a linear [N, K/16] scale is placed into the compact
  // layout's padded matrix (its padding taken from expected, so that it cannot differ); a stored
  // tensor of another shape is kept as it is (explain() then reports the tensor as different).
  // global_scale is present only where the profile exports one (a format's own RN(1/S) is not an
  // output of quantize; TensorVerdict::global_differs says whether it matches).
  cases::TensorMap actual;
};

// Throws io::FormatError as check_checkpoint does for a module lacking a tensor or its source (a
// module of a 2-D <m>.weight only: 3-D expert weights have no block-level case).
TensorCase tensor_case(const HfCheckpoint& source, const HfCheckpoint& quantized, const CheckpointFormat& f,
                       const std::string& profile, const std::string& module);

}  // namespace nvfp4::checkpoint
