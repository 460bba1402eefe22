#include "device/backend/device_backend.h"

#include <cstring>
#include <tuple>

#include "cases/experts.h"
#include "cases/gemm_case.h"
#include "cases/grouped_gemm_case.h"
#include "cases/quantize_case.h"
#include "cases/registry.h"
#include "device/backend/distributed_backend.h"
#include "device/backend/grouped_layout_case.h"
#include "device/backend/transfer.h"
#include "device/kernels/launch.h"
#include "device/runtime/device_buffer.h"
#include "io/tensor_convert.h"
#include "reference/error.h"
#include "reference/formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

// A 2-D F32/BF16/F16 input and its kernel element type.
InputType float_input(const io::Tensor& t, std::string_view op) {
  io::require_rank(t, 2, op, "x");
  switch (t.dtype) {
    case io::DType::F32:
      return InputType::F32;
    case io::DType::BF16:
      return InputType::BF16;
    case io::DType::F16:
      return InputType::F16;
    default:
      fail(op, ErrorCode::E_DTYPE, "tensor 'x' has dtype {}; expected F32, BF16 or F16", io::dtype_name(t.dtype));
  }
}

// The amax operations: one kernel each, with the reference's contracts on K and M.
enum class AmaxOp { kGlobal, kRows, kCols, kBlocks1x16, kBlocks16x1, kTiles16x16 };

cases::TensorMap amax_case(const cases::Case& c, cudaStream_t s, AmaxOp kind) {
  const std::string_view op = c.op;
  const Profile& profile = cases::case_profile(c);
  const io::Tensor& xt = cases::case_input(c, "x");
  const InputType type = float_input(xt, op);
  const std::int64_t M = xt.shape[0], K = xt.shape[1];
  const DeviceBuffer x = upload(xt, s);
  // Every amax but the global one needs K % 16 == 0; the blocks spanning 16 rows need M % 16 == 0.
  if (kind != AmaxOp::kGlobal && kind != AmaxOp::kBlocks16x1 && K % 16)
    fail(op, ErrorCode::E_DIM16_K, "K={} is not a multiple of 16", K);
  if ((kind == AmaxOp::kBlocks16x1 || kind == AmaxOp::kTiles16x16) && M % 16)
    fail(op, ErrorCode::E_DIM16_M, "M={} is not a multiple of 16", M);
  std::vector<std::int64_t> shape;
  switch (kind) {
    case AmaxOp::kGlobal:
      shape = {1};
      break;
    case AmaxOp::kRows:
      shape = {M};
      break;
    case AmaxOp::kCols:
      shape = {K};
      break;
    case AmaxOp::kBlocks1x16:
      shape = {M, K / 16};
      break;
    case AmaxOp::kBlocks16x1:
      shape = {M / 16, K};
      break;
    case AmaxOp::kTiles16x16:
      shape = {M / 16, K / 16};
      break;
  }
  DeviceBuffer result = poisoned(sizeof(float) * shape[0] * (shape.size() > 1 ? shape[1] : 1), s);
  float* r = result.get<float>();
  switch (kind) {
    case AmaxOp::kGlobal:
      launch_amax_global(x.get(), type, M, K, profile.amax, r, s);
      break;
    case AmaxOp::kRows:
      launch_amax_rows(x.get(), type, M, K, profile.amax, r, s);
      break;
    case AmaxOp::kCols:
      launch_amax_cols(x.get(), type, M, K, profile.amax, r, s);
      break;
    case AmaxOp::kBlocks1x16:
      launch_amax_blocks(x.get(), type, M, K, AmaxBlock::k1x16, profile.amax, r, s);
      break;
    case AmaxOp::kBlocks16x1:
      launch_amax_blocks(x.get(), type, M, K, AmaxBlock::k16x1, profile.amax, r, s);
      break;
    case AmaxOp::kTiles16x16:
      launch_amax_blocks(x.get(), type, M, K, AmaxBlock::k16x16, profile.amax, r, s);
      break;
  }
  cases::TensorMap out;
  out["amax"] = download(result, io::DType::F32, shape, s);
  return out;
}

