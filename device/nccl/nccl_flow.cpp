#include "device/nccl/nccl_flow.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <future>
#include <optional>
#include <span>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nccl.h>

#include "cases/recipe.h"
#include "device/flow/flow_workloads.h"
#include "device/kernels/launch.h"
#include "device/runtime/check.h"
#include "reference/half_float.h"
#include "reference/layout.h"
#include "reference/master_weights.h"
#include "reference/profiles.h"

namespace nvfp4::device {
namespace {

void check_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  if (r != ncclSuccess)
    throw std::runtime_error(
        fmt::format("{}:{}: {}: {} ({})", file, line, call, ncclGetErrorString(r), ncclGetLastError(nullptr)));
}
#define NVFP4_NCCL_CHECK(call) check_nccl((call), #call, __FILE__, __LINE__)

// One weight's outputs as bytes, in quantize's layouts.
struct WeightBytes {
  std::vector<std::uint8_t> data, scale, data_t, scale_t;
  float amax = 0;
};

std::vector<std::uint8_t> download(const void* device, std::size_t bytes, cudaStream_t stream) {
  std::vector<std::uint8_t> host(bytes);
  NVFP4_CUDA_CHECK(cudaMemcpyAsync(host.data(), device, bytes, cudaMemcpyDeviceToHost, stream));
  NVFP4_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

struct Sizes {
  std::size_t data, scale, scale_t;
};
Sizes sizes(const WeightShape& w) {
  return {std::size_t(w.M * w.K / 2), std::size_t(scale_rows(w.M) * scale_cols(w.K)),
          std::size_t(scale_rows(w.K) * scale_cols(w.M))};
}

// FP32 master weights from the fuzzer's recipes, several distributions in turn (NaN, ±inf,
// subnormals, zero blocks, E2M1 ties, values that round to BF16 infinity), generated in parallel.
std::vector<FloatMatrix> master_weights(const std::vector<WeightShape>& shapes, std::uint64_t seed) {
  static constexpr cases::Distribution kDists[] = {cases::Distribution::kRandn, cases::Distribution::kSpecials,
                                                   cases::Distribution::kBlockLogUniform, cases::Distribution::kTies,
                                                   cases::Distribution::kUniform};
  std::vector<FloatMatrix> weights(shapes.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < shapes.size();) {
      cases::Recipe r;
      r.dist = kDists[i % std::size(kDists)];
      r.seed = seed * 1000003 + i;
      r.M = shapes[i].M;
      r.K = shapes[i].K;
      if (i % 8 == 7) r.active_blocks = 0;  // an all-zero weight: g = 0
      weights[i] = cases::generate_values(r);
    }
  };
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) pool.emplace_back(work);
  }  // joined here
  return weights;
}

// Reference (a): each whole weight, rounded to BF16 on the host, quantized in one call on the
// current GPU (2D tiles, both directions) with its global amax from amax_global. Uses only the
// single-tensor kernels (launch.h), none of the flow's.
std::vector<WeightBytes> quantize_whole(const std::vector<FloatMatrix>& weights, const Profile& profile, cudaStream_t stream) {
  std::vector<WeightBytes> out;
  for (const FloatMatrix& w : weights) {
    const WeightShape shape{std::int64_t(w.shape(0)), std::int64_t(w.shape(1))};
    const Sizes n = sizes(shape);
    std::vector<std::uint16_t> bf16(w.size());
    std::transform(w.begin(), w.end(), bf16.begin(), float_to_bf16);
    DeviceBuffer x(2 * bf16.size()), amax(sizeof(float)), data(n.data), scale(n.scale), data_t(n.data), scale_t(n.scale_t);
    x.upload(bf16.data(), stream);
    for (DeviceBuffer* b : {&amax, &data, &scale, &data_t, &scale_t}) b->poison(stream);
    launch_amax_global(x.get(), InputType::BF16, shape.M, shape.K, profile.amax, amax.get<float>(), stream);
    QuantizeParams p;
    p.profile = profile;
    p.tiles_2d = true;
    p.amax = p.amax_t = amax.get<float>();
    launch_quantize(
        x.get(), InputType::BF16, shape.M, shape.K, p,
        {data.get<std::uint8_t>(), scale.get<std::uint8_t>(), data_t.get<std::uint8_t>(), scale_t.get<std::uint8_t>()}, stream);
    WeightBytes b{data.download(stream), scale.download(stream), data_t.download(stream), scale_t.download(stream), 0};
    std::memcpy(&b.amax, amax.download(stream).data(), sizeof(float));
    out.push_back(std::move(b));
  }
  return out;
}

