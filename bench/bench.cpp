#include "bench/bench.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "cases/metamorphic_backend.h"
#include "cases/recipe.h"
#include "cases/reference_backend.h"
#include "device/backend/device_backend.h"
#include "device/flow/flow_workloads.h"
#include "device/flow/rank_flow.h"
#include "device/kernels/distributed.h"
#include "device/kernels/launch.h"
#include "device/runtime/device_buffer.h"
#include "fuzz/campaign.h"
#include "io/atomic_file.h"
#include "io/output_path.h"
#include "reference/amax.h"
#include "reference/hadamard.h"
#include "reference/half_float.h"
#include "reference/layout.h"
#include "reference/partition.h"
#include "reference/profiles.h"
#include "reference/quantize.h"
#include "reference/row_threads.h"

namespace nvfp4::bench {
namespace {

using device::DeviceBuffer;

struct Timer {
  cudaEvent_t start, stop;
  Timer() {
    NVFP4_CUDA_CHECK(cudaEventCreate(&start));
    NVFP4_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~Timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

// Evicts whatever a timed run left in L2 by reading a buffer of twice its size (the amax kernel,
// which only reads, so that no dirty line of it is written back inside the next timed run).
class L2Flush {
 public:
  L2Flush() : rows_(2 * l2_bytes() / (4 * kCols) + 1), buffer_(std::size_t(rows_ * kCols) * 4) { buffer_.poison(nullptr, 0); }
  void operator()(cudaStream_t s) {
    device::launch_amax_global(buffer_.get(), device::InputType::F32, rows_, kCols, AmaxRule::IGNORE, amax_.get<float>(), s);
  }

 private:
  static std::int64_t l2_bytes() {
    int device = 0, bytes = 0;
    NVFP4_CUDA_CHECK(cudaGetDevice(&device));
    NVFP4_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
    return bytes;
  }
  static constexpr std::int64_t kCols = 4096;
  std::int64_t rows_;
  DeviceBuffer buffer_, amax_{sizeof(float)};
};

struct Row {
  std::string kernel, dtype;
  std::int64_t M, K;
  double ms, bytes;
};

class Bench {
 public:
  explicit Bench(const BenchOptions& o) : o_(o) {
    NVFP4_CUDA_CHECK(cudaStreamCreate(&s_));
    if (o.cold_l2) flush_.emplace();
  }
  ~Bench() { cudaStreamDestroy(s_); }

  double copy_bandwidth() {
    const std::size_t bytes = std::size_t(1) << 30;
    DeviceBuffer a(bytes), b(bytes);
    a.poison(s_, 1);
    const double ms =
        median_ms([&] { NVFP4_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s_)); });
    copy_gbs_ = 2.0 * bytes / ms / 1e6;  // bytes read plus written
    return copy_gbs_;
  }

  // Over 80 lines on purpose: one table, its rows in the order docs/performance.md lists them,
  // timed over buffers allocated once at the top; split, each part would take most of them as
  // parameters.
  void kernels(std::int64_t M, std::int64_t K, device::InputType type) {
    const std::size_t in_size = type == device::InputType::F32 ? 4 : 2;
    const std::string dtype = type == device::InputType::F32 ? "fp32" : "bf16";
    // Input: approximately normal values (BF16 inputs narrowed on the host), uploaded once.
    const FloatMatrix x = cases::randn_matrix(std::size_t(M), std::size_t(K), 7);
    std::vector<std::uint8_t> host(std::size_t(M * K) * in_size);
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (type == device::InputType::F32)
        std::memcpy(&host[4 * i], &x.data()[i], 4);
      else {
        const std::uint16_t h = float_to_bf16(x.data()[i]);
        std::memcpy(&host[2 * i], &h, 2);
      }
    }
    DeviceBuffer in(host.size());
    in.upload(host.data(), s_);
    const Profile& te = default_profile().knobs;
    DeviceBuffer amax(sizeof(float)), rows(sizeof(float) * M), cols(sizeof(float) * K);
    device::launch_amax_global(in.get(), type, M, K, te.amax, amax.get<float>(), s_);
    device::launch_amax_rows(in.get(), type, M, K, te.amax, rows.get<float>(), s_);
    device::launch_amax_cols(in.get(), type, M, K, te.amax, cols.get<float>(), s_);
    const std::int64_t sr = scale_rows(M), sc = scale_cols(K), sr_t = scale_rows(K), sc_t = scale_cols(M);
    DeviceBuffer data(M * K / 2), scale(sr * sc), data_t(M * K / 2), scale_t(sr_t * sc_t), swz(sr * sc), out(M * K * in_size);
    const double data_bytes = double(M) * K / 2, scale_bytes = double(sr * sc), in_bytes = double(M) * K * in_size;