// One quantize case on the device: its shape and options, and the buffers its steps fill.
struct QuantizeRun {
  const Profile& profile;
  QuantizeOptions o;
  InputType type;
  std::int64_t M, K;
  bool rowwise, columnwise;
  // With rht the columnwise copy is the rowwise quantization of y = rht(x) [K, M] (§3.19): fused,
  // with rht(x) recomputed and never stored, under one tensor amax; materialised for per-row ones.
  bool rht_columnwise;
  DeviceBuffer x{}, y{};
  DeviceBuffer amax{}, amax_t{};  // amax_t unset: the columnwise copy shares amax
  DeviceBuffer data{}, scale{}, data_t{}, scale_t{};
};

// Global amax: the override, per row and column, or one for the tensor.
void find_amax(QuantizeRun& q, cudaStream_t s) {
  const QuantizeOptions& o = q.o;
  const std::int64_t M = q.M, K = q.K;
  const AmaxRule rule = q.profile.amax;
  q.amax = DeviceBuffer(sizeof(float) * (o.row_scaled ? std::max<std::int64_t>(M, 1) : 1), s);
  if (o.amax) {
    q.amax.upload(&*o.amax, s);
  } else if (o.row_scaled) {
    q.amax_t = DeviceBuffer(sizeof(float) * std::max<std::int64_t>(K, 1), s);
    launch_amax_rows(q.x.get(), q.type, M, K, rule, q.amax.get<float>(), s);
    if (q.y)
      launch_amax_rows(q.y.get(), InputType::BF16, K, M, rule, q.amax_t.get<float>(), s);
    else
      launch_amax_cols(q.x.get(), q.type, M, K, rule, q.amax_t.get<float>(), s);
  } else {
    launch_amax_global(q.x.get(), q.type, M, K, rule, q.amax.get<float>(), s);
    if (q.rht_columnwise) {
      q.amax_t = DeviceBuffer(sizeof(float), s);
      launch_rht_amax(q.x.get<std::uint16_t>(), M, K, *o.rht_mask, q.profile.rht, rule, q.amax_t.get<float>(), s);
    }
  }
}

// Quantizes x into poisoned outputs of the directions asked for; with rht, the columnwise copy
// from y's rows or from rht(x) recomputed by the fused kernel.
void quantize_into_outputs(QuantizeRun& q, cudaStream_t s) {
  const QuantizeOptions& o = q.o;
  const std::int64_t M = q.M, K = q.K;
  QuantizeOutputs outs;
  if (q.rowwise) {
    q.data = poisoned(M * K / 2, s);
    q.scale = poisoned(scale_rows(M) * scale_cols(K), s);
    outs.data = q.data.get<std::uint8_t>();
    outs.scale = q.scale.get<std::uint8_t>();
  }
  if (q.columnwise) {
    q.data_t = poisoned(M * K / 2, s);
    q.scale_t = poisoned(scale_rows(K) * scale_cols(M), s);
    outs.data_t = q.data_t.get<std::uint8_t>();
    outs.scale_t = q.scale_t.get<std::uint8_t>();
  }
  QuantizeParams params;
  params.profile = q.profile;
  params.tiles_2d = o.block == BlockShape::k2D;
  params.row_scaled = o.row_scaled;
  params.amax = q.amax.get<float>();
  params.amax_t = q.amax_t ? q.amax_t.get<float>() : q.amax.get<float>();
  if (o.stochastic) {
    params.stochastic = true;
    params.seed = o.stochastic->seed;
    params.offset = o.stochastic->offset;
  }
  if (!q.rht_columnwise) return launch_quantize(q.x.get(), q.type, M, K, params, outs, s);
  // x gives the rowwise copy; y's rows, with the columnwise bits, the columnwise one.
  if (q.rowwise) launch_quantize(q.x.get(), q.type, M, K, params, QuantizeOutputs{outs.data, outs.scale, nullptr, nullptr}, s);
  QuantizeParams col = params;
  col.amax = params.amax_t;
  col.data_dir = SrDirection::kColumnwise;
  if (q.y)
    launch_quantize(q.y.get(), InputType::BF16, K, M, col, QuantizeOutputs{outs.data_t, outs.scale_t, nullptr, nullptr}, s);
  else
    launch_rht_quantize_columnwise(q.x.get<std::uint16_t>(), M, K, *o.rht_mask, col, outs.data_t, outs.scale_t, s);
}

