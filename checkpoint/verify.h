// Checking an NVFP4 checkpoint against its BF16 source tensor by tensor: every quantized module of
// the checkpoint (found by its block scale tensor: <m>.weight_scale, or under format A also
// <p>_weight_scale of a BMM expert parameter <p>, docs/guides/checkpoints.md section 2.7) is recomputed
// from the source with the format's shared-amax grouping and the reference, and its data, block
// scales and global scale compared byte for byte. A mismatch is classified where one known fault
// reproduces it exactly.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "checkpoint/format.h"
#include "checkpoint/hf_checkpoint.h"

namespace nvfp4::checkpoint {

struct TensorVerdict {
  std::string module;
  std::size_t data_diff = 0, data_total = 0, scale_diff = 0, scale_total = 0;
  bool global_differs = false;
  std::string global_name = "weight_scale_2";  // the format's name of the stored global scale
  std::string fault;                           // the fault class that reproduces it exactly, or "" (match, or unexplained)
  bool match() const { return data_diff == 0 && scale_diff == 0 && !global_differs; }
  // "data: 3 of 2048 bytes differ; weight_scale: 0 of 256 bytes differ; weight_scale_2 matches"
  std::string counts() const;
  std::string line() const;  // "<module>: match" or "<module>: MISMATCH (counts)[: fault]"
};

struct CheckpointCheck {
  std::string profile;
  std::vector<TensorVerdict> tensors;  // in module-name order
  std::size_t mismatches() const;
};

// Throws io::FormatError for bad input: a module of `quantized` lacking one of its tensors or its
// source weight, a tensor of the wrong dtype or shape, no quantized module at all.
// `classify`: look for the fault class of each mismatch (costs recomputations).
CheckpointCheck check_checkpoint(const HfCheckpoint& source, const HfCheckpoint& quantized, const CheckpointFormat& f,
                                 const std::string& profile, bool classify);

// The format a checkpoint declares: for hf_quant_config.json or quantization_config.quant_method
// "modelopt", "miles" when every quantized module is a MoE expert linear with an input_scale of
// exactly 1.0 (format C's placeholder), "modelopt" when none has that placeholder or a non-expert
// module is quantized, and a FormatError saying the two cannot be told apart otherwise;
// "miles" for quant_method "modelopt_fp4" (miles' first version); FormatError otherwise.
std::string detect_format(const HfCheckpoint& quantized);

}  // namespace nvfp4::checkpoint
