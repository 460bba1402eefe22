#include "bench/bench.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "device/device_backend.h"
#include "device/device_buffer.h"
#include "device/kernels.h"
#include "fuzz/recipe.h"
#include "reference/amax.h"
#include "reference/half_float.h"
#include "reference/layout.h"
#include "reference/profiles.h"
#include "reference/quantize.h"

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

// Median milliseconds of `launch` over `reps` timed runs after 3 warm-up runs.
template <class F>
double median_ms(F&& launch, int reps, cudaStream_t s) {
  Timer t;
  for (int i = 0; i < 3; ++i) launch();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    NVFP4_CUDA_CHECK(cudaEventRecord(t.start, s));
    launch();
    NVFP4_CUDA_CHECK(cudaEventRecord(t.stop, s));
    NVFP4_CUDA_CHECK(cudaEventSynchronize(t.stop));
    float v = 0;
    NVFP4_CUDA_CHECK(cudaEventElapsedTime(&v, t.start, t.stop));
    ms.push_back(v);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Row {
  std::string kernel, dtype;
  std::int64_t M, K;
  double ms, bytes;
};

class Bench {
 public:
  explicit Bench(const BenchOptions& o) : o_(o) { NVFP4_CUDA_CHECK(cudaStreamCreate(&s_)); }
  ~Bench() { cudaStreamDestroy(s_); }

  double copy_bandwidth() {
    const std::size_t bytes = std::size_t(1) << 30;
    DeviceBuffer a(bytes), b(bytes);
    a.poison(s_, 1);
    const double ms = median_ms([&] { NVFP4_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice, s_)); },
                                o_.repetitions, s_);
    copy_gbs_ = 2.0 * bytes / ms / 1e6;  // bytes read plus written
    return copy_gbs_;
  }

  void kernels(std::int64_t M, std::int64_t K, device::InputType type) {
    const std::size_t in_size = type == device::InputType::F32 ? 4 : 2;
    const std::string dtype = type == device::InputType::F32 ? "fp32" : "bf16";
    // Input: approximately normal values (BF16 inputs narrowed on the host), uploaded once.
    const FloatMatrix x = fuzz::randn_matrix(std::size_t(M), std::size_t(K), 7);
    std::vector<std::uint8_t> host(std::size_t(M * K) * in_size);
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (type == device::InputType::F32) std::memcpy(&host[4 * i], &x.data()[i], 4);
      else {
        const std::uint16_t h = float_to_bf16(x.data()[i]);
        std::memcpy(&host[2 * i], &h, 2);
      }
    }
    DeviceBuffer in(host.size());
    in.upload(host.data(), s_);
    const Profile& te = default_profile().knobs;
    DeviceBuffer amax(sizeof(float)), rows(sizeof(float) * M), cols(sizeof(float) * K);
    device::amax_global(in.get(), type, M, K, te.amax, amax.get<float>(), s_);
    device::amax_rows(in.get(), type, M, K, te.amax, rows.get<float>(), s_);
    device::amax_cols(in.get(), type, M, K, te.amax, cols.get<float>(), s_);
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
      return [&, params, outs] { device::quantize(in.get(), type, M, K, params, outs, s_); };
    };
    device::QuantizeParams p2d = p, prs = p;
    p2d.tiles_2d = true;
    prs.row_scaled = true;
    prs.amax = rows.get<float>();
    prs.amax_t = cols.get<float>();
    const double one_dir = in_bytes + data_bytes + scale_bytes, two_dir = in_bytes + 2 * (data_bytes + scale_bytes);
    time("amax_global", dtype, M, K, in_bytes, [&] { device::amax_global(in.get(), type, M, K, te.amax, amax.get<float>(), s_); });
    time("quantize rowwise", dtype, M, K, one_dir, quantize(p, row_out));
    time("quantize columnwise", dtype, M, K, one_dir, quantize(p, col_out));
    time("quantize both", dtype, M, K, two_dir, quantize(p, both_out));
    time("quantize 2d both", dtype, M, K, two_dir, quantize(p2d, both_out));
    time("quantize row-scaled both", dtype, M, K, two_dir + 4.0 * (M + K), quantize(prs, both_out));
    const device::OutputType ot = type == device::InputType::F32 ? device::OutputType::F32 : device::OutputType::BF16;
    time("dequantize", dtype, M, K, data_bytes + scale_bytes + in_bytes, [&] {
      device::dequantize(data.get<std::uint8_t>(), scale.get<std::uint8_t>(), amax.get<float>(), 1, M, K, te, ot, out.get(), s_);
    });
    time("transpose packed", dtype, M, K, 2 * data_bytes,
         [&] { device::transpose_packed(data.get<std::uint8_t>(), M, K, data_t.get<std::uint8_t>(), s_); });
    time("swizzle scales", dtype, M, K, 2 * scale_bytes,
         [&] { device::swizzle_scales(scale.get<std::uint8_t>(), sr, sc, swz.get<std::uint8_t>(), s_); });
    time("transpose scales 2d", dtype, M, K, scale_bytes + double(sr_t * sc_t),
         [&] { device::transpose_scales_2d(scale.get<std::uint8_t>(), M, K, scale_t.get<std::uint8_t>(), s_); });
    NVFP4_CUDA_CHECK(cudaStreamSynchronize(s_));
  }

  nlohmann::json json() const {
    nlohmann::json j;
    j["copy_gbs"] = copy_gbs_;
    for (const Row& r : rows_)
      j["kernels"].push_back({{"kernel", r.kernel}, {"dtype", r.dtype}, {"M", r.M}, {"K", r.K}, {"median_ms", r.ms},
                              {"bytes", r.bytes}, {"gbs", r.bytes / r.ms / 1e6}, {"fraction_of_copy", r.bytes / r.ms / 1e6 / copy_gbs_}});
    return j;
  }

 private:
  template <class F>
  void time(const std::string& kernel, const std::string& dtype, std::int64_t M, std::int64_t K, double bytes, F&& launch) {
    const double ms = median_ms(launch, o_.repetitions, s_);
    rows_.push_back({kernel, dtype, M, K, ms, bytes});
    const double gbs = bytes / ms / 1e6;
    fmt::print("  {:<26} {:<5} {:>5}x{:<5} {:>9.4f} ms {:>9.1f} MB {:>8.0f} GB/s {:>6.1f} %\n", kernel, dtype, M, K, ms,
               bytes / 1e6, gbs, 100.0 * gbs / copy_gbs_);
  }

  BenchOptions o_;
  cudaStream_t s_;
  double copy_gbs_ = 0;
  std::vector<Row> rows_;
};