// The outputs in the case's layouts: scales compact or swizzled, amaxes as the profile stores them.
cases::TensorMap quantize_outputs(const QuantizeRun& q, cudaStream_t s) {
  const QuantizeOptions& o = q.o;
  const Profile& profile = q.profile;
  const std::int64_t M = q.M, K = q.K;
  auto scale_tensor = [&](const DeviceBuffer& compact, std::int64_t rows, std::int64_t cols) {
    if (o.scale_layout == ScaleLayout::kCompact) return download(compact, io::DType::U8, {rows, cols}, s);
    DeviceBuffer swizzled = poisoned(rows * cols, s);
    launch_swizzle_scales(compact.get<std::uint8_t>(), rows, cols, swizzled.get<std::uint8_t>(), s);
    return download(swizzled, io::DType::U8, {rows, cols}, s);
  };
  // The amax outputs as the profile stores them (a NaN's bits: stored_amax).
  auto amax_tensor = [&](const DeviceBuffer& b, std::int64_t n) {
    io::Tensor t = download(b, io::DType::F32, {n}, s);
    for (std::int64_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, t.bytes.data() + 4 * i, 4);
      v = stored_amax(profile.amax, o.input, v);
      std::memcpy(t.bytes.data() + 4 * i, &v, 4);
    }
    return t;
  };
  cases::TensorMap out;
  if (q.rowwise) {
    out["data"] = download(q.data, io::DType::U8, {M, K / 2}, s);
    out["scale"] = scale_tensor(q.scale, scale_rows(M), scale_cols(K));
    out["amax"] = amax_tensor(q.amax, o.row_scaled ? M : 1);
  }
  if (q.columnwise) {
    out["data_t"] = download(q.data_t, io::DType::U8, {K, M / 2}, s);
    out["scale_t"] = scale_tensor(q.scale_t, scale_rows(K), scale_cols(M));
    out["amax_t"] = amax_tensor(q.amax_t ? q.amax_t : q.amax, o.row_scaled ? K : 1);
  }
  if (!o.row_scaled && profile.exported != ExportedGlobal::NONE) {
    // The stored second-level scale is one host formula of the global amax the device found.
    float g;
    const std::vector<std::uint8_t> bytes = q.amax.download(s);
    std::memcpy(&g, bytes.data(), sizeof g);
    const float v = exported_global(profile, global_scale(profile.gs, g), g);
    out["global_scale"] = io::make_tensor_from<float>(io::DType::F32, {1}, std::span(&v, 1));
  }
  return out;
}

cases::TensorMap quantize_case(const cases::Case& c, cudaStream_t s) {
  const Profile& profile = cases::case_profile(c);
  const io::Tensor& xt = cases::case_input(c, "x");
  const InputType type = float_input(xt, c.op);
  const std::int64_t M = xt.shape[0], K = xt.shape[1];
  const QuantizeOptions o = cases::quantize_options(c);
  validate_quantize(std::size_t(M), std::size_t(K), o);
  const bool columnwise = o.direction != Direction::kRowwise;
  QuantizeRun q{.profile = profile,
                .o = o,
                .type = type,
                .M = M,
                .K = K,
                .rowwise = o.direction != Direction::kColumnwise,
                .columnwise = columnwise,
                .rht_columnwise = o.rht_mask && columnwise};
  q.x = upload(xt, s);
  if (q.rht_columnwise && o.row_scaled) {
    q.y = poisoned(M * K * 2, s);
    launch_rht(q.x.get<std::uint16_t>(), M, K, *o.rht_mask, q.profile.rht, q.y.get<std::uint16_t>(), s);
  }
  find_amax(q, s);
  quantize_into_outputs(q, s);
  return quantize_outputs(q, s);
}

