#include "device/plugin/cublaslt_gemm.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <cublasLt.h>
#include <fmt/format.h>

#include "cases/case.h"
#include "device/runtime/device_buffer.h"
#include "reference/layout.h"
#include "reference/scale_layout.h"

namespace nvfp4::device::cublaslt {
namespace {

using device::DeviceBuffer;

constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

// The entry points used, looked up at run time; their types come from the header.
struct Api {
  decltype(&cublasLtGetVersion) GetVersion = nullptr;
  decltype(&cublasLtGetStatusName) GetStatusName = nullptr;
  decltype(&cublasLtCreate) Create = nullptr;
  decltype(&cublasLtMatmulDescCreate) MatmulDescCreate = nullptr;
  decltype(&cublasLtMatmulDescDestroy) MatmulDescDestroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) MatrixLayoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic = nullptr;
  decltype(&cublasLtMatmul) Matmul = nullptr;
};

// The library, its handle and its workspace, or why there are none.
struct State {
  std::optional<std::string> unavailable;
  Api api;
  cublasLtHandle_t handle = nullptr;
  std::unique_ptr<DeviceBuffer> workspace;
};

std::string status_name(const Api& api, cublasStatus_t s) {
  return api.GetStatusName ? api.GetStatusName(s) : fmt::format("cublasStatus_t {}", int(s));
}

void check(const Api& api, cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(fmt::format("{} returned {}", call, status_name(api, s)));
}

// "no CUDA device: ..." (the device backend's words), or "".
std::string no_device() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fmt::format("no CUDA device: cudaGetDeviceCount returned {} ({})", cudaGetErrorName(e), cudaGetErrorString(e));
  }
  return count == 0 ? "no CUDA device: cudaGetDeviceCount found 0 devices" : "";
}

