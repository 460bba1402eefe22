#include "fuzz/metamorphic_backend.h"

#include <xtensor/xview.hpp>

#include "fuzz/distributed_case.h"
#include "fuzz/reference_backend.h"
#include "io/tensor_convert.h"
#include "reference/distributed_formulas.h"
#include "reference/layout.h"
#include "reference/partial_amax.h"

namespace nvfp4 {
namespace {

io::Tensor transposed(const io::Tensor& t) {
  const std::size_t rows = t.shape.at(0), cols = t.shape.at(1), size = io::dtype_size(t.dtype);
  io::Tensor out{t.dtype, {std::int64_t(cols), std::int64_t(rows)}, std::vector<std::uint8_t>(t.bytes.size())};
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      std::memcpy(&out.bytes[(c * rows + r) * size], &t.bytes[(r * cols + c) * size], size);
  return out;
}

Case with_input(const Case& c, const std::string& name, io::Tensor t) {
  Case d = c;
  d.inputs[name] = std::move(t);
  return d;
}

// Rows [r0, r0 + n) of a 2-D tensor.
io::Tensor row_slice(const io::Tensor& t, std::int64_t r0, std::int64_t n) {
  const std::size_t row_bytes = t.shape.at(1) * io::dtype_size(t.dtype);
  io::Tensor out{t.dtype, {n, t.shape.at(1)}, {}};
  out.bytes.assign(t.bytes.begin() + r0 * row_bytes, t.bytes.begin() + (r0 + n) * row_bytes);
  return out;
}

io::Tensor concat_rows(const std::vector<io::Tensor>& parts, std::int64_t cols, io::DType dtype) {
  io::Tensor out{dtype, {0, cols}, {}};
  for (const io::Tensor& p : parts) {
    out.shape[0] += p.shape.at(0);
    out.bytes.insert(out.bytes.end(), p.bytes.begin(), p.bytes.end());
  }
  return out;
}

TensorMap quantize_via_transpose(const Case& c) {
  Case t = with_input(c, "x", transposed(c.inputs.at("x")));
  if (c.params.direction == Direction::kRowwise) t.params.direction = Direction::kColumnwise;
  if (c.params.direction == Direction::kColumnwise) t.params.direction = Direction::kRowwise;
  TensorMap q = ReferenceBackend().run(t), out;
  for (auto& [name, tensor] : q) {
    if (name == "global_scale") out[name] = std::move(tensor);
    else if (name.size() > 2 && name.substr(name.size() - 2) == "_t") out[name.substr(0, name.size() - 2)] = std::move(tensor);
    else out[name + "_t"] = std::move(tensor);
  }
  return out;
}

TensorMap dequantize_by_row_slices(const Case& c) {
  const io::Tensor &data = c.inputs.at("data"), &scale = c.inputs.at("scale"), &amax = c.inputs.at("amax");
  const std::int64_t M = data.shape.at(0), K = 2 * data.shape.at(1);
  if (M % 16 || scale.shape.at(0) != scale_rows(M) || (amax.shape.at(0) != 1 && amax.shape.at(0) != M))
    return ReferenceBackend().run(c);  // the relation needs whole 16-row slices; errors come from the reference
  std::vector<io::Tensor> parts;
  for (std::int64_t r0 = 0; r0 < M; r0 += 16) {
    Case s = c;
    s.inputs["data"] = row_slice(data, r0, 16);
    io::Tensor sc = row_slice(scale, r0, 16);
    sc.shape[0] = 128;  // pad the slice's scale matrix to 128 rows with 0x00
    sc.bytes.resize(128 * scale.shape.at(1), 0);
    s.inputs["scale"] = sc;
    if (amax.shape.at(0) == M) {  // row-scaled: the slice's 16 amaxes
      io::Tensor a = row_slice(io::Tensor{amax.dtype, {M, 1}, amax.bytes}, r0, 16);
      a.shape = {16};
      s.inputs["amax"] = a;
    }
    parts.push_back(ReferenceBackend().run(s).at("x"));
  }
  TensorMap out;
  out["x"] = concat_rows(parts, K, c.params.output_dtype);
  return out;
}

TensorMap amax_via_transpose(const Case& c) {
  static const std::map<Operation, Operation> kTwin = {
      {Operation::kAmaxRows, Operation::kAmaxCols},           {Operation::kAmaxCols, Operation::kAmaxRows},
      {Operation::kAmaxBlocks1x16, Operation::kAmaxBlocks16x1}, {Operation::kAmaxBlocks16x1, Operation::kAmaxBlocks1x16},
      {Operation::kAmaxTiles16x16, Operation::kAmaxTiles16x16}};
  if (c.op == Operation::kAmaxGlobal) {
    Case rows = c;
    rows.op = Operation::kAmaxRows;
    const FloatVector r = io::to_float_vector(ReferenceBackend().run(rows).at("amax"), "amax_global", "amax");
    float g = 0.0f;
    for (float v : r) g = amax_combine(case_profile(c.params).amax, g, v);
    TensorMap out;
    out["amax"] = io::from_float_vector(FloatVector({g}));
    return out;
  }
  Case t = with_input(c, "x", transposed(c.inputs.at("x")));
  t.op = kTwin.at(c.op);
  TensorMap out = ReferenceBackend().run(t);
  if (out.at("amax").shape.size() == 2) out["amax"] = transposed(out.at("amax"));
  return out;
}

TensorMap swizzle_by_bands(const Case& c) {
  const io::Tensor& s = c.inputs.at("scale");
  if (s.shape.size() != 2 || s.shape[0] % 128 || s.shape[1] % 4) return ReferenceBackend().run(c);
  // A 128-row band's swizzled bytes are contiguous and in band order (§2.4.2).
  std::vector<io::Tensor> parts;
  for (std::int64_t r0 = 0; r0 < s.shape[0]; r0 += 128) parts.push_back(ReferenceBackend().run(with_input(c, "scale", row_slice(s, r0, 128))).at("scale"));
  TensorMap out;
  out["scale"] = concat_rows(parts, s.shape[1], io::DType::U8);
  return out;
}

// Scatters each first-row-of-group byte to its 16 output rows (the reference gathers).
TensorMap transpose_scales_by_scatter(const Case& c) {
  const ByteMatrix in = io::to_byte_matrix(c.inputs.at("scale"), "transpose_scales_2d", "scale");
  const std::int64_t M = c.params.M, K = c.params.K;
  if (M < 0 || K < 0 || std::int64_t(in.shape(0)) != scale_rows(M) || std::int64_t(in.shape(1)) != scale_cols(K))
    return ReferenceBackend().run(c);
  ByteMatrix out = xt::zeros<std::uint8_t>({std::size_t(scale_rows(K)), std::size_t(scale_cols(M))});
  for (std::int64_t i = 0; i < M / 16; ++i)
    for (std::int64_t j = 0; j < K / 16; ++j)
      for (std::int64_t k = 16 * j; k < 16 * j + 16; ++k) out(k, i) = in(16 * i, j);
  TensorMap result;
  result["scale"] = io::from_byte_matrix(out);
  return result;
}

TensorMap transpose_via_nibbles(const Case& c) {
  const ByteMatrix in = io::to_byte_matrix(c.inputs.at("data"), "transpose_packed", "data");
  const std::size_t M = in.shape(0), K = 2 * in.shape(1);
  if (M % 2) return ReferenceBackend().run(c);
  ByteMatrix nibbles = xt::empty<std::uint8_t>({M, K});
  for (std::size_t r = 0; r < M; ++r)
    for (std::size_t k = 0; k < K; ++k) nibbles(r, k) = nibble_at(in(r, k / 2), k % 2);
  const ByteMatrix t = xt::transpose(nibbles);
  ByteMatrix out = xt::empty<std::uint8_t>({K, M / 2});
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t j = 0; j < M / 2; ++j) out(k, j) = pack_nibbles(t(k, 2 * j), t(k, 2 * j + 1));
  TensorMap result;
  result["data"] = io::from_byte_matrix(out);
  return result;
}

// A shard is splittable: the partial amaxes of its two halves, combined with the amax NaN rule,
// are the whole shard's.
TensorMap amax_partial_by_halves(const Case& c) {
  const ShardInput in = shard_input(c);
  const AmaxRule rule = case_profile(c.params).amax;
  const std::int64_t split = in.shard.length / 2;
  const PartialAmax a = amax_partial(xt::view(in.xs, xt::range(0, split)), in.M, in.K, Shard{in.shard.start, split}, rule);
  const PartialAmax b = amax_partial(xt::view(in.xs, xt::range(split, in.shard.length)), in.M, in.K,
                                     Shard{in.shard.start + split, in.shard.length - split}, rule);
  FloatMatrix tiles = a.tiles;
  for (std::size_t i = 0; i < tiles.size(); ++i) tiles.data()[i] = amax_combine(rule, tiles.data()[i], b.tiles.data()[i]);
  TensorMap out;
  out["tile_amax"] = io::from_float_matrix(tiles, io::FloatType::F32);
  out["amax"] = io::from_float_vector(FloatVector({amax_combine(rule, a.amax, b.amax)}));
  return out;
}

// The fused scale is local to a tile row: each row of tiles computed alone, then stacked.
TensorMap fused_scale_by_tile_rows(const Case& c) {
  const FusedScaleInput in = fused_scale_input(c);
  const GlobalScaleRule rule = case_profile(c.params).gs;
  FusedScale whole = fused_scale_2d(xt::view(in.tile_amax, xt::range(0, 0), xt::all()), in.amax, rule);
  const std::size_t tr = in.tile_amax.shape(0), tc = in.tile_amax.shape(1);
  whole.tile_scale = xt::empty<float>({tr, tc});
  whole.scale = xt::zeros<std::uint8_t>({std::size_t(scale_rows(std::int64_t(16 * tr))), whole.scale.shape(1)});
  for (std::size_t i = 0; i < tr; ++i) {
    const FusedScale row = fused_scale_2d(xt::view(in.tile_amax, xt::range(i, i + 1), xt::all()), in.amax, rule);
    xt::view(whole.tile_scale, i, xt::all()) = xt::view(row.tile_scale, 0, xt::all());
    xt::view(whole.scale, xt::range(16 * i, 16 * i + 16), xt::all()) = xt::view(row.scale, xt::range(0, 16), xt::all());
  }
  TensorMap out;
  out["tile_scale"] = io::from_float_matrix(whole.tile_scale, io::FloatType::F32);
  out["scale"] = io::from_byte_matrix(whole.scale);
  out["amax"] = io::from_float_vector(FloatVector({whole.amax}));
  out["global_scale"] = io::from_float_vector(FloatVector({whole.S}));
  return out;
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
    partial_cast_2d(xt::view(in.shard.xs, xt::range(a, b)), in.shard.M, in.shard.K, piece, in.tile_scale, in.S,
                    in.target, ByteSpan{in.data.data() + offset, bytes});
  }
  TensorMap out;
  out["data"] = partial_cast_output(in, in.data);
  return out;
}