    device::QuantizeParams p;
    p.profile = te;
    p.amax = p.amax_t = amax.get<float>();
    device::QuantizeOutputs row_out{data.get<std::uint8_t>(), scale.get<std::uint8_t>(), nullptr, nullptr};
    device::QuantizeOutputs col_out{nullptr, nullptr, data_t.get<std::uint8_t>(), scale_t.get<std::uint8_t>()};
    device::QuantizeOutputs both_out{data.get<std::uint8_t>(), scale.get<std::uint8_t>(), data_t.get<std::uint8_t>(),
                                     scale_t.get<std::uint8_t>()};
    auto quantize = [&](const device::QuantizeParams& params, const device::QuantizeOutputs& outs) {
      return [&, params, outs] { device::launch_quantize(in.get(), type, M, K, params, outs, s_); };
    };
    device::QuantizeParams p2d = p, prs = p;
    p2d.tiles_2d = true;
    prs.row_scaled = true;
    prs.amax = rows.get<float>();
    prs.amax_t = cols.get<float>();
    const double one_dir = in_bytes + data_bytes + scale_bytes, two_dir = in_bytes + 2 * (data_bytes + scale_bytes);
    time("amax_global", dtype, M, K, in_bytes,
         [&] { device::launch_amax_global(in.get(), type, M, K, te.amax, amax.get<float>(), s_); });
    const double rn_rowwise = time("quantize rowwise", dtype, M, K, one_dir, quantize(p, row_out));
    time("quantize columnwise", dtype, M, K, one_dir, quantize(p, col_out));
    const double rn_both = time("quantize both", dtype, M, K, two_dir, quantize(p, both_out));
    time("quantize 2d both", dtype, M, K, two_dir, quantize(p2d, both_out));
    time("quantize row-scaled both", dtype, M, K, two_dir + 4.0 * (M + K), quantize(prs, both_out));
    // Stochastic rounding (§3.18): the same launches with one Philox draw per block.
    device::QuantizeParams psr = p;
    psr.stochastic = true;
    psr.seed = 0x0123456789ABCDEFull;
    psr.offset = 7;
    const double sr_rowwise = time("quantize rowwise SR", dtype, M, K, one_dir, quantize(psr, row_out));
    const double sr_both = time("quantize both SR", dtype, M, K, two_dir, quantize(psr, both_out));
    fmt::print("  {:<29} rowwise {:.3f}, both {:.3f} (target <= 1.10)\n", "SR time / RN time", sr_rowwise / rn_rowwise,
               sr_both / rn_both);
    if (type == device::InputType::BF16) {
      // TransformerEngine's wgrad columnwise copy (§3.19): y = rht(x), its amax, y's rows quantized.
      DeviceBuffer y(M * K * 2), amax_y(sizeof(float));
      const auto* xb = in.get<std::uint16_t>();
      time("rht", dtype, M, K, 2 * in_bytes,
           [&] { device::launch_rht(xb, M, K, kRhtDefaultMask, RhtSum::EXACT, y.get<std::uint16_t>(), s_); });
      device::QuantizeParams py = p;
      py.amax = py.amax_t = amax_y.get<float>();
      py.data_dir = SrDirection::kColumnwise;
      // Its first pass alone: amax(rht(x)), x read once.
      time("rht amax", dtype, M, K, in_bytes,
           [&] { device::launch_rht_amax(xb, M, K, kRhtDefaultMask, te.rht, te.amax, amax_y.get<float>(), s_); });
      // The fused pair the device backend runs: amax(rht(x)) must be known before any code, so x is
      // read twice (counted), and rht(x) is never stored.
      time("rht + columnwise quantize", dtype, M, K, one_dir + in_bytes, [&] {
        device::launch_rht_amax(xb, M, K, kRhtDefaultMask, te.rht, te.amax, amax_y.get<float>(), s_);
        device::launch_rht_quantize_columnwise(xb, M, K, kRhtDefaultMask, py, data_t.get<std::uint8_t>(),
                                               scale_t.get<std::uint8_t>(), s_);
      });
      device::QuantizeParams py_sr = py;
      py_sr.stochastic = true;
      py_sr.seed = psr.seed;
      py_sr.offset = psr.offset;
      time("rht + columnwise quantize SR", dtype, M, K, one_dir + in_bytes, [&] {
        device::launch_rht_amax(xb, M, K, kRhtDefaultMask, te.rht, te.amax, amax_y.get<float>(), s_);
        device::launch_rht_quantize_columnwise(xb, M, K, kRhtDefaultMask, py_sr, data_t.get<std::uint8_t>(),
                                               scale_t.get<std::uint8_t>(), s_);
      });
    }
    const device::OutputType ot = type == device::InputType::F32 ? device::OutputType::F32 : device::OutputType::BF16;
    time("dequantize", dtype, M, K, data_bytes + scale_bytes + in_bytes, [&] {
      device::launch_dequantize(data.get<std::uint8_t>(), scale.get<std::uint8_t>(), amax.get<float>(), 1, M, K, te, ot,
                                out.get(), s_);
    });
    time("transpose packed", dtype, M, K, 2 * data_bytes,
         [&] { device::launch_transpose_packed(data.get<std::uint8_t>(), M, K, data_t.get<std::uint8_t>(), s_); });
    const double swizzle_ms = time("swizzle scales", dtype, M, K, 2 * scale_bytes, [&] {
      device::launch_swizzle_scales(scale.get<std::uint8_t>(), sr, sc, swz.get<std::uint8_t>(), s_);
    });
    const double transpose_ms = time("transpose scales 2d", dtype, M, K, scale_bytes + double(sr_t * sc_t), [&] {
      device::launch_transpose_scales_2d(scale.get<std::uint8_t>(), M, K, scale_t.get<std::uint8_t>(), s_);
    });
    // The launch floor of the small scale kernels, timed the same way (events around one launch).
    const double empty_ms = median_ms([&] { device::launch_empty_kernel(s_); });
    rows_.push_back({"empty kernel launch", dtype, M, K, empty_ms, 0.0});
    fmt::print("  {:<29} {:<5} {:>11} {:>9.4f} ms   (swizzle scales {:.1f}x, transpose scales 2d {:.1f}x this floor)\n",
               "empty kernel launch", dtype, "", empty_ms, swizzle_ms / empty_ms, transpose_ms / empty_ms);
    NVFP4_CUDA_CHECK(cudaStreamSynchronize(s_));
  }

