// The distributed 2D weight cast (docs/NUMERICS.md §3.4, §3.15-§3.17): partial amax of a shard,
// fused scale, partial cast at any shard offset, and the whole flow across R ranks.
#include <xtensor/xview.hpp>

#include "cases/distributed_case.h"
#include "cases/ops/families.h"
#include "cases/ops/param_specs.h"
#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "io/tensor_convert.h"
#include "reference/distributed_formulas.h"
#include "reference/fused_scale.h"
#include "reference/layout.h"
#include "reference/partial_amax.h"

namespace nvfp4::cases {
namespace {

io::Tensor matrix(const FloatMatrix& m) { return io::from_float_matrix(m, io::FloatType::F32); }

TensorMap amax_outputs(const FloatMatrix& tiles, float amax) {
  TensorMap out;
  out["tile_amax"] = matrix(tiles);
  out["amax"] = io::from_float_vector(FloatVector({amax}));
  return out;
}

TensorMap fused_scale_outputs(const FusedScale& f) {
  TensorMap out;
  out["tile_scale"] = matrix(f.tile_scale);
  out["scale"] = io::from_byte_matrix(f.scale);
  out["amax"] = io::from_float_vector(FloatVector({f.amax}));
  out["global_scale"] = io::from_float_vector(FloatVector({f.S}));
  return out;
}

TensorMap run_amax_partial(const Case& c) {
  const ShardInput in = shard_input(c);
  const PartialAmax a = amax_partial(in.xs, in.M, in.K, in.shard, case_profile(c).amax);
  return amax_outputs(a.tiles, a.amax);
}

TensorMap run_fused_scale(const Case& c) {
  const FusedScaleInput in = fused_scale_input(c);
  return fused_scale_outputs(fused_scale_2d(in.tile_amax, in.amax, case_profile(c).gs));
}

TensorMap run_partial_cast(const Case& c) {
  PartialCastInput in = partial_cast_input(c);
  partial_cast_2d(in.shard.xs, in.shard.M, in.shard.K, in.shard.shard, in.tile_scale, in.S, in.target,
                  ByteSpan{in.data.data(), in.data.size()});
  TensorMap out;
  out["data"] = partial_cast_output(in, in.data);
  return out;
}

TensorMap run_cast_master_weights(const Case& c) {
  const MasterWeightsInput in = master_weights_input(c);
  const std::vector<CastWeight> w = cast_master_weights(in.weights, in.ranks, case_profile(c));
  TensorMap out;
  for (std::size_t i = 0; i < w.size(); ++i) add_cast_weight_outputs(out, in.names[i], w[i]);
  return out;
}

// A shard is splittable: the partial amaxes of its two halves, combined with the amax NaN rule,
// are the whole shard's.
TensorMap amax_partial_by_halves(const Case& c) {
  const ShardInput in = shard_input(c);
  const AmaxRule rule = case_profile(c).amax;
  const std::int64_t split = in.shard.length / 2;
  const PartialAmax a = amax_partial(xt::view(in.xs, xt::range(0, split)), in.M, in.K, Shard{in.shard.start, split}, rule);
  const PartialAmax b = amax_partial(xt::view(in.xs, xt::range(split, in.shard.length)), in.M, in.K,
                                     Shard{in.shard.start + split, in.shard.length - split}, rule);
  FloatMatrix tiles = a.tiles;
  for (std::size_t i = 0; i < tiles.size(); ++i) tiles.data()[i] = amax_combine(rule, tiles.data()[i], b.tiles.data()[i]);
  return amax_outputs(tiles, amax_combine(rule, a.amax, b.amax));
}

// The fused scale is local to a tile row: each row of tiles computed alone, then stacked.
TensorMap fused_scale_by_tile_rows(const Case& c) {
  const FusedScaleInput in = fused_scale_input(c);
  const GlobalScaleRule rule = case_profile(c).gs;
  FusedScale whole = fused_scale_2d(xt::view(in.tile_amax, xt::range(0, 0), xt::all()), in.amax, rule);
  const std::size_t tr = in.tile_amax.shape(0), tc = in.tile_amax.shape(1);
  whole.tile_scale = xt::empty<float>({tr, tc});
  whole.scale = xt::zeros<std::uint8_t>({std::size_t(scale_rows(std::int64_t(16 * tr))), whole.scale.shape(1)});
  for (std::size_t i = 0; i < tr; ++i) {
    const FusedScale row = fused_scale_2d(xt::view(in.tile_amax, xt::range(i, i + 1), xt::all()), in.amax, rule);
    xt::view(whole.tile_scale, i, xt::all()) = xt::view(row.tile_scale, 0, xt::all());
    xt::view(whole.scale, xt::range(16 * i, 16 * i + 16), xt::all()) = xt::view(row.scale, xt::range(0, 16), xt::all());
  }
  return fused_scale_outputs(whole);
}

// A shard cast in two pieces into the same destination: the second piece must keep the first
// piece's nibble in the byte they may share.
TensorMap partial_cast_by_halves(const Case& c) {
  PartialCastInput in = partial_cast_input(c);
  const Shard& s = in.shard.shard;
  const std::int64_t split = s.length / 2;
  for (const auto& [a, b] : {std::pair<std::int64_t, std::int64_t>{0, split}, {split, s.length}}) {
    const Shard piece{s.start + a, b - a};
    const bool whole = in.target == CastTarget::kWholeTensor;
    const std::int64_t offset = whole ? 0 : shard_local_byte(piece.start, s.start);
    const std::size_t bytes = whole ? in.data.size() : std::size_t(piece.local_bytes());
    partial_cast_2d(xt::view(in.shard.xs, xt::range(a, b)), in.shard.M, in.shard.K, piece, in.tile_scale, in.S, in.target,
                    ByteSpan{in.data.data() + offset, bytes});
  }
  TensorMap out;
  out["data"] = partial_cast_output(in, in.data);
  return out;
}

// §3.17's property: the flow across ranks equals quantize_2d of each whole BF16-rounded weight
// with its own global amax, whatever the ranks and cut points.
TensorMap master_weights_via_quantize_2d(const Case& c) {
  const MasterWeightsInput in = master_weights_input(c);
  validate_flow_profile(c.op, case_profile(c));
  TensorMap out;
  for (std::size_t i = 0; i < in.weights.size(); ++i) {
    Case q = make_case("quantize");
    q.params.set("profile", c.params.text("profile"));
    q.knobs = c.knobs;
    set_quantize_params(q, BlockShape::k2D, Direction::kBoth);
    q.inputs["x"] = io::from_float_matrix(in.weights[i], io::FloatType::BF16);
    const TensorMap r = ReferenceBackend().run(q);
    for (const char* t : {"data", "scale", "amax", "data_t", "scale_t"}) out[in.names[i] + "." + t] = r.at(t);
  }
  return out;
}

OperationSpec distributed_op(std::string_view name, std::string_view summary, std::string_view section) {
  OperationSpec op;
  op.name = name;
  op.family = "distributed";
  op.summary = summary;
  op.section = section;
  op.params = {profile_param()};
  return op;
}

}  // namespace

std::vector<OperationSpec> distributed_operations() {
  const std::vector<io::DType> f32 = {io::DType::F32}, u8 = {io::DType::U8}, bf16 = {io::DType::BF16};
  const ParamSpec M = int_param("M", "rows of the weight"), K = int_param("K", "columns of the weight"),
                  start = int_param("shard_start", "the shard's first element in the flattened weight");

  OperationSpec amax = distributed_op("amax_partial", "tile amaxes and amax of a shard [s, s+len) of an M x K weight", "§3.4");
  amax.params.insert(amax.params.end(), {M, K, start});
  amax.inputs = {{.name = "xs", .dtypes = bf16, .shape = "[len] (the shard's BF16 values)", .ranks = {1}}};
  amax.outputs = {{"tile_amax", f32, "[M/16, K/16] (0 where the shard has no element)"}, {"amax", f32, "[1]"}};
  amax.reference = run_amax_partial;
  amax.metamorphic = amax_partial_by_halves;
  amax.relation = "the NaN-rule combination of the partial amaxes of the shard's two halves";

  OperationSpec fused =
      distributed_op("fused_scale_2d", "tile scales, compact rowwise scales and S from tile amaxes and g", "§3.15");
  fused.inputs = {{.name = "tile_amax", .dtypes = f32, .shape = "[M/16, K/16]", .ranks = {2}},
                  {.name = "amax", .dtypes = f32, .shape = "[1] (g)", .ranks = {1}}};
  fused.outputs = {{"tile_scale", f32, "[M/16, K/16]"},
                   {"scale", u8, "[roundup(M, 128), roundup(K/16, 4)]"},
                   {"amax", f32, "[1] (g, passed through)"},
                   {"global_scale", f32, "[1] (S)"}};
  fused.reference = run_fused_scale;
  fused.metamorphic = fused_scale_by_tile_rows;
  fused.relation = "each row of tiles computed alone, then stacked";

  OperationSpec cast = distributed_op("partial_cast_2d", "E2M1 codes of a shard written into its owned nibbles only", "§3.16");
  cast.params.insert(cast.params.end(), {M, K, start});
  cast.inputs = {{.name = "xs", .dtypes = bf16, .shape = "[len]", .ranks = {1}},
                 {.name = "tile_scale", .dtypes = f32, .shape = "[M/16, K/16]", .ranks = {2}},
                 {.name = "global_scale", .dtypes = f32, .shape = "[1] (S)", .ranks = {1}},
                 {.name = "data",
                  .dtypes = u8,
                  .shape = "[local_bytes] (shard-local) or [M, K/2] (whole tensor): the prior bytes",
                  .ranks = {1, 2}}};
  cast.outputs = {{"data", u8, "shaped like the input data"}};
  cast.reference = run_partial_cast;
  cast.metamorphic = partial_cast_by_halves;
  cast.relation = "the shard cast in two pieces into the same destination";

  OperationSpec flow = distributed_op("cast_master_weights", "the master-weight cast across R data-parallel ranks", "§3.17");
  flow.params.push_back({"cuts",
                         ParamType::kIntList,
                         {},
                         std::vector<std::int64_t>{},
                         "the R-1 flat cut points between ranks in the name-ordered concatenation of the weights"});
  flow.inputs = {{.name = "*", .dtypes = f32, .shape = "any number of weights [M_i, K_i], in name order", .ranks = {2}}};
  flow.outputs = {
      {"*", {io::DType::U8, io::DType::F32}, "NAME.data, NAME.scale, NAME.amax, NAME.data_t, NAME.scale_t per weight"}};
  flow.reference = run_cast_master_weights;
  flow.metamorphic = master_weights_via_quantize_2d;
  flow.relation = "quantize (2d, both) of each whole BF16-rounded weight";
  return {amax, fused, cast, flow};
}

}  // namespace nvfp4::cases