// Opens the library ($NVFP4_CUBLASLT, else the loader's search, else the toolkit's default
// folder) and looks up every entry point; "" when all are there.
std::string open_library(Api& api) {
  const char* env = std::getenv("NVFP4_CUBLASLT");
  const std::string name = fmt::format("libcublasLt.so.{}", CUBLAS_VER_MAJOR);
  const std::vector<std::string> candidates =
      env && *env ? std::vector<std::string>{env} : std::vector<std::string>{name, "/usr/local/cuda/lib64/" + name};
  void* lib = nullptr;
  std::string path, why;
  for (const std::string& candidate : candidates) {
    if ((lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      path = candidate;
      break;
    }
    const char* error = dlerror();
    why += (why.empty() ? "" : "; ") + std::string(error ? error : candidate);
  }
  if (!lib) return fmt::format("cuBLASLt cannot be loaded: {} (set NVFP4_CUBLASLT to the library's path)", why);
  std::string missing;
  auto find = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn && missing.empty()) missing = name;
  };
  find(api.GetVersion, "cublasLtGetVersion");
  find(api.GetStatusName, "cublasLtGetStatusName");
  find(api.Create, "cublasLtCreate");
  find(api.MatmulDescCreate, "cublasLtMatmulDescCreate");
  find(api.MatmulDescDestroy, "cublasLtMatmulDescDestroy");
  find(api.MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  find(api.MatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  find(api.MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  find(api.MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
  find(api.MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
  find(api.MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  find(api.MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  find(api.Matmul, "cublasLtMatmul");
  return missing.empty() ? "" : fmt::format("cuBLASLt cannot be loaded: {} has no {}", path, missing);
}

// The descriptors of D = op(A)·op(B) in cuBLASLt's column-major terms, for row-major operands
// x [rows_x, k] and w [rows_w, k] (both K-major): A = w with TRANSA = T, B = x, and D is
// [rows_w, rows_x] column-major, which is row-major [rows_x, rows_w]: x · wᵀ, TransformerEngine's TN.
class Plan {
 public:
  Plan(const Api& api, std::int64_t rows_x, std::int64_t rows_w, std::int64_t k, cudaDataType_t out, const void* scale_x,
       const void* scale_w, bool one_chain = false)
      : api_(api) {
    try {
      check(api, api.MatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
      const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
      const std::int32_t vec16 = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
      set(CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
      set(CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n);
      set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &vec16, sizeof vec16);
      set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &vec16, sizeof vec16);
      set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_w, sizeof scale_w);
      set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_x, sizeof scale_x);
      layout(a_, CUDA_R_4F_E2M1, k, rows_w, k);
      layout(b_, CUDA_R_4F_E2M1, k, rows_x, k);
      layout(d_, out, rows_w, rows_x, rows_w);
      check(api, api.MatmulPreferenceCreate(&pref_), "cublasLtMatmulPreferenceCreate");
      const std::uint64_t workspace = kWorkspaceBytes;
      check(api, api.MatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
            "cublasLtMatmulPreferenceSetAttribute");
      if (one_chain) {  // no split-K: each output one chain of instructions along K
        const std::uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
        check(api, api.MatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &none, sizeof none),
              "cublasLtMatmulPreferenceSetAttribute");
      }
    } catch (...) {
      release();
      throw;
    }
  }
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() { release(); }

  // The heuristic's first algorithm: its status (SUCCESS only with an algorithm).
  cublasStatus_t choose(cublasLtHandle_t handle) {
    int found = 0;
    const cublasStatus_t s = api_.MatmulAlgoGetHeuristic(handle, desc_, a_, b_, d_, d_, pref_, 1, &algo_, &found);
    return s != CUBLAS_STATUS_SUCCESS ? s : found == 0 ? CUBLAS_STATUS_NOT_SUPPORTED : algo_.state;
  }

  void run(cublasLtHandle_t handle, float alpha, const void* x, const void* w, void* d, DeviceBuffer& workspace) {
    const float beta = 0.0f;
    check(api_,
          api_.Matmul(handle, desc_, &alpha, w, a_, x, b_, &beta, d, d_, d, d_, &algo_.algo, workspace.get(), workspace.size(),
                      nullptr),
          "cublasLtMatmul");
  }

 private:
  void set(cublasLtMatmulDescAttributes_t attribute, const void* value, std::size_t size) {
    check(api_, api_.MatmulDescSetAttribute(desc_, attribute, value, size), "cublasLtMatmulDescSetAttribute");
  }
  void layout(cublasLtMatrixLayout_t& l, cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    check(api_, api_.MatrixLayoutCreate(&l, type, std::uint64_t(rows), std::uint64_t(cols), ld), "cublasLtMatrixLayoutCreate");
  }
  void release() {
    if (pref_) api_.MatmulPreferenceDestroy(pref_);
    for (cublasLtMatrixLayout_t l : {a_, b_, d_})
      if (l) api_.MatrixLayoutDestroy(l);
    if (desc_) api_.MatmulDescDestroy(desc_);
  }

  const Api& api_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t algo_{};
};

// "NVIDIA H100 80GB HBM3, sm_90, cuBLASLt 130000"
std::string where(const Api& api) {
  int device = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    cudaGetLastError();
    return fmt::format("cuBLASLt {}", api.GetVersion());
  }
  return fmt::format("{}, sm_{}{}, cuBLASLt {}", p.name, p.major, p.minor, api.GetVersion());
}

// An operand as cuBLASLt reads it: data [rows', k'/2] and swizzled scales, zero-padded to rows'
// = roundup(rows, 128) and k' = roundup(K, 64), so that every shape meets its alignment rules and
// the padding adds exact zeros (zero codes under zero scale bytes).
struct DeviceOperand {
  DeviceBuffer data, scale;
};

DeviceOperand upload(const GemmOperand& x, std::int64_t rows_padded, std::int64_t k_padded) {
  const std::int64_t rows = std::int64_t(x.data.shape(0)), half_k = std::int64_t(x.data.shape(1)), blocks = half_k / 8;
  std::vector<std::uint8_t> data(std::size_t(rows_padded * k_padded / 2), 0);
  for (std::int64_t r = 0; r < rows; ++r) std::memcpy(&data[std::size_t(r * k_padded / 2)], &x.data(r, 0), std::size_t(half_k));
  ByteMatrix compact = xt::zeros<std::uint8_t>({std::size_t(rows_padded), std::size_t(k_padded / 16)});
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < blocks; ++j) compact(r, j) = x.scale(r, j);
  const ByteMatrix swizzled = swizzle_scales(compact);
  DeviceOperand d{DeviceBuffer(data.size()), DeviceBuffer(swizzled.size())};
  d.data.upload(data.data(), nullptr);
  d.scale.upload(swizzled.data(), nullptr);
  return d;
}

State open() {
  State s;
  if (std::string why = no_device(); !why.empty()) {
    s.unavailable = why;
    return s;
  }
  if (std::string why = open_library(s.api); !why.empty()) {
    s.unavailable = why;
    return s;
  }
  if (const cublasStatus_t st = s.api.Create(&s.handle); st != CUBLAS_STATUS_SUCCESS) {
    s.unavailable = fmt::format("cuBLASLt cannot be used: cublasLtCreate returned {}", status_name(s.api, st));
    return s;
  }
  try {
    s.workspace = std::make_unique<DeviceBuffer>(kWorkspaceBytes);
    // The probe: one 128 x 128 x 128 product with F32 output, as every run asks for it.
    const GemmOperand zero{xt::zeros<std::uint8_t>({128, 64}), xt::zeros<std::uint8_t>({128, 8}), FloatVector{1.0f}};
    const DeviceOperand x = upload(zero, 128, 128), w = upload(zero, 128, 128);
    Plan plan(s.api, 128, 128, 128, CUDA_R_32F, x.scale.get(), w.scale.get());
    if (const cublasStatus_t st = plan.choose(s.handle); st != CUBLAS_STATUS_SUCCESS)
      s.unavailable = fmt::format(
          "{} ({}): cublasLtMatmulAlgoGetHeuristic returned {} for E2M1 operands with "
          "VEC16_UE4M3 scales",
          kNoBlockScaledGemm, where(s.api), status_name(s.api, st));
  } catch (const std::exception& e) {
    s.unavailable = fmt::format("cuBLASLt cannot be used: {}", e.what());
  }
  return s;
}

State& state() {
  static State s = open();
  return s;
}

}  // namespace

