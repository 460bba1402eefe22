#include "device/backend/distributed_backend.h"

#include <fmt/format.h>

#include "cases/distributed_case.h"
#include "cases/reference_backend.h"
#include "device/backend/transfer.h"
#include "device/flow/flow_workloads.h"
#include "device/flow/rank_flow.h"
#include "device/kernels/distributed.h"
#include "io/tensor_convert.h"
#include "reference/error.h"
#include "reference/formulas.h"
#include "reference/layout.h"

namespace nvfp4::device {

cases::TensorMap amax_partial_case(const cases::Case& c, cudaStream_t s) {
  const cases::ShardInput in = cases::shard_input(c);
  const std::int64_t tiles = (in.M / 16) * (in.K / 16);
  const DeviceBuffer xs = upload(cases::case_input(c, "xs"), s);
  DeviceBuffer tile_amax = poisoned(sizeof(float) * tiles, s), amax(sizeof(float), s);
  NVFP4_CUDA_CHECK(cudaMemsetAsync(amax.get(), 0, sizeof(float), s));  // the launcher's contract: +0 before
  PartialAmaxTask t;
  t.xs = xs.get<std::uint16_t>();
  t.M = in.M;
  t.K = in.K;
  t.start = in.shard.start;
  t.length = in.shard.length;
  t.tile_amax = tile_amax.get<float>();
  t.amax = amax.get<float>();
  launch_amax_partial(TaskList<PartialAmaxTask>({t}, s), cases::case_profile(c).amax, s);
  cases::TensorMap out;
  out["tile_amax"] = download(tile_amax, io::DType::F32, {in.M / 16, in.K / 16}, s);
  out["amax"] = download(amax, io::DType::F32, {1}, s);
  return out;
}

cases::TensorMap fused_scale_case(const cases::Case& c, cudaStream_t s) {
  const cases::FusedScaleInput in = cases::fused_scale_input(c);
  const GlobalScaleRule rule = cases::case_profile(c).gs;
  validate_distributed_scale_rule(c.op, rule);
  const std::int64_t tr = std::int64_t(in.tile_amax.shape(0)), tc = std::int64_t(in.tile_amax.shape(1));
  const std::int64_t rows = scale_rows(16 * tr), cols = scale_cols(16 * tc);
  const DeviceBuffer tile_amax = upload(cases::case_input(c, "tile_amax"), s), amax = upload(cases::case_input(c, "amax"), s);
  DeviceBuffer tile_scale = poisoned(sizeof(float) * tr * tc, s), scale = poisoned(rows * cols, s),
               S = poisoned(sizeof(float), s);
  FusedScaleTask t;
  t.tile_amax = tile_amax.get<float>();
  t.amax = amax.get<float>();
  t.M = 16 * tr;
  t.K = 16 * tc;
  t.tile_scale = tile_scale.get<float>();
  t.scale = scale.get<std::uint8_t>();
  t.encode_scale = S.get<float>();
  launch_fused_scale_2d(TaskList<FusedScaleTask>({t}, s), rule, s);
  cases::TensorMap out;
  out["tile_scale"] = download(tile_scale, io::DType::F32, {tr, tc}, s);
  out["scale"] = download(scale, io::DType::U8, {rows, cols}, s);
  out["amax"] = cases::case_input(c, "amax");  // amax_row = g, passed through
  out["global_scale"] = download(S, io::DType::F32, {1}, s);
  return out;
}

cases::TensorMap partial_cast_case(const cases::Case& c, cudaStream_t s) {
  const cases::PartialCastInput in = cases::partial_cast_input(c);
  const DeviceBuffer xs = upload(cases::case_input(c, "xs"), s), tile_scale = upload(cases::case_input(c, "tile_scale"), s),
                     S = upload(cases::case_input(c, "global_scale"), s), data = upload(cases::case_input(c, "data"), s);
  PartialCastTask t;
  t.xs = xs.get<std::uint16_t>();
  t.M = in.shard.M;
  t.K = in.shard.K;
  t.start = in.shard.shard.start;
  t.length = in.shard.shard.length;
  t.tile_scale = tile_scale.get<float>();
  t.encode_scale = S.get<float>();
  t.dst = data.get<std::uint8_t>();
  t.whole_tensor = in.target == CastTarget::kWholeTensor;
  launch_partial_cast_2d(TaskList<PartialCastTask>({t}, s), s);
  cases::TensorMap out;
  out["data"] = cases::partial_cast_output(in, data.download(s));
  return out;
}

// R ranks on one GPU: each RankFlow reads its slice of the concatenated master weights; the MAX
// all-reduce and the all-gather are simulated with host and device copies.
cases::TensorMap master_weights_case(const cases::Case& c, cudaStream_t s) {
  const cases::MasterWeightsInput in = cases::master_weights_input(c);
  const Profile& profile = cases::case_profile(c);
  validate_flow_profile(c.op, profile);
  std::vector<WeightShape> shapes;
  std::vector<float> concatenated;
  for (const FloatMatrix& w : in.weights) {
    shapes.push_back({std::int64_t(w.shape(0)), std::int64_t(w.shape(1))});
    concatenated.insert(concatenated.end(), w.begin(), w.end());
  }
  DeviceBuffer master(sizeof(float) * concatenated.size(), s);
  master.upload(concatenated.data(), s);
  const std::int64_t pitch = chunk_pitch(in.ranks);
  std::vector<RankFlow> ranks;
  for (const RankRange& r : in.ranks) ranks.emplace_back(shapes, r, master.get<float>() + r.begin, pitch, profile, s);

  for (RankFlow& r : ranks) r.partial_amax(s);
  const std::size_t n = std::size_t(ranks.front().amax_arena_floats());
  std::vector<float> reduced(n, 0.0f);
  for (RankFlow& r : ranks) {
    const FloatVector part =
        io::to_float_vector(download(r.amax_arena(), io::DType::F32, {std::int64_t(n)}, s), "amax arena", "amax");
    for (std::size_t i = 0; i < n; ++i) reduced[i] = amax_combine(profile.amax, reduced[i], part[i]);
  }
  for (RankFlow& r : ranks)
    NVFP4_CUDA_CHECK(cudaMemcpyAsync(r.amax_arena(), reduced.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));

  DeviceBuffer chunks = poisoned(std::size_t(pitch) * ranks.size(), s);
  for (std::size_t rho = 0; rho < ranks.size(); ++rho) {
    ranks[rho].scale_and_cast(s);
    NVFP4_CUDA_CHECK(
        cudaMemcpyAsync(chunks.get<std::uint8_t>() + rho * pitch, ranks[rho].cast_buffer(), pitch, cudaMemcpyDeviceToDevice, s));
  }
  // Every rank assembles the same result; the last one's is returned, the others must agree.
  for (RankFlow& r : ranks) r.gather_and_transpose(chunks.get<std::uint8_t>(), in.ranks, s);
  cases::TensorMap out;
  const RankFlow& last = ranks.back();
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto [M, K] = shapes[i];
    const std::string& name = in.names[i];
    out[name + ".data"] = download(last.data(i), io::DType::U8, {M, K / 2}, s);
    out[name + ".scale"] = download(last.scale(i), io::DType::U8, {scale_rows(M), scale_cols(K)}, s);
    out[name + ".data_t"] = download(last.data_t(i), io::DType::U8, {K, M / 2}, s);
    out[name + ".scale_t"] = download(last.scale_t(i), io::DType::U8, {scale_rows(K), scale_cols(M)}, s);
    out[name + ".amax"] = download(last.amax(i), io::DType::F32, {1}, s);
    for (std::size_t rho = 0; rho + 1 < ranks.size(); ++rho) {  // an extra output shows up in the diff
      io::Tensor other = download(ranks[rho].data(i), io::DType::U8, {M, K / 2}, s);
      if (other.bytes != out[name + ".data"].bytes) out[fmt::format("{}.data (rank {} disagrees)", name, rho)] = other;
    }
  }
  return out;
}

}  // namespace nvfp4::device