// What one rank found.
struct RankOutcome {
  std::exception_ptr error;
  bool comm_aborted = false;
  std::string abort_error;  // when aborting the communicator after `error` failed too
  double last_step_ms = 0;
  std::uint64_t bytes_vs_quantize = 0, bytes_vs_reference = 0, mismatched_fields = 0;
  std::vector<std::string> mismatches;
};

constexpr std::size_t kMaxMismatchLines = 40;

// Compares one output field bitwise (NUMERICS.md's contract: no tolerance; no field here may be NaN,
// since the amaxes ignore NaN).
void compare(std::span<const std::uint8_t> got, std::span<const std::uint8_t> want, const std::string& what, std::uint64_t& bytes,
             RankOutcome& out) {
  bytes += want.size();
  std::size_t differ = 0, first = 0;
  if (got.size() == want.size())
    for (std::size_t i = 0; i < want.size(); ++i)
      if (got[i] != want[i] && differ++ == 0) first = i;
  if (got.size() == want.size() && differ == 0) return;
  ++out.mismatched_fields;
  if (out.mismatches.size() >= kMaxMismatchLines) return;
  if (got.size() != want.size())
    out.mismatches.push_back(fmt::format("{}: {} bytes, expected {}", what, got.size(), want.size()));
  else
    out.mismatches.push_back(fmt::format("{}: {} of {} bytes differ, first at byte {}: 0x{:02x}, expected 0x{:02x}", what, differ,
                                         want.size(), first, got[first], want[first]));
}

std::span<const std::uint8_t> bytes_of(const float& f) { return {reinterpret_cast<const std::uint8_t*>(&f), sizeof f}; }
std::span<const std::uint8_t> bytes_of(const ByteMatrix& m) { return {m.data(), m.size()}; }

// Everything the rank threads share.
struct Run {
  const NcclFlowOptions& options;
  Profile profile;
  std::vector<WeightShape> shapes;
  std::vector<FloatMatrix> weights;
  std::vector<RankRange> ranks;
  std::int64_t pitch = 0;
  std::vector<WeightBytes> quantized;                     // reference (a)
  std::shared_future<std::vector<CastWeight>> reference;  // reference (b), computed meanwhile
  std::barrier<> set_up;
  std::atomic<bool> failed{false};
};

// Waits for the stream without blocking, so that a rank whose peer failed (and will never join a
// collective) can abort its communicator instead of hanging.
void wait(cudaStream_t stream, ncclComm_t comm, const Run& run, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) NVFP4_CUDA_CHECK(e);
    ncclResult_t async = ncclSuccess;
    NVFP4_NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
    check_nccl(async, "the step's collectives (ncclCommGetAsyncError)", __FILE__, __LINE__);
    if (run.failed) throw std::runtime_error("stopped: another rank failed");
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(fmt::format("timed out after {} s waiting for the step", run.options.timeout_s));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The device resources of one rank, freed after its communicator is aborted (when it is).
struct RankState {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  DeviceBuffer master, chunks;
  std::optional<RankFlow> flow;
  RankState() = default;
  RankState(const RankState&) = delete;
  RankState& operator=(const RankState&) = delete;
  ~RankState() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
};

