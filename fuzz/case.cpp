#include "fuzz/case.h"

#include <array>

#include "reference/error.h"

namespace nvfp4 {
namespace {

constexpr std::array<std::pair<Operation, std::string_view>, 16> kNames = {{
    {Operation::kAmaxGlobal, "amax_global"},
    {Operation::kAmaxRows, "amax_rows"},
    {Operation::kAmaxCols, "amax_cols"},
    {Operation::kAmaxBlocks1x16, "amax_blocks_1x16"},
    {Operation::kAmaxBlocks16x1, "amax_blocks_16x1"},
    {Operation::kAmaxTiles16x16, "amax_tiles_16x16"},
    {Operation::kQuantize, "quantize"},
    {Operation::kDequantize, "dequantize"},
    {Operation::kSwizzle, "swizzle"},
    {Operation::kUnswizzle, "unswizzle"},
    {Operation::kTransposePacked, "transpose_packed"},
    {Operation::kTransposeScales2D, "transpose_scales_2d"},
    {Operation::kAmaxPartial, "amax_partial"},
    {Operation::kFusedScale, "fused_scale_2d"},
    {Operation::kPartialCast, "partial_cast_2d"},
    {Operation::kCastMasterWeights, "cast_master_weights"},
}};

}  // namespace

std::string_view operation_name(Operation op) {
  for (const auto& [o, name] : kNames)
    if (o == op) return name;
  return "unknown";
}

std::optional<Operation> operation_from_name(std::string_view name) {
  for (const auto& [o, n] : kNames)
    if (n == name) return o;
  return std::nullopt;
}

const io::Tensor& case_input(const Case& c, const char* name) {
  const auto it = c.inputs.find(name);
  if (it == c.inputs.end())
    fail(operation_name(c.op), ErrorCode::E_UNSUPPORTED, "the case has no input tensor '{}'", name);
  return it->second;
}

}  // namespace nvfp4