  // The distributed master-weight cast (NUMERICS.md §3.17) of a 16-layer transformer's linear
  // weights (112 weights, 0.82 B elements) over 8 ranks with odd cut points, one rank's step
  // simulated on this GPU. The collectives are left out: the arena keeps this rank's partial
  // amaxes and every rank's chunk is a copy of this rank's, which changes no kernel's work.
  // Over 80 lines on purpose, like kernels(): one table over the flow and buffers set up at the top.
  void distributed() {
    constexpr int kRanks = 8, kRank = 3;  // an interior rank: both of its boundaries share a byte
    const std::vector<device::WeightShape> shapes = device::transformer_weights(16);
    const std::int64_t total = device::total_elements(shapes);
    const std::vector<RankRange> ranks = rank_ranges(total, kRanks, device::odd_cuts(total, kRanks, 1));
    const std::int64_t pitch = device::chunk_pitch(ranks);
    const RankRange& range = ranks[kRank];
    const std::int64_t n = range.end - range.begin;
    const FloatMatrix master_host = cases::randn_matrix(1, std::size_t(n), 11);
    DeviceBuffer master(sizeof(float) * n), bf16(sizeof(std::uint16_t) * n), chunks(std::size_t(pitch) * kRanks),
        gathered(std::size_t(total / 2));
    master.upload(master_host.data(), s_);
    const Profile& te = default_profile().knobs;
    device::RankFlow flow(shapes, range, master.get<float>(), pitch, te);
    flow.partial_amax(s_);
    flow.scale_and_cast(s_);
    for (int r = 0; r < kRanks; ++r)
      NVFP4_CUDA_CHECK(cudaMemcpyAsync(chunks.get<std::uint8_t>() + r * pitch, flow.cast_buffer(), std::size_t(pitch),
                                       cudaMemcpyDeviceToDevice, s_));
    auto step = [&] {
      flow.partial_amax(s_);
      flow.scale_and_cast(s_);
      flow.gather_and_transpose(chunks.get<std::uint8_t>(), ranks, s_);
    };
    step();

    // Bytes each launch must move: every input read once, every output written once.
    const auto tiles = [](std::int64_t M, std::int64_t K) { return double((M / 16) * (K / 16)); };
    double amax_bytes = 0, fused_bytes = 0, cast_bytes = 0, tp_bytes = 0, ts_bytes = 0, gather_bytes = double(total / 2);
    for (const device::PartialAmaxTask& t : flow.amax_tasks().tasks()) amax_bytes += 2.0 * t.length + 4.0 * tiles(t.M, t.K) + 4;
    for (const device::FusedScaleTask& t : flow.fused_scale_tasks().tasks())
      fused_bytes += 8.0 * tiles(t.M, t.K) + 8 + double(scale_rows(t.M) * scale_cols(t.K));
    for (const device::PartialCastTask& t : flow.cast_tasks().tasks()) {
      const std::int64_t tile_rows = (t.start + t.length - 1) / t.K / 16 - t.start / t.K / 16 + 1;  // P rows it reads
      cast_bytes += 2.0 * t.length + 4.0 * double(tile_rows * (t.K / 16)) + 4 + double(Shard{t.start, t.length}.local_bytes());
    }
    for (const device::TransposePackedTask& t : flow.transpose_packed_tasks().tasks()) tp_bytes += double(t.M * t.K);
    for (const device::TransposeScalesTask& t : flow.transpose_scales_tasks().tasks())  // one input row per 16
      ts_bytes += double((t.M / 16) * scale_cols(t.K) + scale_rows(t.K) * scale_cols(t.M));
    for (const RankRange& r : ranks) gather_bytes += double(r.buffer_bytes());
    const double round_bytes = 6.0 * n, arena_bytes = 4.0 * flow.amax_arena_floats(), chunk_bytes = double(pitch);

    fmt::print(
        "\ndistributed master-weight cast: {} weights (16 layers: q, k, v, o 2048x2048, gate, up 5632x2048, down "
        "2048x5632), {} elements, {} ranks with odd cut points; rank {} on this GPU: elements [{}, {}), chunk "
        "pitch {} bytes; collectives left out\n",
        shapes.size(), total, kRanks, kRank, range.begin, range.end, pitch);
    fmt::print("  {:<44} {:>12} {:>12} {:>13} {:>8}\n", "launch", "median", "moved", "bandwidth", "of copy");
    nlohmann::json& rows = dist_["kernels"];
    rows.push_back(time_dist("memset amax arena", arena_bytes,
                             [&] { NVFP4_CUDA_CHECK(cudaMemsetAsync(flow.amax_arena(), 0, std::size_t(arena_bytes), s_)); }));
    rows.push_back(time_dist("round_to_bf16", round_bytes,
                             [&] { device::launch_round_to_bf16(master.get<float>(), n, bf16.get<std::uint16_t>(), s_); }));
    rows.push_back(time_dist("amax_partial", amax_bytes, [&] { device::launch_amax_partial(flow.amax_tasks(), te.amax, s_); }));
    rows.push_back(
        time_dist("fused_scale_2d", fused_bytes, [&] { device::launch_fused_scale_2d(flow.fused_scale_tasks(), te.gs, s_); }));
    rows.push_back(time_dist("memset chunk", chunk_bytes,
                             [&] { NVFP4_CUDA_CHECK(cudaMemsetAsync(flow.cast_buffer(), 0, std::size_t(pitch), s_)); }));
    rows.push_back(time_dist("partial_cast_2d", cast_bytes, [&] { device::launch_partial_cast_2d(flow.cast_tasks(), s_); }));
    rows.push_back(time_dist("gather_nibbles", gather_bytes, [&] {
      device::launch_gather_nibbles(chunks.get<std::uint8_t>(), pitch, ranks, gathered.get<std::uint8_t>(), s_);
    }));
    rows.push_back(
        time_dist("transpose_packed", tp_bytes, [&] { device::launch_transpose_packed(flow.transpose_packed_tasks(), s_); }));
    rows.push_back(time_dist("transpose_scales_2d", ts_bytes,
                             [&] { device::launch_transpose_scales_2d(flow.transpose_scales_tasks(), s_); }));
    rows.push_back(time_dist("phase partial_amax", arena_bytes + round_bytes + amax_bytes, [&] { flow.partial_amax(s_); }));
    rows.push_back(time_dist("phase scale_and_cast", fused_bytes + chunk_bytes + cast_bytes, [&] { flow.scale_and_cast(s_); }));
    rows.push_back(time_dist("phase gather_and_transpose", gather_bytes + tp_bytes + ts_bytes,
                             [&] { flow.gather_and_transpose(chunks.get<std::uint8_t>(), ranks, s_); }));
    rows.push_back(time_dist(
        "step (the three phases)",
        arena_bytes + round_bytes + amax_bytes + fused_bytes + chunk_bytes + cast_bytes + gather_bytes + tp_bytes + ts_bytes,
        step));
    dist_["weights"] = shapes.size();
    dist_["elements"] = total;
    dist_["ranks"] = kRanks;
    dist_["rank"] = kRank;
    dist_["rank_elements"] = {range.begin, range.end};
    dist_["chunk_pitch"] = pitch;

    // Launches per step, for two list lengths: one layer (7 weights) and all 16 (this flow).
    const std::vector<device::WeightShape> layer = device::transformer_weights(1);
    const std::int64_t layer_total = device::total_elements(layer);
    const std::vector<RankRange> layer_ranks = rank_ranges(layer_total, kRanks, device::odd_cuts(layer_total, kRanks, 1));
    const std::int64_t layer_pitch = device::chunk_pitch(layer_ranks);
    DeviceBuffer layer_chunks(std::size_t(layer_pitch) * kRanks);
    device::RankFlow layer_flow(layer, layer_ranks[kRank], master.get<float>(), layer_pitch, te);  // reads a prefix
    const nlohmann::json few = launches_per_step(layer_flow, layer_chunks.get<std::uint8_t>(), layer_ranks);
    const nlohmann::json all = launches_per_step(flow, chunks.get<std::uint8_t>(), ranks);
    const bool same = few["nodes"] == all["nodes"] && few["kernels"] == all["kernels"];
    fmt::print(
        "  launches per step (nodes of a CUDA graph captured from one step): {} weights: {} ({} kernels, {} memsets); "
        "{} weights: {} ({} kernels, {} memsets): {}\n",
        layer.size(), few["nodes"].get<int>(), few["kernels"].get<int>(), few["memsets"].get<int>(), shapes.size(),
        all["nodes"].get<int>(), all["kernels"].get<int>(), all["memsets"].get<int>(),
        same ? "independent of the list length" : "DEPENDS ON THE LIST LENGTH");
    dist_["launches_per_step"] = {few, all};
    dist_["launches_independent_of_list_length"] = same;
    NVFP4_CUDA_CHECK(cudaStreamSynchronize(s_));
  }