void set_up_rank(int rho, Run& run, RankState& st) {
  NVFP4_CUDA_CHECK(cudaSetDevice(rho));
  NVFP4_CUDA_CHECK(cudaStreamCreate(&st.stream));
  NVFP4_CUDA_CHECK(cudaEventCreate(&st.start));
  NVFP4_CUDA_CHECK(cudaEventCreate(&st.stop));
  // This rank's FP32 master values: its slice of the concatenated weights.
  const RankRange& range = run.ranks[std::size_t(rho)];
  std::vector<std::int64_t> elements;
  for (const WeightShape& s : run.shapes) elements.push_back(s.M * s.K);
  const std::vector<std::int64_t> offsets = weight_offsets(elements);
  std::vector<float> slice(std::size_t(range.end - range.begin));
  for (const ShardPiece& p : rank_pieces(elements, range))
    std::copy_n(run.weights[p.weight].data() + p.shard.start, p.shard.length,
                slice.begin() + (offsets[p.weight] + p.shard.start - range.begin));
  st.master = DeviceBuffer(sizeof(float) * slice.size());
  st.master.upload(slice.data(), st.stream);
  st.flow.emplace(run.shapes, range, st.master.get<float>(), run.pitch, run.profile);
  st.chunks = DeviceBuffer(std::size_t(run.pitch) * run.ranks.size());
  st.chunks.poison(st.stream);
  NVFP4_CUDA_CHECK(cudaStreamSynchronize(st.stream));
}

void step(ncclComm_t comm, Run& run, RankState& st) {
  RankFlow& f = *st.flow;
  f.partial_amax(st.stream);
  NVFP4_NCCL_CHECK(
      ncclAllReduce(f.amax_arena(), f.amax_arena(), std::size_t(f.amax_arena_floats()), ncclFloat, ncclMax, comm, st.stream));
  f.scale_and_cast(st.stream);
  NVFP4_NCCL_CHECK(ncclAllGather(f.cast_buffer(), st.chunks.get(), std::size_t(f.chunk_pitch()), ncclUint8, comm, st.stream));
  f.gather_and_transpose(st.chunks.get<std::uint8_t>(), run.ranks, st.stream);
}

void check_rank(int rho, Run& run, RankState& st, RankOutcome& out) {
  const RankFlow& f = *st.flow;
  auto compare_with = [&](const WeightBytes& got, std::size_t i, std::span<const std::uint8_t> data,
                          std::span<const std::uint8_t> scale, std::span<const std::uint8_t> data_t,
                          std::span<const std::uint8_t> scale_t, const float& amax, const char* name, std::uint64_t& bytes) {
    const std::string what = fmt::format("rank {}, weight {} [{}x{}]", rho, i, run.shapes[i].M, run.shapes[i].K);
    compare(got.data, data, fmt::format("{}, data vs {}", what, name), bytes, out);
    compare(got.scale, scale, fmt::format("{}, scale vs {}", what, name), bytes, out);
    compare(got.data_t, data_t, fmt::format("{}, data_t vs {}", what, name), bytes, out);
    compare(got.scale_t, scale_t, fmt::format("{}, scale_t vs {}", what, name), bytes, out);
    compare(bytes_of(got.amax), bytes_of(amax), fmt::format("{}, amax vs {}", what, name), bytes, out);
  };
  const std::vector<CastWeight>& reference = run.reference.get();
  for (std::size_t i = 0; i < run.shapes.size(); ++i) {
    const Sizes n = sizes(run.shapes[i]);
    WeightBytes got{download(f.data(i), n.data, st.stream), download(f.scale(i), n.scale, st.stream),
                    download(f.data_t(i), n.data, st.stream), download(f.scale_t(i), n.scale_t, st.stream), 0};
    std::memcpy(&got.amax, download(f.amax(i), sizeof(float), st.stream).data(), sizeof(float));
    const WeightBytes& q = run.quantized[i];
    compare_with(got, i, q.data, q.scale, q.data_t, q.scale_t, q.amax, "single-GPU quantize", out.bytes_vs_quantize);
    const CastWeight& r = reference[i];
    compare_with(got, i, bytes_of(r.data), bytes_of(r.scale), bytes_of(r.data_t), bytes_of(r.scale_t), r.amax,
                 "CPU cast_master_weights", out.bytes_vs_reference);
  }
}