const std::optional<std::string>& nvfp4_gemm_unavailable() { return state().unavailable; }

io::Tensor nvfp4_gemm(const GemmOperand& a, const GemmOperand& b, float alpha, io::DType output, bool one_chain) {
  State& s = state();
  if (s.unavailable) throw cases::BackendUnavailable(*s.unavailable);
  const std::int64_t M = std::int64_t(a.data.shape(0)), N = std::int64_t(b.data.shape(0)), K = 2 * std::int64_t(a.data.shape(1));
  const std::size_t size = io::dtype_size(output);
  io::Tensor d{output, {M, N}, std::vector<std::uint8_t>(std::size_t(M * N) * size, 0)};
  if (M == 0 || N == 0) return d;
  if (K == 0) {  // no product to run: α·0 is +0, or NaN for an infinite or NaN α (§3.20.3)
    if (!std::isfinite(alpha))
      for (std::size_t i = 0; i < d.bytes.size(); i += size) {
        const std::uint32_t nan = output == io::DType::BF16 ? 0x7FFFu : 0x7FFFFFFFu;
        std::memcpy(&d.bytes[i], &nan, size);
      }
    return d;
  }
  const std::int64_t Mp = scale_rows(M), Np = scale_rows(N), Kp = round_up(K, 64);
  const DeviceOperand x = upload(a, Mp, Kp), w = upload(b, Np, Kp);
  DeviceBuffer out(std::size_t(Mp * Np) * size);
  Plan plan(s.api, Mp, Np, Kp, output == io::DType::BF16 ? CUDA_R_16BF : CUDA_R_32F, x.scale.get(), w.scale.get(), one_chain);
  if (const cublasStatus_t st = plan.choose(s.handle); st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("cublasLtMatmulAlgoGetHeuristic returned {} for M={} N={} K={} (padded {}x{}x{})",
                                         status_name(s.api, st), M, N, K, Mp, Np, Kp));
  plan.run(s.handle, alpha, x.data.get(), w.data.get(), out.get(), *s.workspace);
  const std::vector<std::uint8_t> host = out.download(nullptr);
  for (std::int64_t m = 0; m < M; ++m)
    std::memcpy(&d.bytes[std::size_t(m * N) * size], &host[std::size_t(m * Np) * size], std::size_t(N) * size);
  return d;
}

}  // namespace nvfp4::device::cublaslt