  // The flow's kernels on one large tensor (a one-task list): the partial cast of the whole
  // tensor and of a shard with an odd start, and the nibble transpose.
  void distributed_large(std::int64_t M, std::int64_t K) {
    const FloatMatrix host = cases::randn_matrix(std::size_t(M), std::size_t(K), 7);
    const std::int64_t n = M * K, tiles = (M / 16) * (K / 16);
    DeviceBuffer master(sizeof(float) * n), x(sizeof(std::uint16_t) * n), tile_amax(sizeof(float) * tiles), amax(sizeof(float)),
        P(sizeof(float) * tiles), S(sizeof(float)), scale(scale_rows(M) * scale_cols(K)), data(n / 2), data_t(n / 2);
    master.upload(host.data(), s_);
    const std::uint16_t* xs = x.get<std::uint16_t>();
    device::launch_round_to_bf16(master.get<float>(), n, x.get<std::uint16_t>(), s_);
    NVFP4_CUDA_CHECK(cudaMemsetAsync(amax.get(), 0, sizeof(float), s_));
    const Profile& te = default_profile().knobs;
    const device::TaskList<device::PartialAmaxTask> partial({{xs, M, K, 0, n, tile_amax.get<float>(), amax.get<float>()}});
    const device::TaskList<device::FusedScaleTask> fused(
        {{tile_amax.get<float>(), amax.get<float>(), M, K, P.get<float>(), scale.get<std::uint8_t>(), S.get<float>()}});
    device::launch_amax_partial(partial, te.amax, s_);
    device::launch_fused_scale_2d(fused, te.gs, s_);
    const std::int64_t odd = n / 3 | 1;
    const device::TaskList<device::PartialCastTask> whole(
        {{xs, M, K, 0, n, P.get<float>(), S.get<float>(), data.get<std::uint8_t>(), false}});
    const device::TaskList<device::PartialCastTask> shard(
        {{xs + odd, M, K, odd, n - odd, P.get<float>(), S.get<float>(), data.get<std::uint8_t>() + odd / 2, false}});
    const device::TaskList<device::TransposePackedTask> transpose({{data.get<std::uint8_t>(), M, K, data_t.get<std::uint8_t>()}});
    const auto cast_bytes = [&](std::int64_t length) {
      return 2.0 * length + 4.0 * tiles + 4 + double(Shard{n - length, length}.local_bytes());
    };
    fmt::print("  single {}x{} BF16 tensor (one-task lists):\n", M, K);
    nlohmann::json& rows = dist_["large"];
    const std::string shape = fmt::format(" {}x{}", M, K);
    rows.push_back(
        time_dist("partial_cast_2d whole tensor" + shape, cast_bytes(n), [&] { device::launch_partial_cast_2d(whole, s_); }));
    rows.push_back(time_dist(fmt::format("partial_cast_2d shard from {}", odd), cast_bytes(n - odd),
                             [&] { device::launch_partial_cast_2d(shard, s_); }));
    rows.push_back(time_dist("transpose_packed" + shape, double(n), [&] { device::launch_transpose_packed(transpose, s_); }));
    NVFP4_CUDA_CHECK(cudaStreamSynchronize(s_));
  }