cases::TensorMap dequantize_case(const cases::Case& c, cudaStream_t s) {
  const std::string_view op = c.op;
  const Profile& profile = cases::case_profile(c);
  cases::TensorMap out;
  const io::Tensor &dt = cases::case_input(c, "data"), &st = cases::case_input(c, "scale"), &at = cases::case_input(c, "amax");
  io::require_rank(dt, 2, op, "data");
  io::require_rank(st, 2, op, "scale");
  io::require_rank(at, 1, op, "amax");
  io::require_dtype(dt, io::DType::U8, op, "data");
  io::require_dtype(st, io::DType::U8, op, "scale");
  io::require_dtype(at, io::DType::F32, op, "amax");
  const std::int64_t M = dt.shape[0], K = 2 * dt.shape[1];
  if (K % 16) fail(op, ErrorCode::E_DIM16_K, "K={} is not a multiple of 16", K);
  if (st.shape[0] != scale_rows(M) || st.shape[1] != scale_cols(K))
    fail(op, ErrorCode::E_SCALE_SHAPE, "scale is [{}, {}], expected [{}, {}] for data [{}, {}]", st.shape[0], st.shape[1],
         scale_rows(M), scale_cols(K), M, K / 2);
  if (at.shape[0] != 1 && at.shape[0] != M)
    fail(op, ErrorCode::E_AMAX_SHAPE, "amax has {} values, expected 1 or M={}", at.shape[0], M);
  const io::DType out_dtype = cases::dequantize_output_dtype(c);
  const OutputType type = out_dtype == io::DType::BF16  ? OutputType::BF16
                          : out_dtype == io::DType::F16 ? OutputType::F16
                                                        : OutputType::F32;
  const DeviceBuffer data = upload(dt, s), scale = upload(st, s), amax = upload(at, s);
  DeviceBuffer x = poisoned(M * K * io::dtype_size(out_dtype), s);
  launch_dequantize(data.get<std::uint8_t>(), scale.get<std::uint8_t>(), amax.get<float>(), at.shape[0], M, K, profile, type,
                    x.get(), s);
  out["x"] = download(x, out_dtype, {M, K}, s);
  return out;
}

cases::TensorMap swizzle_case(const cases::Case& c, cudaStream_t s, bool swizzle) {
  const std::string_view op = c.op;
  cases::TensorMap out;
  const io::Tensor& st = cases::case_input(c, "scale");
  io::require_rank(st, 2, op, "scale");
  io::require_dtype(st, io::DType::U8, op, "scale");
  const std::int64_t rows = st.shape[0], cols = st.shape[1];
  if (rows % 128 || cols % 4)
    fail(op, ErrorCode::E_SCALE_SHAPE, "scale matrix [{}, {}] is not padded to [multiple of 128, multiple of 4]", rows, cols);
  const DeviceBuffer in = upload(st, s);
  DeviceBuffer result = poisoned(rows * cols, s);
  (swizzle ? launch_swizzle_scales : launch_unswizzle_scales)(in.get<std::uint8_t>(), rows, cols, result.get<std::uint8_t>(), s);
  out["scale"] = download(result, io::DType::U8, {rows, cols}, s);
  return out;
}

