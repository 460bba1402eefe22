#include "cases/distributed_case.h"

#include "io/tensor_convert.h"
#include "reference/error.h"

namespace nvfp4::cases {
namespace {

float single_float(const Case& c, const char* name) {
  const std::string_view op = c.op;
  const FloatVector v = io::to_float_vector(case_input(c, name), op, name);
  if (v.size() != 1) fail(op, ErrorCode::E_AMAX_SHAPE, "tensor '{}' has {} elements; expected 1", name, v.size());
  return v(0);
}

FloatMatrix tile_matrix(const Case& c, const char* name, std::int64_t M, std::int64_t K) {
  const std::string_view op = c.op;
  const io::Tensor& t = case_input(c, name);
  io::require_dtype(t, io::DType::F32, op, name);
  FloatMatrix m = io::to_float_matrix(t, op, name);
  if (M >= 0 && (std::int64_t(m.shape(0)) != M / 16 || std::int64_t(m.shape(1)) != K / 16))
    fail(op, ErrorCode::E_SCALE_SHAPE, "tensor '{}' is [{}, {}]; a {}x{} weight has [{}, {}] tiles", name, m.shape(0), m.shape(1),
         M, K, M / 16, K / 16);
  return m;
}

}  // namespace

ShardInput shard_input(const Case& c) {
  ShardInput in;
  in.M = c.params.integer("M");
  in.K = c.params.integer("K");
  in.xs = io::to_bf16_values(case_input(c, "xs"), c.op, "xs");
  in.shard = Shard{c.params.integer("shard_start"), std::int64_t(in.xs.size())};
  validate_shard(c.op, in.M, in.K, in.shard);
  return in;
}

FusedScaleInput fused_scale_input(const Case& c) { return {tile_matrix(c, "tile_amax", -1, -1), single_float(c, "amax")}; }

PartialCastInput partial_cast_input(const Case& c) {
  const std::string_view op = c.op;
  PartialCastInput in;
  in.shard = shard_input(c);
  in.tile_scale = tile_matrix(c, "tile_scale", in.shard.M, in.shard.K);
  in.S = single_float(c, "global_scale");
  const io::Tensor& data = case_input(c, "data");
  io::require_dtype(data, io::DType::U8, op, "data");
  if (data.shape.size() == 2) {
    in.target = CastTarget::kWholeTensor;
    if (data.shape[0] != in.shard.M || data.shape[1] != in.shard.K / 2)
      fail(op, ErrorCode::E_DATA_SHAPE, "whole-tensor 'data' is [{}, {}]; expected [{}, {}]", data.shape[0], data.shape[1],
           in.shard.M, in.shard.K / 2);
  } else if (data.shape.size() == 1) {
    in.target = CastTarget::kShardLocal;
    if (data.shape[0] != in.shard.shard.local_bytes())
      fail(op, ErrorCode::E_DATA_SHAPE, "shard-local 'data' has {} bytes; the shard [{}, {}) covers {}", data.shape[0],
           in.shard.shard.start, in.shard.shard.end(), in.shard.shard.local_bytes());
  } else {
    fail(op, ErrorCode::E_RANK, "tensor 'data' has rank {}; expected 1 (shard-local) or 2 (whole tensor)", data.shape.size());
  }
  in.data = data.bytes;
  return in;
}

io::Tensor partial_cast_output(const PartialCastInput& in, std::vector<std::uint8_t> bytes) {
  std::vector<std::int64_t> shape = {std::int64_t(bytes.size())};
  if (in.target == CastTarget::kWholeTensor) shape = {in.shard.M, in.shard.K / 2};
  return io::make_tensor(io::DType::U8, std::move(shape), bytes);
}

MasterWeightsInput master_weights_input(const Case& c) {
  const std::string_view op = c.op;
  MasterWeightsInput in;
  std::int64_t total = 0;
  for (const auto& [name, t] : c.inputs) {  // std::map: name order
    if (t.dtype != io::DType::F32)
      fail(op, ErrorCode::E_DTYPE, "weight '{}' has dtype {}; master weights are F32", name, io::dtype_name(t.dtype));
    in.names.push_back(name);
    in.weights.push_back(io::to_float_matrix(t, op, name));
    validate_weight_dims(op, t.shape[0], t.shape[1]);
    total += t.numel();
  }
  if (in.weights.empty()) fail(op, ErrorCode::E_UNSUPPORTED, "the case has no weights");
  in.ranks = rank_ranges(total, int(c.params.integers("cuts").size()) + 1, c.params.integers("cuts"));
  return in;
}

void add_cast_weight_outputs(TensorMap& out, const std::string& name, const CastWeight& w) {
  out[name + ".data"] = io::from_byte_matrix(w.data);
  out[name + ".scale"] = io::from_byte_matrix(w.scale);
  out[name + ".amax"] = io::from_float_vector(FloatVector({w.amax}));
  out[name + ".data_t"] = io::from_byte_matrix(w.data_t);
  out[name + ".scale_t"] = io::from_byte_matrix(w.scale_t);
}

}  // namespace nvfp4::cases