  // The EXACT GEMM (§3.20.3) and the mma-sm100 mode (§3.20.6) of n x n x n, FP32 output, as their
  // launcher runs them (the int8 pre-pass, the main kernel and, MMA, the exact pass over the outputs
  // it left), in TFLOP-equivalent 2·n³/t; beside the vendor GEMM at the same shape. Operands: every
  // E2M1 code, scale bytes 0.5 .. 1.875, as quantized tensors have them (EXACT's pace does not
  // depend on the values; the MMA mode's exact pass runs only where a chunk truncates a term).
  void gemm(std::int64_t n, const VendorGemm& vendor) {
    std::mt19937 rng(7);
    std::vector<std::uint8_t> data(std::size_t(n * n / 2)), scale(std::size_t(scale_rows(n) * scale_cols(n)));
    for (std::uint8_t& b : data) b = std::uint8_t(rng());
    for (std::uint8_t& b : scale) b = std::uint8_t(0x30 + rng() % 16);
    DeviceBuffer a(data.size()), b(data.size()), sa(scale.size()), sb(scale.size()), d(std::size_t(n * n) * 4),
        ws(device::gemm_workspace_bytes(n, n, n, false, GemmAccumulation::MMA_SM100));  // the larger
    a.upload(data.data(), s_);
    sa.upload(scale.data(), s_);
    for (std::uint8_t& x : data) x = std::uint8_t(rng());
    b.upload(data.data(), s_);
    sb.upload(scale.data(), s_);
    const device::GemmOperandView av{a.get<std::uint8_t>(), sa.get<std::uint8_t>(), false},
        bv{b.get<std::uint8_t>(), sb.get<std::uint8_t>(), false};
    device::GemmEpilogue e;
    e.alpha = 1.0f;
    const double flop = 2.0 * double(n) * double(n) * double(n);
    const double ms = median_ms([&] { device::launch_gemm(av, bv, n, n, n, e, d.get(), ws.get(), s_); });
    fmt::print("\nGEMM {}x{}x{}:\n", n, n, n);
    fmt::print("  {:<44} {:>9.3f} ms {:>8.1f} TFLOP-equivalent\n", "EXACT NVFP4, FP32 out (pre-pass + kernel)", ms,
               flop / ms / 1e9);
    gemm_ = {{"M", n}, {"N", n}, {"K", n}, {"exact_ms", ms}, {"exact_tflops", flop / ms / 1e9}};
    e.accumulation = GemmAccumulation::MMA_SM100;
    const double mma_ms = median_ms([&] { device::launch_gemm(av, bv, n, n, n, e, d.get(), ws.get(), s_); });
    fmt::print("  {:<44} {:>9.3f} ms {:>8.1f} TFLOP-equivalent\n", "mma-sm100 NVFP4, FP32 out (+ exact pass)", mma_ms,
               flop / mma_ms / 1e9);
    gemm_["mma_ms"] = mma_ms;
    gemm_["mma_tflops"] = flop / mma_ms / 1e9;
    if (vendor.prepare) {
      const std::function<void()> launch = vendor.prepare(n, n, n, s_);
      const double vms = median_ms(launch);
      fmt::print("  {:<44} {:>9.3f} ms {:>8.1f} TFLOPS\n", vendor.name, vms, flop / vms / 1e9);
      fmt::print("  {:<44} {:>9.2f} (time of EXACT / time of {})\n", "ratio", ms / vms, vendor.name);
      fmt::print("  {:<44} {:>9.3f} (throughput of mma-sm100 / of {}; target >= 0.25)\n", "mma ratio", vms / mma_ms, vendor.name);
      gemm_["mma_throughput_ratio"] = vms / mma_ms;
      gemm_["vendor"] = vendor.name;
      gemm_["vendor_ms"] = vms;
      gemm_["vendor_tflops"] = flop / vms / 1e9;
      gemm_["time_ratio"] = ms / vms;
    } else {
      fmt::print("  no vendor GEMM in this binary (nvfp4_bench times cuBLAS beside it)\n");
    }
    NVFP4_CUDA_CHECK(cudaStreamSynchronize(s_));
  }