cases::TensorMap transpose_packed_case(const cases::Case& c, cudaStream_t s) {
  const std::string_view op = c.op;
  cases::TensorMap out;
  const io::Tensor& dt = cases::case_input(c, "data");
  io::require_rank(dt, 2, op, "data");
  io::require_dtype(dt, io::DType::U8, op, "data");
  const std::int64_t M = dt.shape[0], K = 2 * dt.shape[1];
  if (M % 2) fail(op, ErrorCode::E_EVEN, "M={} is odd", M);
  const DeviceBuffer in = upload(dt, s);
  DeviceBuffer result = poisoned(M * K / 2, s);
  launch_transpose_packed(in.get<std::uint8_t>(), M, K, result.get<std::uint8_t>(), s);
  out["data"] = download(result, io::DType::U8, {K, M / 2}, s);
  return out;
}

cases::TensorMap transpose_scales_2d_case(const cases::Case& c, cudaStream_t s) {
  const std::string_view op = c.op;
  cases::TensorMap out;
  const io::Tensor& st = cases::case_input(c, "scale");
  io::require_rank(st, 2, op, "scale");
  io::require_dtype(st, io::DType::U8, op, "scale");
  const std::int64_t M = c.params.integer("M"), K = c.params.integer("K");
  if (st.shape[0] != scale_rows(M) || st.shape[1] != scale_cols(K))
    fail(op, ErrorCode::E_SCALE_SHAPE, "scale is [{}, {}], expected [{}, {}] for M={}, K={}", st.shape[0], st.shape[1],
         scale_rows(M), scale_cols(K), M, K);
  const DeviceBuffer in = upload(st, s);
  DeviceBuffer result = poisoned(scale_rows(K) * scale_cols(M), s);
  launch_transpose_scales_2d(in.get<std::uint8_t>(), M, K, result.get<std::uint8_t>(), s);
  out["scale"] = download(result, io::DType::U8, {scale_rows(K), scale_cols(M)}, s);
  return out;
}

cases::TensorMap rht_case(const cases::Case& c, cudaStream_t s) {
  const std::string_view op = c.op;
  const io::Tensor& xt = cases::case_input(c, "x");
  io::require_rank(xt, 2, op, "x");
  io::require_dtype(xt, io::DType::BF16, op, "x");
  const std::int64_t M = xt.shape[0], N = xt.shape[1];
  if (M % 16) fail(op, ErrorCode::E_DIM16_M, "M={} is not a multiple of 16", M);
  if (N % 16) fail(op, ErrorCode::E_DIM16_K, "N={} is not a multiple of 16", N);
  const std::uint16_t mask = cases::rht_mask_param(c);
  const RhtSum sum = cases::rht_sum_param(c);
  const DeviceBuffer x = upload(xt, s);
  DeviceBuffer y = poisoned(M * N * 2, s);
  launch_rht(x.get<std::uint16_t>(), M, N, mask, sum, y.get<std::uint16_t>(), s);
  cases::TensorMap out;
  out["x_t"] = download(y, io::DType::BF16, {N, M}, s);
  return out;
}

// ---- GEMM (§3.20) ----
// One operand's tensors, checked as the reference reads them (cases/gemm_case.cpp).
struct GemmTensors {
  const io::Tensor *data, *scale, *amax;
};

GemmTensors gemm_operand(const cases::Case& c, const std::string& side, bool swizzled) {
  const std::string data = side + "_data", scale = side + "_scale", amax = side + "_amax";
  const GemmTensors t{&cases::case_input(c, data.c_str()), &cases::case_input(c, scale.c_str()),
                      &cases::case_input(c, amax.c_str())};
  io::require_rank(*t.data, 2, c.op, data);
  io::require_dtype(*t.data, io::DType::U8, c.op, data);
  io::require_rank(*t.scale, 2, c.op, scale);
  io::require_dtype(*t.scale, io::DType::U8, c.op, scale);
  if (swizzled && (t.scale->shape[0] % 128 || t.scale->shape[1] % 4))
    fail(c.op, ErrorCode::E_SCALE_SHAPE, "{} is [{}, {}]: a swizzled buffer has a multiple of 128 rows and of 4 columns", scale,
         t.scale->shape[0], t.scale->shape[1]);
  io::require_rank(*t.amax, 1, c.op, amax);
  io::require_dtype(*t.amax, io::DType::F32, c.op, amax);
  return t;
}