// One rank's thread. Set-up failures are reported at the barrier, before any collective is
// enqueued; a later failure aborts this rank's communicator, which also ends its pending kernels.
void rank_main(int rho, ncclComm_t comm, Run& run, RankOutcome& out) {
  RankState st;
  try {
    set_up_rank(rho, run, st);
  } catch (...) {
    out.error = std::current_exception();
    run.failed = true;
  }
  run.set_up.arrive_and_wait();
  if (run.failed) return;
  try {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(run.options.timeout_s);
    for (int s = 0; s < run.options.steps; ++s) {
      NVFP4_CUDA_CHECK(cudaEventRecord(st.start, st.stream));
      step(comm, run, st);
      NVFP4_CUDA_CHECK(cudaEventRecord(st.stop, st.stream));
      wait(st.stream, comm, run, deadline);
    }
    float ms = 0;
    NVFP4_CUDA_CHECK(cudaEventElapsedTime(&ms, st.start, st.stop));
    out.last_step_ms = ms;
    check_rank(rho, run, st, out);
  } catch (...) {
    out.error = std::current_exception();
    run.failed = true;
    out.comm_aborted = true;
    if (const ncclResult_t r = ncclCommAbort(comm); r != ncclSuccess)
      out.abort_error = fmt::format("ncclCommAbort: {} ({})", ncclGetErrorString(r), ncclGetLastError(nullptr));
  }
}

std::string message(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

// The whole weights quantized on GPU 0 by the single-tensor kernels, before the ranks start.
void quantize_on_first_gpu(Run& run) {
  NVFP4_CUDA_CHECK(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  NVFP4_CUDA_CHECK(cudaStreamCreate(&stream));
  try {
    run.quantized = quantize_whole(run.weights, run.profile, stream);
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  NVFP4_CUDA_CHECK(cudaStreamDestroy(stream));
}

// Every rank's steps on its GPU, one thread each, then the communicators released; throws with
// every rank's error when one failed.
std::vector<RankOutcome> run_ranks(int R, Run& run) {
  std::vector<ncclComm_t> comms(std::size_t(R), nullptr);
  NVFP4_NCCL_CHECK(ncclCommInitAll(comms.data(), R, nullptr));  // devices 0 .. R-1
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(R));
  {
    std::vector<std::jthread> threads;
    for (int rho = 0; rho < R; ++rho)
      threads.emplace_back(rank_main, rho, comms[std::size_t(rho)], std::ref(run), std::ref(outcomes[std::size_t(rho)]));
  }  // joined here
  std::string errors;
  for (int rho = 0; rho < R; ++rho) {
    RankOutcome& o = outcomes[std::size_t(rho)];
    if (o.error) errors += fmt::format("\n  rank {} (GPU {}): {}", rho, rho, message(o.error));
    if (!o.abort_error.empty()) errors += fmt::format("\n  rank {}: {}", rho, o.abort_error);
  }
  for (int rho = 0; rho < R; ++rho) {
    if (outcomes[std::size_t(rho)].comm_aborted) continue;
    // After a failure a healthy rank's peers may be gone: abort rather than a destroy that may wait for them.
    const ncclResult_t r = errors.empty() ? ncclCommDestroy(comms[std::size_t(rho)]) : ncclCommAbort(comms[std::size_t(rho)]);
    if (r != ncclSuccess)
      errors +=
          fmt::format("\n  rank {}: releasing the communicator: {} ({})", rho, ncclGetErrorString(r), ncclGetLastError(nullptr));
  }
  if (!errors.empty()) throw std::runtime_error("the NCCL flow failed:" + errors);
  return outcomes;
}

}  // namespace

NcclFlowResult run_nccl_flow(const NcclFlowOptions& options) {
  setenv("NCCL_NVLS_ENABLE", "0", 0);  // NVLink multicast stays off (docs/gpu.md), unless the caller set it
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess)
    throw std::runtime_error(
        fmt::format("no CUDA device: cudaGetDeviceCount: {} ({})", cudaGetErrorName(e), cudaGetErrorString(e)));
  const int R = options.gpus > 0 ? options.gpus : devices;
  if (R < 1 || R > devices || R > kMaxRanks)
    throw std::runtime_error(fmt::format("{} GPUs asked for, {} CUDA devices present (at most {} ranks)", R, devices, kMaxRanks));
  if (options.steps < 1) throw std::runtime_error("at least one step");

  NcclFlowResult result;
  NVFP4_NCCL_CHECK(ncclGetVersion(&result.nccl_version));
  for (int d = 0; d < R; ++d) {
    cudaDeviceProp prop{};
    NVFP4_CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    result.gpus.push_back(prop.name);
  }
  result.shapes = options.weights == WeightList::kSmall ? edge_weights() : transformer_weights(16);
  const std::int64_t total = total_elements(result.shapes);
  result.cuts = !options.cuts.empty()               ? options.cuts
                : options.cut_rule == CutRule::kOdd ? odd_cuts(total, R, options.seed)
                                                    : equal_cuts(total, R);
  result.ranks = rank_ranges(total, R, result.cuts);
  result.chunk_pitch = chunk_pitch(result.ranks);

  Run run{options,
          default_profile().knobs,
          result.shapes,
          master_weights(result.shapes, options.seed),
          result.ranks,
          result.chunk_pitch,
          {},
          {},
          std::barrier<>(R)};
  // Reference (b) on the CPU while the GPUs work.
  run.reference =
      std::async(std::launch::async, [&run] { return cast_master_weights(run.weights, run.ranks, run.profile); }).share();
  quantize_on_first_gpu(run);

  const std::vector<RankOutcome> outcomes = run_ranks(R, run);

  for (const RankOutcome& o : outcomes) {
    result.last_step_ms = std::max(result.last_step_ms, o.last_step_ms);
    result.bytes_vs_quantize += o.bytes_vs_quantize;
    result.bytes_vs_reference += o.bytes_vs_reference;
    result.mismatched_fields += o.mismatched_fields;
    for (const std::string& m : o.mismatches)
      if (result.mismatches.size() < kMaxMismatchLines) result.mismatches.push_back(m);
  }
  return result;
}

