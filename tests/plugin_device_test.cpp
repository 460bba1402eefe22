// The device plugin (device/plugin/, libnvfp4_device_plugin.so) through the plugin loader: it
// declares every operation the kernels run, and on fresh random cases of each its outcomes equal
// DeviceBackend's byte for byte (NaN payloads included) and the reference's bit for bit (NaN ==
// any NaN). Without a usable CUDA device the comparisons skip and say why.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/diff.h"
#include "device/backend/device_backend.h"
#include "external/plugin/plugin_backend.h"
#include "fuzz/case_generator.h"
#include "tests/support/gpu.h"

namespace nvfp4 {
namespace {

// Found from the test binary, so that it is found in build-gpu/ carried to the GPU machine too.
std::filesystem::path device_plugin_path() {
  return std::filesystem::canonical("/proc/self/exe").parent_path() / NVFP4_DEVICE_PLUGIN_FROM_TESTS;
}

external::PluginBackend& plugin() {
  static const std::unique_ptr<external::PluginBackend> p = external::load_plugin(device_plugin_path());
  return *p;
}

device::DeviceBackend& gpu() {
  static device::DeviceBackend backend;
  return backend;
}

// "" when a and b hold the same tensors with the same bytes; else the first difference.
std::string bytewise_difference(const cases::TensorMap& a, const cases::TensorMap& b) {
  if (a.size() != b.size()) return fmt::format("{} tensors against {}", a.size(), b.size());
  for (const auto& [name, t] : a) {
    const auto it = b.find(name);
    if (it == b.end()) return fmt::format("'{}' is missing", name);
    if (t.dtype != it->second.dtype || t.shape != it->second.shape || t.bytes != it->second.bytes)
      return fmt::format("'{}' differs: {}", name, compare::describe(compare::diff_outputs({{name, t}}, {{name, it->second}})));
  }
  return "";
}

std::string rejection(const cases::Outcome& o) {
  return o.rejected ? fmt::format("rejected ({})", o.message) : fmt::format("ran ({} outputs)", o.outputs.size());
}

TEST(DevicePlugin, DeclaresEveryOperationTheKernelsRun) {
  std::vector<std::string> kernels;
  for (const device::DeviceRow& row : device::device_runners()) kernels.emplace_back(row.op);
  EXPECT_EQ(plugin().declaration()->operations(), kernels);
  for (const std::string& op : kernels) EXPECT_TRUE(plugin().declaration()->find(op)->params.empty()) << op;
}

TEST(DevicePlugin, IsUnavailableWithoutAGpu) {
  if (!gpu_unavailable_reason()) GTEST_SKIP() << "a CUDA device is usable here";
  cases::Case c = cases::make_case("amax_global");
  c.inputs["x"] = io::make_tensor(io::DType::F32, {0, 0}, {});
  try {
    plugin().run(c);
    ADD_FAILURE() << "the device plugin ran without a GPU";
  } catch (const cases::BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find(*gpu_unavailable_reason()), std::string::npos) << e.what();
  }
}

TEST(DevicePlugin, EqualsTheDeviceBackendAndTheReferenceOnFreshCasesOfEveryOperation) {
  REQUIRE_GPU();
  constexpr int kCasesPerOperation = 50;
  const std::uint64_t seed = (std::uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  cases::ReferenceBackend reference;
  int cases = 0;
  for (const device::DeviceRow& row : device::device_runners())
    for (int i = 0; i < kCasesPerOperation; ++i) {
      // Drawn as the campaign draws them, from a fresh seed; the size grows with i up to 98.
      const cases::CaseRecord r =
          fuzz::case_record({{std::string(row.op)}, {}, 256, {}})(rc::Random(seed + cases), 2 * i).value();
      const std::string what = fmt::format("{} (case {} from seed 0x{:x})", cases::case_label(r.c), cases, seed);
      ++cases;
      const cases::Outcome want = cases::run_outcome(gpu(), r.c);
      const cases::Outcome got = cases::run_outcome(plugin(), r.c);
      ASSERT_FALSE(got.fault) << what << ": " << got.message;
      EXPECT_EQ(got.rejected, want.rejected) << what << ": device " << rejection(want) << ", plugin " << rejection(got);
      EXPECT_EQ(got.code, want.code) << what << ": device " << rejection(want) << ", plugin " << rejection(got);
      EXPECT_EQ(bytewise_difference(want.outputs, got.outputs), "") << what;
      const cases::Outcome ref = cases::run_outcome(reference, r.c);
      EXPECT_EQ(got.code, ref.code) << what << ": reference " << rejection(ref) << ", plugin " << rejection(got);
      EXPECT_TRUE(compare::diff_outputs(ref.outputs, got.outputs).empty())
          << what << "\n"
          << compare::describe(compare::diff_outputs(ref.outputs, got.outputs));
    }
  RecordProperty("cases", cases);
}

}  // namespace
}  // namespace nvfp4