float first_float(const io::Tensor& t) {
  float v;
  std::memcpy(&v, t.bytes.data(), sizeof v);
  return v;
}

// A GEMM case's inputs and options, checked.
struct GemmCaseInputs {
  GemmOptions o;
  bool swizzled;
  io::DType out_dtype;
  GemmTensors a, b;
  const io::Tensor* c;     // nullptr: none
  const io::Tensor* bias;  // nullptr: none
  std::int64_t M, N, K;
};

// The reference's checks in its order (cases/gemm_case.cpp, then reference/gemm.cpp), so that
// both reject a case with the same code; then the kernels' own limit on K.
GemmCaseInputs checked_gemm_inputs(const cases::Case& c) {
  const std::string_view op = c.op;
  const GemmOptions o = cases::gemm_options(c);
  const bool swizzled = cases::gemm_scales_swizzled(c);
  const io::DType out_dtype = cases::gemm_output_dtype(c);
  const GemmTensors a = gemm_operand(c, "a", swizzled), b = gemm_operand(c, "b", swizzled);
  const io::Tensor* ct = c.inputs.count("c") ? &cases::case_input(c, "c") : nullptr;
  if (ct) {
    io::require_rank(*ct, 2, op, "c");
    io::require_dtype(*ct, o.accumulate ? out_dtype : io::DType::F32, op, "c");  // the accumulator is of the output dtype
  }
  const io::Tensor* bias = c.params.flag("with_bias") ? &cases::case_input(c, "bias") : nullptr;
  if (bias) {
    io::require_rank(*bias, 1, op, "bias");
    io::require_dtype(*bias, io::DType::F32, op, "bias");
  }
  const std::int64_t M = a.data->shape[0], N = b.data->shape[0], K = 2 * a.data->shape[1], Kb = 2 * b.data->shape[1];
  if (K != Kb) fail(op, ErrorCode::E_GEMM_K, "A has K={} and B has K={}", K, Kb);
  if (K == 0 || K % 16) fail(op, ErrorCode::E_GEMM_K, "K={} is not a positive multiple of 16", K);
  if (o.row_scaled && (o.alpha || o.beta))
    fail(op, ErrorCode::E_UNSUPPORTED,
         "row_scaled takes neither alpha nor beta: α comes from amaxes of 1 and the result is post-scaled");
  if (o.accumulate && !o.row_scaled)
    fail(op, ErrorCode::E_UNSUPPORTED, "accumulate is the row-scaled path's; use beta otherwise");
  for (const auto& [t, name, rows] : {std::tuple{a, "a_amax", M}, std::tuple{b, "b_amax", N}}) {
    const std::int64_t n = t.amax->shape[0];
    if (n != 1 && !(o.row_scaled && n == rows))
      fail(op, ErrorCode::E_AMAX_SHAPE, "{} has {} values, expected 1{}", name, n,
           o.row_scaled ? fmt::format(" or {}", rows) : "");
  }
  if (o.beta || o.accumulate) {
    if (!ct) fail(op, ErrorCode::E_UNSUPPORTED, "beta or accumulate given without the tensor c");
    if (ct->shape[0] != M || ct->shape[1] != N)
      fail(op, ErrorCode::E_DATA_SHAPE, "c is [{}, {}], expected [{}, {}]", ct->shape[0], ct->shape[1], M, N);
  }
  if (bias && bias->shape[0] != N) fail(op, ErrorCode::E_DATA_SHAPE, "bias has {} values, expected N={}", bias->shape[0], N);
  for (const auto& [t, name, rows] : {std::tuple{a, "a_scale", M}, std::tuple{b, "b_scale", N}})
    if (t.scale->shape[0] != scale_rows(rows) || t.scale->shape[1] != scale_cols(K))
      fail(op, ErrorCode::E_SCALE_SHAPE, "{} is [{}, {}], expected [{}, {}] for {} rows and K={}", name, t.scale->shape[0],
           t.scale->shape[1], scale_rows(rows), scale_cols(K), rows, K);
  if (K / 16 > kGemmMaxBlocks)
    fail(op, ErrorCode::E_UNSUPPORTED,
         "K={} exceeds the GPU kernel's limit of {} (K/16 <= {} blocks: the block sum is held in 64 bits)", K,
         16 * kGemmMaxBlocks, kGemmMaxBlocks);
  return {o, swizzled, out_dtype, a, b, ct, bias, M, N, K};
}

