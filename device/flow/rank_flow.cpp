#include "device/flow/rank_flow.h"

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "reference/error.h"
#include "reference/layout.h"
#include "reference/master_weights.h"

namespace nvfp4::device {
namespace {

constexpr std::string_view kOp = "RankFlow";

// Offsets of consecutive pieces of the given sizes, the total last.
template <class F>
std::vector<std::int64_t> prefix_sums(const std::vector<WeightShape>& shapes, F&& size) {
  std::vector<std::int64_t> offsets{0};
  for (const WeightShape& s : shapes) offsets.push_back(offsets.back() + size(s));
  return offsets;
}

}  // namespace

RankFlow::RankFlow(std::vector<WeightShape> shapes, const RankRange& range, const float* master, std::int64_t chunk_pitch,
                   const Profile& profile, std::optional<cudaStream_t> stream)
    : shapes_(std::move(shapes)), range_(range), master_(master), pitch_(chunk_pitch), profile_(profile) {
  validate_flow_profile(kOp, profile_);
  std::vector<std::int64_t> elements;
  for (const WeightShape& s : shapes_) {
    validate_weight_dims(kOp, s.M, s.K);
    elements.push_back(s.M * s.K);
  }
  offsets_ = weight_offsets(elements);
  total_ = offsets_.back();
  if (range_.begin < 0 || range_.begin > range_.end || range_.end > total_)
    fail(kOp, ErrorCode::E_SHARD, "range [{}, {}) is not inside the {} elements of the weights", range_.begin, range_.end,
         total_);
  if (pitch_ < range_.buffer_bytes())
    fail(kOp, ErrorCode::E_SHARD, "chunk pitch {} is below the rank's {} bytes", pitch_, range_.buffer_bytes());

  // The arena: all tiles, then one global amax per weight (one buffer, one all-reduce).
  tile_offsets_ = prefix_sums(shapes_, [](const WeightShape& s) { return (s.M / 16) * (s.K / 16); });
  scale_offsets_ = prefix_sums(shapes_, [](const WeightShape& s) { return scale_rows(s.M) * scale_cols(s.K); });
  scale_t_offsets_ = prefix_sums(shapes_, [](const WeightShape& s) { return scale_rows(s.K) * scale_cols(s.M); });
  const std::int64_t tiles = tile_offsets_.back(), n = std::int64_t(shapes_.size());
  amax_floats_ = tiles + n;

  bf16_ = allocate(sizeof(std::uint16_t) * std::size_t(range_.end - range_.begin), stream);
  amax_ = allocate(sizeof(float) * std::size_t(amax_floats_), stream);
  tile_scale_ = allocate(sizeof(float) * std::size_t(tiles), stream);
  encode_scale_ = allocate(sizeof(float) * std::size_t(n), stream);
  chunk_ = allocate(std::size_t(pitch_), stream);
  data_ = allocate(std::size_t(total_ / 2), stream);  // every weight has an even element count
  scale_ = allocate(std::size_t(scale_offsets_.back()), stream);
  data_t_ = allocate(std::size_t(total_ / 2), stream);
  scale_t_ = allocate(std::size_t(scale_t_offsets_.back()), stream);
  for (DeviceBuffer* b : {&tile_scale_, &encode_scale_, &data_, &scale_, &data_t_, &scale_t_})
    b->poison(stream.value_or(nullptr));
  // The caller's stream may not be ordered after stream 0.
  if (!stream) NVFP4_CUDA_CHECK(cudaStreamSynchronize(nullptr));

  float* arena = amax_.get<float>();
  float* P = tile_scale_.get<float>();
  float* S = encode_scale_.get<float>();
  std::vector<PartialAmaxTask> amax_tasks;
  std::vector<PartialCastTask> cast_tasks;
  for (const ShardPiece& p : rank_pieces(elements, range_)) {
    const WeightShape& w = shapes_[p.weight];
    const std::uint16_t* xs = bf16_.get<std::uint16_t>() + (offsets_[p.weight] + p.shard.start - range_.begin);
    amax_tasks.push_back(
        {xs, w.M, w.K, p.shard.start, p.shard.length, arena + tile_offsets_[p.weight], arena + tiles + std::int64_t(p.weight)});
    cast_tasks.push_back({xs, w.M, w.K, p.shard.start, p.shard.length, P + tile_offsets_[p.weight], S + p.weight,
                          chunk_.get<std::uint8_t>() + p.buffer_offset, false});
  }
  // Every rank computes every weight's scales and columnwise copy: they are outputs on all ranks.
  std::vector<FusedScaleTask> fused_tasks;
  std::vector<TransposePackedTask> transpose_tasks;
  std::vector<TransposeScalesTask> scale_t_tasks;
  for (std::size_t i = 0; i < shapes_.size(); ++i) {
    const WeightShape& w = shapes_[i];
    fused_tasks.push_back({arena + tile_offsets_[i], arena + tiles + std::int64_t(i), w.M, w.K, P + tile_offsets_[i],
                           scale_.get<std::uint8_t>() + scale_offsets_[i], S + i});
    transpose_tasks.push_back({data(i), w.M, w.K, data_t_.get<std::uint8_t>() + offsets_[i] / 2});
    scale_t_tasks.push_back({scale(i), w.M, w.K, scale_t_.get<std::uint8_t>() + scale_t_offsets_[i]});
  }
  amax_tasks_.emplace(std::move(amax_tasks), stream);
  fused_scale_tasks_.emplace(std::move(fused_tasks), stream);
  cast_tasks_.emplace(std::move(cast_tasks), stream);
  transpose_packed_tasks_.emplace(std::move(transpose_tasks), stream);
  transpose_scales_tasks_.emplace(std::move(scale_t_tasks), stream);
}

void RankFlow::partial_amax(cudaStream_t stream) {
  NVFP4_CUDA_CHECK(cudaMemsetAsync(amax_.get(), 0, amax_.size(), stream));  // +0: untouched tiles, launch_amax_partial's start
  launch_round_to_bf16(master_, range_.end - range_.begin, bf16_.get<std::uint16_t>(), stream);
  launch_amax_partial(*amax_tasks_, profile_.amax, stream);
}

void RankFlow::scale_and_cast(cudaStream_t stream) {
  launch_fused_scale_2d(*fused_scale_tasks_, profile_.gs, stream);
  NVFP4_CUDA_CHECK(cudaMemsetAsync(chunk_.get(), 0, chunk_.size(), stream));  // unowned nibbles and the tail are 0
  launch_partial_cast_2d(*cast_tasks_, stream);
}

void RankFlow::gather_and_transpose(const std::uint8_t* chunks, const std::vector<RankRange>& ranks, cudaStream_t stream) {
  if (ranks.empty() || ranks.front().begin != 0 || ranks.back().end != total_)
    fail(kOp, ErrorCode::E_SHARD, "the ranks' ranges do not cover the {} elements of the weights", total_);
  for (std::size_t rho = 0; rho < ranks.size(); ++rho)
    if (ranks[rho].buffer_bytes() > pitch_)
      fail(kOp, ErrorCode::E_SHARD, "rank {} holds {} bytes, more than the chunk pitch {}", rho, ranks[rho].buffer_bytes(),
           pitch_);
  launch_gather_nibbles(chunks, pitch_, ranks, data_.get<std::uint8_t>(), stream);
  launch_transpose_packed(*transpose_packed_tasks_, stream);
  launch_transpose_scales_2d(*transpose_scales_tasks_, stream);
}

std::size_t RankFlow::weight(std::size_t i) const {
  if (i >= shapes_.size()) throw std::out_of_range(fmt::format("RankFlow: weight {} of {}", i, shapes_.size()));
  return i;
}
const std::uint8_t* RankFlow::data(std::size_t i) const { return data_.get<std::uint8_t>() + offsets_[weight(i)] / 2; }
const std::uint8_t* RankFlow::scale(std::size_t i) const { return scale_.get<std::uint8_t>() + scale_offsets_[weight(i)]; }
const std::uint8_t* RankFlow::data_t(std::size_t i) const { return data_t_.get<std::uint8_t>() + offsets_[weight(i)] / 2; }
const std::uint8_t* RankFlow::scale_t(std::size_t i) const { return scale_t_.get<std::uint8_t>() + scale_t_offsets_[weight(i)]; }
const float* RankFlow::amax(std::size_t i) const { return amax_.get<float>() + tile_offsets_.back() + weight(i); }

}  // namespace nvfp4::device
