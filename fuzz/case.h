// A case: one operation with its parameters and host input tensors. Backends (the reference,
// the GPU, later external ones) turn a case into output tensors, which compare/ diffs bit for bit.
// Tensors are safetensors tensors, so inputs and outputs save and load without conversion.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/safetensors.h"
#include "reference/quantize.h"

namespace nvfp4 {

enum class Operation {
  kAmaxGlobal,         // x -> amax [1]
  kAmaxRows,           // x -> amax [M]
  kAmaxCols,           // x -> amax [K]
  kAmaxBlocks1x16,     // x -> amax [M, K/16]
  kAmaxBlocks16x1,     // x -> amax [M/16, K]
  kAmaxTiles16x16,     // x -> amax [M/16, K/16]
  kQuantize,           // x -> data, scale, amax, data_t, scale_t, amax_t, global_scale (as requested)
  kDequantize,         // data, scale (compact), amax -> x
  kSwizzle,            // scale (compact) -> scale (swizzled)
  kUnswizzle,          // scale (swizzled) -> scale (compact)
  kTransposePacked,    // data [M, K/2] -> data [K, M/2]
  kTransposeScales2D,  // scale (2D rowwise, compact) + params M, K -> scale (columnwise)
  // The distributed 2D weight cast (NUMERICS.md §3.4, §3.15-§3.17):
  kAmaxPartial,        // xs [len] (BF16 shard) + params M, K, shard_start -> tile_amax [M/16, K/16], amax [1]
  kFusedScale,         // tile_amax [M/16, K/16], amax [1] -> tile_scale, scale (compact rowwise), amax, global_scale
  kPartialCast,        // xs, tile_scale, global_scale, data (prior bytes: shard-local [n] or whole [M, K/2])
                       //   + params M, K, shard_start -> data (owned nibbles replaced)
  kCastMasterWeights,  // every input is an FP32 weight W [M, K] + params cuts (R-1 flat cut points)
                       //   -> W.data, W.scale, W.amax, W.data_t, W.scale_t per weight
};

std::string_view operation_name(Operation op);
std::optional<Operation> operation_from_name(std::string_view name);

using TensorMap = std::map<std::string, io::Tensor>;

struct CaseParams {
  std::string profile = "te";
  std::optional<Profile> knobs;  // replaces the named profile's knobs (formula-variant search); not saved
  // kQuantize
  BlockShape block = BlockShape::k1D;
  Direction direction = Direction::kRowwise;
  bool row_scaled = false;
  std::optional<float> amax;
  ScaleLayout scale_layout = ScaleLayout::kCompact;
  // kDequantize
  io::DType output_dtype = io::DType::F32;
  // kTransposeScales2D: the quantized tensor's dimensions; kAmaxPartial, kPartialCast: the weight's
  std::int64_t M = 0, K = 0;
  // kAmaxPartial, kPartialCast: the shard's first flattened element (its length is xs's)
  std::int64_t shard_start = 0;
  // kCastMasterWeights: the R-1 cut points between R ranks in the flattened concatenation of the
  // weights (sorted by name); R = cuts.size() + 1
  std::vector<std::int64_t> cuts;
};

struct Case {
  Operation op = Operation::kQuantize;
  CaseParams params;
  TensorMap inputs;
};

// The case's input tensor `name`; throws nvfp4::Error (E_UNSUPPORTED) when the case lacks it.
const io::Tensor& case_input(const Case& c, const char* name);

// A backend runs cases. It throws nvfp4::Error (or io::FormatError) for invalid cases, and
// BackendUnavailable when it cannot run at all (e.g. no GPU).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual TensorMap run(const Case& c) = 0;
};

class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace nvfp4
