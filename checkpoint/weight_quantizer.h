// One weight through the registry's operations on a backend: its global amax, and its NVFP4
// quantization with a given (shared) amax, in the stored forms of a checkpoint.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cases/case.h"

namespace nvfp4::checkpoint {

struct QuantizedWeight {
  io::Tensor data;                         // U8 [N, K/2] ([E, N, K/2] for stacked 3-D experts, [E, in/2, out] for BMM ones)
  io::Tensor scale;                        // F8_E4M3: linear [N, K/16], or swizzled and padded (leading E; BMM: [E, in/16, out])
  std::optional<io::Tensor> global_scale;  // F32 0-d ([E] stacked); none when the profile exports none
  std::vector<float> expert_amax;          // stacked 3-D only: each expert's own global amax, in expert order
};

// amax_global of w under the profile's NaN rule, over the whole tensor (a 3-D w's leading dimension
// folded into its rows); errors name `name`.
float weight_amax(cases::Backend& b, const std::string& name, const io::Tensor& w, const std::string& profile);
// The profile's NaN rule applied to two amaxes (the max of a shared-amax group).
float combine_amax(const std::string& profile, float a, float b);
// quantize of w, rowwise, with the global amax given. Throws nvfp4::Error naming `name` when the
// backend rejects it (K not a multiple of 16, say).
QuantizedWeight quantize_weight(cases::Backend& b, const std::string& name, const io::Tensor& w, const std::string& profile,
                                float amax, bool swizzled);
// quantize of 3-D expert weights w [E, N, K] with the registry's `experts` parameter (cases/
// experts.h): each expert quantized alone, rowwise, with its own amax (no override), the outputs
// stacked with a leading E; scales as quantize_weight's, per expert.
QuantizedWeight quantize_experts(cases::Backend& b, const std::string& name, const io::Tensor& w, const std::string& profile,
                                 bool swizzled);

// A 3-D tensor [A, B, C] of any dtype as [A, C, B]: each leading slice transposed.
io::Tensor transpose_last2(const io::Tensor& t);

// quantize of BMM-style 3-D expert weights w [E, in, out] (Llama-4, GPT-OSS; docs/guides/checkpoints.md
// section 2.7) as ModelOpt exports them: transposed to [E, out, in], each expert's [out, in] slice
// quantized rowwise (1x16 blocks along `in`) with the one global amax given (the whole tensor's),
// and the outputs transposed back: data U8 [E, in/2, out] (each byte two consecutive `in` elements
// of one `out` column, the even one in the low nibble), scale F8_E4M3 [E, in/16, out] (linear), and
// one 0-d global scale (none when the profile exports none). Because every row is quantized alone
// under the one amax, the E slices are quantized as one [E·out, in] matrix.
QuantizedWeight quantize_bmm_experts(cases::Backend& b, const std::string& name, const io::Tensor& w, const std::string& profile,
                                     float amax);

}  // namespace nvfp4::checkpoint