// NUMERICS.md §3.17's property: the flow across ranks equals quantize_2d of each whole BF16-rounded
// weight with its own global amax, whatever the ranks and cut points.
TensorMap master_weights_via_quantize_2d(const Case& c) {
  const MasterWeightsInput in = master_weights_input(c);
  validate_flow_profile(operation_name(c.op), case_profile(c.params));
  TensorMap out;
  for (std::size_t i = 0; i < in.weights.size(); ++i) {
    Case q;
    q.op = Operation::kQuantize;
    q.params.profile = c.params.profile;
    q.params.knobs = c.params.knobs;
    q.params.block = BlockShape::k2D;
    q.params.direction = Direction::kBoth;
    q.inputs["x"] = io::from_float_matrix(in.weights[i], io::FloatType::BF16);
    const TensorMap r = ReferenceBackend().run(q);
    for (const char* t : {"data", "scale", "amax", "data_t", "scale_t"}) out[in.names[i] + "." + t] = r.at(t);
  }
  return out;
}

}  // namespace

TensorMap MetamorphicBackend::run(const Case& c) {
  switch (c.op) {
    case Operation::kQuantize: return quantize_via_transpose(c);
    case Operation::kDequantize: return dequantize_by_row_slices(c);
    case Operation::kSwizzle:
    case Operation::kUnswizzle: return swizzle_by_bands(c);
    case Operation::kTransposePacked: return transpose_via_nibbles(c);
    case Operation::kTransposeScales2D: return transpose_scales_by_scatter(c);
    case Operation::kAmaxPartial: return amax_partial_by_halves(c);
    case Operation::kFusedScale: return fused_scale_by_tile_rows(c);
    case Operation::kPartialCast: return partial_cast_by_halves(c);
    case Operation::kCastMasterWeights: return master_weights_via_quantize_2d(c);
    default: return amax_via_transpose(c);
  }
}

}  // namespace nvfp4