  nlohmann::json json() const {
    nlohmann::json j;
    j["copy_gbs"] = copy_gbs_;
    j["gemm"] = gemm_;
    j["distributed"] = dist_;
    for (const Row& r : rows_)
      j["kernels"].push_back({{"kernel", r.kernel},
                              {"dtype", r.dtype},
                              {"M", r.M},
                              {"K", r.K},
                              {"median_ms", r.ms},
                              {"bytes", r.bytes},
                              {"gbs", r.bytes / r.ms / 1e6},
                              {"fraction_of_copy", r.bytes / r.ms / 1e6 / copy_gbs_}});
    return j;
  }

 private:
  // Median milliseconds of `launch` over the timed runs after 3 warm-up runs. With cold_l2, each
  // timed run starts with L2 emptied of the last run's data and the GPU idle (as in the first run
  // of a sequence of kernels that share none of it): back to back, a kernel pair whose second pass
  // rereads the chunks its first pass read last (the rht amax and quantize passes) would also find
  // the previous run's last chunks in L2 at the start of its first pass.
  template <class F>
  double median_ms(F&& launch) {
    Timer t;
    for (int i = 0; i < 3; ++i) launch();
    std::vector<double> ms;
    for (int i = 0; i < o_.repetitions; ++i) {
      if (flush_) {
        (*flush_)(s_);
        NVFP4_CUDA_CHECK(cudaStreamSynchronize(s_));
      }
      NVFP4_CUDA_CHECK(cudaEventRecord(t.start, s_));
      launch();
      NVFP4_CUDA_CHECK(cudaEventRecord(t.stop, s_));
      NVFP4_CUDA_CHECK(cudaEventSynchronize(t.stop));
      float v = 0;
      NVFP4_CUDA_CHECK(cudaEventElapsedTime(&v, t.start, t.stop));
      ms.push_back(v);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }

  // Times one launch of the distributed section; prints its line and returns its record.
  template <class F>
  nlohmann::json time_dist(const std::string& name, double bytes, F&& launch) {
    const double ms = median_ms(launch);
    const double gbs = bytes / ms / 1e6;
    fmt::print("  {:<44} {:>9.4f} ms {:>9.1f} MB {:>8.0f} GB/s {:>6.1f} %\n", name, ms, bytes / 1e6, gbs,
               100.0 * gbs / copy_gbs_);
    return {{"kernel", name}, {"median_ms", ms}, {"bytes", bytes}, {"gbs", gbs}, {"fraction_of_copy", gbs / copy_gbs_}};
  }

  // Captures one step of `flow` into a CUDA graph and counts its nodes by type.
  nlohmann::json launches_per_step(device::RankFlow& flow, const std::uint8_t* chunks, const std::vector<RankRange>& ranks) {
    cudaGraph_t graph = nullptr;
    NVFP4_CUDA_CHECK(cudaStreamBeginCapture(s_, cudaStreamCaptureModeThreadLocal));
    try {
      flow.partial_amax(s_);
      flow.scale_and_cast(s_);
      flow.gather_and_transpose(chunks, ranks, s_);
    } catch (...) {
      cudaStreamEndCapture(s_, &graph);  // leave capture mode; the launch's error is the one reported
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    NVFP4_CUDA_CHECK(cudaStreamEndCapture(s_, &graph));
    std::size_t count = 0;
    NVFP4_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
    std::vector<cudaGraphNode_t> nodes(count);
    NVFP4_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
    int kernels = 0, memsets = 0;
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type{};
      NVFP4_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
      kernels += type == cudaGraphNodeTypeKernel;
      memsets += type == cudaGraphNodeTypeMemset;
    }
    NVFP4_CUDA_CHECK(cudaGraphDestroy(graph));
    return {{"weights", flow.shapes().size()}, {"nodes", count}, {"kernels", kernels}, {"memsets", memsets}};
  }

  template <class F>
  double time(const std::string& kernel, const std::string& dtype, std::int64_t M, std::int64_t K, double bytes, F&& launch) {
    const double ms = median_ms(launch);
    rows_.push_back({kernel, dtype, M, K, ms, bytes});
    const double gbs = bytes / ms / 1e6;
    fmt::print("  {:<29} {:<5} {:>5}x{:<5} {:>9.4f} ms {:>9.1f} MB {:>8.0f} GB/s {:>6.1f} %\n", kernel, dtype, M, K, ms,
               bytes / 1e6, gbs, 100.0 * gbs / copy_gbs_);
    return ms;
  }

  BenchOptions o_;
  cudaStream_t s_;
  double copy_gbs_ = 0;
  std::optional<L2Flush> flush_;
  std::vector<Row> rows_;
  nlohmann::json dist_, gemm_;
};

// Elements per second of the reference's 1D rowwise quantization of a 4096 x 4096 FP32 tensor,
// on one thread and on every hardware thread (the reference's own row threads).
nlohmann::json cpu_reference() {
  const std::size_t n = 4096;
  const FloatMatrix x = cases::randn_matrix(n, n, 7);
  QuantizeOptions o;
  o.profile = default_profile().knobs;
  o.amax = amax_global(x, o.profile.amax);
  auto seconds = [](auto&& f) {  // the best of three runs
    double best = 1e30;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  const double one = seconds([&] {
    const RowThreadLimit single(1);
    quantize(x, o);
  });
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const double all = seconds([&] { quantize(x, o); });
  const double elems = double(n) * n;
  fmt::print(
      "CPU reference, quantize 1D rowwise te, 4096x4096 FP32: {:.1f} M elements/s on 1 thread, {:.1f} M elements/s on {} "
      "threads\n",
      elems / one / 1e6, elems / all / 1e6, threads);
  return {{"elements", elems}, {"single_thread_eps", elems / one}, {"all_threads_eps", elems / all}, {"threads", threads}};
}

// Cases per second of fuzz campaigns (seed 1, nothing saved): reference vs device on one job
// (the campaign as it was) and on every hardware thread, and the CPU campaign (reference vs
// metamorphic) on every hardware thread. A failure would be a bug: it is counted and printed.
nlohmann::json campaign_throughput(double seconds) {
  const int all = int(std::max(1u, std::thread::hardware_concurrency()));
  nlohmann::json j = nlohmann::json::object();
  auto run = [&](const std::string& actual, int jobs) {
    fuzz::CampaignOptions o;
    o.seconds = seconds;
    o.seed = 1;
    const fuzz::CampaignResult r = fuzz::run_campaign(
        o,
        [&](int) {
          std::shared_ptr<cases::Backend> b;
          if (actual == "device")
            b = std::make_shared<device::DeviceBackend>();
          else
            b = std::make_shared<cases::MetamorphicBackend>();
          return fuzz::BackendPair{std::make_shared<cases::ReferenceBackend>(), b};
        },
        jobs);
    const double rate = double(r.cases) / r.seconds;
    fmt::print("  reference vs {:<12} {:>3} job{} {:>10.0f} cases/s  ({} cases in {:.1f} s, {} failures)\n", actual, jobs,
               jobs == 1 ? " " : "s", rate, r.cases, r.seconds, r.failures.size());
    j[fmt::format("{}_{}_jobs", actual, jobs)] = {{"cases_per_s", rate}, {"cases", r.cases}, {"failures", r.failures.size()}};
    return rate;
  };
  fmt::print("fuzz campaigns, {:.0f} s each (seed 1, every operation):\n", seconds);
  const double one = run("device", 1), many = run("device", all);
  fmt::print("  GPU campaign on {} jobs / on 1 job: {:.2f}\n", all, many / one);
  run("metamorphic", all);
  return j;
}

}  // namespace

int run_bench(const BenchOptions& options, const VendorGemm& vendor) {
  if (!options.json_path.empty()) io::prepare_output_file(options.json_path, "--json");
  if (const auto reason = device::device_unavailable_reason()) {
    fmt::print(stderr, "nvfp4-verify bench: {}\n", *reason);
    return 2;
  }
  cudaDeviceProp prop{};
  int dev = 0;
  NVFP4_CUDA_CHECK(cudaGetDevice(&dev));
  NVFP4_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  Bench b(options);
  fmt::print("GPU: {} ({} SMs); median of {} launches after warm-up, {}\n", prop.name, prop.multiProcessorCount,
             options.repetitions,
             options.cold_l2 ? "each with L2 flushed and the GPU idle before it" : "back to back (--warm-l2)");
  fmt::print("device-to-device copy: {:.0f} GB/s (bytes read + written)\n", b.copy_bandwidth());
  fmt::print("  {:<26} {:<5} {:>11} {:>12} {:>12} {:>13} {:>8}\n", "kernel", "dtype", "shape", "median", "moved", "bandwidth",
             "of copy");
  std::vector<std::int64_t> sizes = {8192};
  if (options.large) sizes.push_back(16384);
  for (const std::int64_t n : sizes)
    for (const auto type : {device::InputType::BF16, device::InputType::F32}) b.kernels(n, n, type);
  b.gemm(8192, vendor);
  b.distributed();
  b.distributed_large(8192, 8192);
  nlohmann::json j = b.json();
  j["gpu"] = prop.name;
  j["cold_l2"] = options.cold_l2;
  j["cpu_reference"] = cpu_reference();
  if (options.campaign_seconds > 0) j["campaigns"] = campaign_throughput(options.campaign_seconds);
  if (!options.json_path.empty()) io::write_file_atomic(options.json_path, j.dump(2) + "\n");
  return 0;
}

}  // namespace nvfp4::bench