cases::TensorMap gemm_case(const cases::Case& c, cudaStream_t s) {
  const auto [o, swizzled, out_dtype, a, b, ct, bias, M, N, K] = checked_gemm_inputs(c);
  cases::TensorMap out;
  if (M == 0 || N == 0) {  // nothing to launch
    out["d"] = io::make_tensor(out_dtype, {M, N}, {});
    return out;
  }
  const DeviceBuffer a_data = upload(*a.data, s), a_scale = upload(*a.scale, s), b_data = upload(*b.data, s),
                     b_scale = upload(*b.scale, s);
  const DeviceBuffer c_dev = ct ? upload(*ct, s) : DeviceBuffer(), bias_dev = bias ? upload(*bias, s) : DeviceBuffer();
  const GemmOperandView av{a_data.get<std::uint8_t>(), a_scale.get<std::uint8_t>(), swizzled},
      bv{b_data.get<std::uint8_t>(), b_scale.get<std::uint8_t>(), swizzled};
  const OutputType type = out_dtype == io::DType::BF16  ? OutputType::BF16
                          : out_dtype == io::DType::F16 ? OutputType::F16
                                                        : OutputType::F32;
  DeviceBuffer workspace(gemm_workspace_bytes(M, N, K, o.row_scaled, o.accumulation), s);
  DeviceBuffer d = poisoned(std::size_t(M * N) * io::dtype_size(out_dtype), s);
  if (o.row_scaled) {
    const DeviceBuffer a_amax = upload(*a.amax, s), b_amax = upload(*b.amax, s);
    GemmPostScale post;
    post.a_amax = a_amax.get<float>();
    post.a_count = a.amax->shape[0];
    post.b_amax = b_amax.get<float>();
    post.b_count = b.amax->shape[0];
    post.bias = bias ? bias_dev.get<float>() : nullptr;
    post.accumulate = o.accumulate ? c_dev.get() : nullptr;
    post.output = type;
    launch_gemm_row_scaled(av, bv, M, N, K, gemm_alpha(1.0f, 1.0f, 1.0f), o.accumulation, post, d.get(), workspace.get(), s);
    out["d"] = download(d, out_dtype, {M, N}, s);  // synchronizes before the amaxes are freed
    return out;
  }
  GemmEpilogue e;
  e.alpha = o.alpha ? *o.alpha : gemm_alpha(1.0f, first_float(*a.amax), first_float(*b.amax));
  e.beta = o.beta;
  e.c = ct ? c_dev.get<float>() : nullptr;
  e.bias = bias ? bias_dev.get<float>() : nullptr;
  e.output = type;
  e.accumulation = o.accumulation;
  launch_gemm(av, bv, M, N, K, e, d.get(), workspace.get(), s);
  out["d"] = download(d, out_dtype, {M, N}, s);
  return out;
}