// Elements per second of the reference's 1D rowwise quantization of a 4096 x 4096 FP32 tensor,
// on one thread and on every hardware thread (row bands quantized independently with the
// tensor's global amax, which yields the same bytes as one call).
nlohmann::json cpu_reference() {
  const std::size_t n = 4096;
  const FloatMatrix x = fuzz::randn_matrix(n, n, 7);
  QuantizeOptions o;
  o.profile = default_profile().knobs;
  o.amax = amax_global(x, o.profile.amax);
  auto seconds = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double one = seconds([&] { quantize(x, o); });
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const double all = seconds([&] {
    std::vector<std::thread> pool;
    const std::size_t band = (n / 16 + threads - 1) / threads * 16;
    for (std::size_t r0 = 0; r0 < n; r0 += band)
      pool.emplace_back([&, r0] {
        const FloatMatrix part = xt::view(x, xt::range(r0, std::min(n, r0 + band)), xt::all());
        quantize(part, o);
      });
    for (auto& t : pool) t.join();
  });
  const double elems = double(n) * n;
  fmt::print("CPU reference, quantize 1D rowwise te, 4096x4096 FP32: {:.1f} M elements/s on 1 thread, {:.1f} M elements/s on {} threads\n",
             elems / one / 1e6, elems / all / 1e6, threads);
  return {{"elements", elems}, {"single_thread_eps", elems / one}, {"all_threads_eps", elems / all}, {"threads", threads}};
}

}  // namespace

int run_bench(const BenchOptions& options) {
  if (const auto reason = device::device_unavailable_reason()) {
    fmt::print(stderr, "nvfp4-verify bench: {}\n", *reason);
    return 2;
  }
  cudaDeviceProp prop{};
  int dev = 0;
  NVFP4_CUDA_CHECK(cudaGetDevice(&dev));
  NVFP4_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  Bench b(options);
  fmt::print("GPU: {} ({} SMs); median of {} launches after warm-up\n", prop.name, prop.multiProcessorCount, options.repetitions);
  fmt::print("device-to-device copy: {:.0f} GB/s (bytes read + written)\n", b.copy_bandwidth());
  fmt::print("  {:<26} {:<5} {:>11} {:>12} {:>12} {:>13} {:>8}\n", "kernel", "dtype", "shape", "median", "moved", "bandwidth", "of copy");
  std::vector<std::int64_t> sizes = {8192};
  if (options.large) sizes.push_back(16384);
  for (const std::int64_t n : sizes)
    for (const auto type : {device::InputType::BF16, device::InputType::F32}) b.kernels(n, n, type);
  nlohmann::json j = b.json();
  j["gpu"] = prop.name;
  j["cpu_reference"] = cpu_reference();
  if (!options.json_path.empty()) std::ofstream(options.json_path) << j.dump(2) << "\n";
  return 0;
}

}  // namespace nvfp4::bench
