// The typed options of a quantize or dequantize case, read from its registry parameters once
// here for every backend and the CLI.
#pragma once

#include <string_view>

#include "cases/case.h"
#include "reference/dequantize.h"
#include "reference/quantize.h"

namespace nvfp4::cases {

// From the parameters profile, block, direction, row_scaled, amax, scale_layout, rounding, seed,
// offset, rht, rht_mask, and the dtype of input x.
QuantizeOptions quantize_options(const Case& c);

// The reference's outputs of a 2-D quantize case and of a dequantize case, with the steps a fault
// variant replaces (compare/fault_catalogue.h); the registry's reference runs them with none.
TensorMap reference_quantize(const Case& c, const QuantizeSteps& steps = {});
TensorMap reference_dequantize(const Case& c, const DequantizeSteps& steps = {});

// Parameter rht_mask (quantize, rht): E_UNSUPPORTED when it has more than 16 bits.
std::uint16_t rht_mask_param(const Case& c);
// The `rht` operation's `accumulation` ([knob RHT]'s values by their registry names).
RhtSum rht_sum_param(const Case& c);

// The parameter values of the quantize options (the inverse of quantize_options).
void set_quantize_params(Case& c, BlockShape block, Direction direction, bool row_scaled = false,
                         ScaleLayout layout = ScaleLayout::kCompact);

std::string_view block_name(BlockShape b);          // "1d", "2d"
std::string_view direction_name(Direction d);       // "rowwise", "columnwise", "both"
std::string_view scale_layout_name(ScaleLayout l);  // "compact", "swizzled"

// dequantize: the output dtype (F32, BF16 or F16) of parameter output_dtype.
io::DType dequantize_output_dtype(const Case& c);

}  // namespace nvfp4::cases