// Every operation the kernels run (the registry's operations without a no_device_reason).
constexpr DeviceRow kRunners[] = {
    // Expert weights [E, N, K]: one expert at a time, each its own tensor (cases/experts.h).
    {"quantize",
     [](const cases::Case& c, cudaStream_t s) {
       return cases::run_per_expert(c, [s](const cases::Case& e) { return quantize_case(e, s); });
     }},
    {"dequantize", dequantize_case},
    {"amax_global", [](const cases::Case& c, cudaStream_t s) { return amax_case(c, s, AmaxOp::kGlobal); }},
    {"amax_rows", [](const cases::Case& c, cudaStream_t s) { return amax_case(c, s, AmaxOp::kRows); }},
    {"amax_cols", [](const cases::Case& c, cudaStream_t s) { return amax_case(c, s, AmaxOp::kCols); }},
    {"amax_blocks_1x16", [](const cases::Case& c, cudaStream_t s) { return amax_case(c, s, AmaxOp::kBlocks1x16); }},
    {"amax_blocks_16x1", [](const cases::Case& c, cudaStream_t s) { return amax_case(c, s, AmaxOp::kBlocks16x1); }},
    {"amax_tiles_16x16", [](const cases::Case& c, cudaStream_t s) { return amax_case(c, s, AmaxOp::kTiles16x16); }},
    {"swizzle", [](const cases::Case& c, cudaStream_t s) { return swizzle_case(c, s, true); }},
    {"unswizzle", [](const cases::Case& c, cudaStream_t s) { return swizzle_case(c, s, false); }},
    {"transpose_packed", transpose_packed_case},
    {"transpose_scales_2d", transpose_scales_2d_case},
    {"amax_partial", amax_partial_case},
    {"fused_scale_2d", fused_scale_case},
    {"partial_cast_2d", partial_cast_case},
    {"cast_master_weights", master_weights_case},
    {"rht", rht_case},
    {"gemm", gemm_case},
    {"grouped_swizzle", [](const cases::Case& c, cudaStream_t s) { return grouped_layout_case(c, s, true); }},
    {"grouped_unswizzle", [](const cases::Case& c, cudaStream_t s) { return grouped_layout_case(c, s, false); }},
    // G independent GEMMs (cases/grouped_gemm_case.h), each through the GEMM kernel.
    {"grouped_gemm",
     [](const cases::Case& c, cudaStream_t s) {
       return cases::run_grouped_gemm(c, [s](const cases::Case& g) { return gemm_case(g, s); });
     }},
};

}  // namespace

std::optional<std::string> device_unavailable_reason() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return std::string("no CUDA device: cudaGetDeviceCount returned ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  }
  if (count == 0) return std::string("no CUDA device: cudaGetDeviceCount found 0 devices");
  return std::nullopt;
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

DeviceBackend::DeviceBackend(int device) : device_(device) {
  if (const auto reason = device_unavailable_reason()) throw cases::BackendUnavailable(*reason);
  if (device < 0 || device >= device_count())
    throw cases::BackendUnavailable("no CUDA device " + std::to_string(device) + ": this machine has " +
                                    std::to_string(device_count()));
  NVFP4_CUDA_CHECK(cudaSetDevice(device_));
  keep_pool_memory();
  // Non-blocking: a campaign's jobs each run their own backend, and their streams must not wait
  // on one another through the legacy default stream.
  NVFP4_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

DeviceBackend::~DeviceBackend() {
  if (stream_) cudaStreamDestroy(stream_);
}

std::span<const DeviceRow> device_runners() { return kRunners; }

cases::TensorMap DeviceBackend::run(const cases::Case& c) {
  cases::validate_params(c);
  NVFP4_CUDA_CHECK(cudaSetDevice(device_));  // the calling thread may not have picked this backend's GPU
  for (const DeviceRow& row : kRunners)
    if (row.op == c.op) return row.run(c, stream_);
  const cases::OperationSpec& op = cases::operation(c.op);
  fail(op.name, ErrorCode::E_UNSUPPORTED, "the GPU kernels do not run this operation: {}", op.no_device_reason);
}

}  // namespace nvfp4::device