std::string summary(const NcclFlowOptions& options, const NcclFlowResult& r) {
  const std::int64_t total = r.ranks.empty() ? 0 : r.ranks.back().end;
  std::string s = fmt::format("NCCL {}.{}.{}, {} GPUs, one rank and one thread per GPU, NCCL_NVLS_ENABLE={}\n",
                              r.nccl_version / 10000, r.nccl_version / 100 % 100, r.nccl_version % 100, r.gpus.size(),
                              std::getenv("NCCL_NVLS_ENABLE") ? std::getenv("NCCL_NVLS_ENABLE") : "");
  for (std::size_t d = 0; d < r.gpus.size(); ++d) s += fmt::format("  GPU {}: {}\n", d, r.gpus[d]);
  s += fmt::format("weights: {} ({} weights, {} elements), seed {}, profile te\n",
                   options.weights == WeightList::kSmall ? "small" : "1b", r.shapes.size(), total, options.seed);
  s += fmt::format("cut points ({}): {}\n",
                   !options.cuts.empty()               ? "given"
                   : options.cut_rule == CutRule::kOdd ? "odd"
                                                       : "equal",
                   fmt::join(r.cuts, " "));
  for (std::size_t rho = 0; rho < r.ranks.size(); ++rho) {
    const RankRange& g = r.ranks[rho];
    s += fmt::format("  rank {}: elements [{}, {}), {} bytes from byte {}{}\n", rho, g.begin, g.end, g.buffer_bytes(),
                     g.first_byte(), (g.begin % 2 || g.end % 2) ? " (shares a byte with a neighbour)" : "");
  }
  s += fmt::format("chunk pitch {} bytes; {} steps, last step {:.3f} ms (slowest rank, collectives included)\n", r.chunk_pitch,
                   options.steps, r.last_step_ms);
  s += fmt::format(
      "compared bitwise on every rank (data, scale, data_t, scale_t, amax of every weight):\n"
      "  vs single-GPU quantize (2D tiles, amax_global of the BF16 weight): {} bytes\n"
      "  vs CPU reference cast_master_weights:                            {} bytes\n",
      r.bytes_vs_quantize, r.bytes_vs_reference);
  for (const std::string& m : r.mismatches) s += "  MISMATCH " + m + "\n";
  if (r.mismatched_fields > r.mismatches.size()) s += fmt::format("  ... {} mismatching fields in all\n", r.mismatched_fields);
  s += r.pass() ? "PASS\n" : "FAIL\n";
  return s;
}

}  // namespace nvfp4::device
