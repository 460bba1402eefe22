#include "fuzz/reference_backend.h"

#include "fuzz/distributed_case.h"
#include "io/tensor_convert.h"
#include "reference/amax.h"
#include "reference/dequantize.h"
#include "reference/error.h"
#include "reference/partial_amax.h"
#include "reference/profiles.h"
#include "reference/scale_layout.h"
#include "reference/transpose.h"

namespace nvfp4 {
namespace {

io::Tensor matrix_tensor(const FloatMatrix& m) { return io::from_float_matrix(m, io::FloatType::F32); }

io::FloatType float_type(io::DType t, std::string_view op) {
  switch (t) {
    case io::DType::F32: return io::FloatType::F32;
    case io::DType::BF16: return io::FloatType::BF16;
    case io::DType::F16: return io::FloatType::F16;
    default: fail(op, ErrorCode::E_DTYPE, "output dtype {} is not F32, BF16 or F16", io::dtype_name(t));
  }
}

}  // namespace

const Profile& case_profile(const CaseParams& params) {
  if (params.knobs) return *params.knobs;
  const NamedProfile* p = find_profile(params.profile);
  if (!p) fail("case", ErrorCode::E_UNSUPPORTED, "unknown profile '{}'", params.profile);
  return p->knobs;
}

QuantizeOptions quantize_options(const CaseParams& params) {
  QuantizeOptions o;
  o.profile = case_profile(params);
  o.block = params.block;
  o.direction = params.direction;
  o.row_scaled = params.row_scaled;
  o.amax = params.amax;
  o.scale_layout = params.scale_layout;
  return o;
}

TensorMap ReferenceBackend::run(const Case& c) {
  const std::string_view op = operation_name(c.op);
  const Profile& profile = case_profile(c.params);
  TensorMap out;
  switch (c.op) {
    case Operation::kAmaxGlobal:
      out["amax"] = io::from_float_vector(FloatVector({amax_global(io::to_float_matrix(case_input(c, "x"), op, "x"), profile.amax)}));
      break;
    case Operation::kAmaxRows:
      out["amax"] = io::from_float_vector(amax_rows(io::to_float_matrix(case_input(c, "x"), op, "x"), profile.amax));
      break;
    case Operation::kAmaxCols:
      out["amax"] = io::from_float_vector(amax_cols(io::to_float_matrix(case_input(c, "x"), op, "x"), profile.amax));
      break;
    case Operation::kAmaxBlocks1x16:
      out["amax"] = matrix_tensor(amax_blocks_1x16(io::to_float_matrix(case_input(c, "x"), op, "x"), profile.amax));
      break;
    case Operation::kAmaxBlocks16x1:
      out["amax"] = matrix_tensor(amax_blocks_16x1(io::to_float_matrix(case_input(c, "x"), op, "x"), profile.amax));
      break;
    case Operation::kAmaxTiles16x16:
      out["amax"] = matrix_tensor(amax_tiles_16x16(io::to_float_matrix(case_input(c, "x"), op, "x"), profile.amax));
      break;
    case Operation::kQuantize: {
      const QuantizeOptions o = quantize_options(c.params);
      const Quantization q = quantize(io::to_float_matrix(case_input(c, "x"), op, "x"), o);
      if (q.rowwise) {
        out["data"] = io::from_byte_matrix(q.rowwise->data);
        out["scale"] = io::from_byte_matrix(q.rowwise->scale);
        out["amax"] = io::from_float_vector(q.rowwise->amax);
      }
      if (q.columnwise) {
        out["data_t"] = io::from_byte_matrix(q.columnwise->data);
        out["scale_t"] = io::from_byte_matrix(q.columnwise->scale);
        out["amax_t"] = io::from_float_vector(q.columnwise->amax);
      }
      if (q.global_scale) out["global_scale"] = io::from_float_vector(FloatVector({*q.global_scale}));
      break;
    }
    case Operation::kDequantize:
      out["x"] = io::from_float_matrix(dequantize(io::to_byte_matrix(case_input(c, "data"), op, "data"),
                                                  io::to_byte_matrix(case_input(c, "scale"), op, "scale"),
                                                  io::to_float_vector(case_input(c, "amax"), op, "amax"), profile),
                                       float_type(c.params.output_dtype, op));
      break;
    case Operation::kSwizzle:
      out["scale"] = io::from_byte_matrix(swizzle_scales(io::to_byte_matrix(case_input(c, "scale"), op, "scale")));
      break;
    case Operation::kUnswizzle:
      out["scale"] = io::from_byte_matrix(unswizzle_scales(io::to_byte_matrix(case_input(c, "scale"), op, "scale")));
      break;
    case Operation::kTransposePacked:
      out["data"] = io::from_byte_matrix(transpose_packed(io::to_byte_matrix(case_input(c, "data"), op, "data")));
      break;
    case Operation::kTransposeScales2D:
      out["scale"] = io::from_byte_matrix(transpose_scales_2d(io::to_byte_matrix(case_input(c, "scale"), op, "scale"),
                                                              std::size_t(c.params.M), std::size_t(c.params.K)));
      break;
    case Operation::kAmaxPartial: {
      const ShardInput in = shard_input(c);
      const PartialAmax a = amax_partial(in.xs, in.M, in.K, in.shard, profile.amax);
      out["tile_amax"] = matrix_tensor(a.tiles);
      out["amax"] = io::from_float_vector(FloatVector({a.amax}));
      break;
    }
    case Operation::kFusedScale: {
      const FusedScaleInput in = fused_scale_input(c);
      const FusedScale f = fused_scale_2d(in.tile_amax, in.amax, profile.gs);
      out["tile_scale"] = matrix_tensor(f.tile_scale);
      out["scale"] = io::from_byte_matrix(f.scale);
      out["amax"] = io::from_float_vector(FloatVector({f.amax}));
      out["global_scale"] = io::from_float_vector(FloatVector({f.S}));
      break;
    }
    case Operation::kPartialCast: {
      PartialCastInput in = partial_cast_input(c);
      partial_cast_2d(in.shard.xs, in.shard.M, in.shard.K, in.shard.shard, in.tile_scale, in.S, in.target,
                      ByteSpan{in.data.data(), in.data.size()});
      out["data"] = partial_cast_output(in, in.data);
      break;
    }
    case Operation::kCastMasterWeights: {
      const MasterWeightsInput in = master_weights_input(c);
      const std::vector<CastWeight> w = cast_master_weights(in.weights, in.ranks, profile);
      for (std::size_t i = 0; i < w.size(); ++i) add_cast_weight_outputs(out, in.names[i], w[i]);
      break;
    }
  }
  return out;
}

}  // namespace nvfp4
