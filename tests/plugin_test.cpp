// The plugin ABI's loader (external/plugin/plugin_backend.h): the example plugin (examples/plugin/)
// equals the reference inside its declaration on fresh random inputs, and a fixture plugin
// (tests/plugin_fixture.cpp) shows every way a plugin can fail to load or to answer becoming a
// clear error of the right kind.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/diff.h"
#include "external/plugin/plugin_backend.h"
#include "fuzz/case_generator.h"
#include "fuzz/generators.h"
#include "io/tensor_convert.h"
#include "tests/support/temp_dir.h"

namespace nvfp4::external {
namespace {

using ::testing::HasSubstr;

PluginBackend& example() {
  static const std::unique_ptr<PluginBackend> plugin = load_plugin(NVFP4_EXAMPLE_PLUGIN);
  return *plugin;
}

PluginBackend& fixture() {
  static const std::unique_ptr<PluginBackend> plugin = load_plugin(NVFP4_FIXTURE_PLUGIN);
  return *plugin;
}

cases::Case amax_case(const std::string& profile, io::Tensor x) {
  cases::Case c = cases::make_case("amax_global");
  c.params.set("profile", profile);
  c.inputs["x"] = std::move(x);
  return c;
}

io::Tensor f32(const FloatMatrix& m) { return io::from_float_matrix(m, io::FloatType::F32); }

// The message of what f throws, which must be an E.
template <class E>
std::string thrown(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return fmt::format("wrong exception type: {}", e.what());
  }
  return "nothing thrown";
}

// ---- the example plugin against the reference ----

TEST(ExamplePlugin, DeclaresAmaxGlobalOfF32UnderTe) {
  const cases::Declaration& d = *example().declaration();
  EXPECT_EQ(d.operations(), std::vector<std::string>{"amax_global"});
  ASSERT_NE(d.allowed("amax_global", "profile"), nullptr);
  EXPECT_EQ(*d.allowed("amax_global", "profile"), std::vector<cases::ParamValue>{std::string("te")});
  EXPECT_EQ(d.find("amax_global")->dtypes, std::vector<io::DType>{io::DType::F32});
  EXPECT_EQ(example().worker_name(), "example amax_global (C)");
}

// Cases drawn as a campaign draws them for this plugin (inside its declaration): the plugin's
// outputs equal the reference's bit for bit.
RC_GTEST_PROP(ExamplePluginProperty, EqualsTheReferenceOnGeneratedCases, ()) {
  const cases::CaseRecord r = *fuzz::case_record({{}, {}, 256, {example().declaration()}});
  RC_ASSERT(example().declaration()->outside(r.c).empty());
  const std::vector<compare::TensorDiff> d = compare::diff_outputs(cases::ReferenceBackend().run(r.c), example().run(r.c));
  RC_ASSERT(d.empty());
}

TEST(ExamplePlugin, EqualsTheReferenceOnAnyShapeAndSpecialValues) {
  const fuzz::Shape shapes[] = {{0, 0}, {0, 5}, {5, 0}, {1, 1}, {3, 7}, {17, 33}, {1, 1000}, {130, 3}};
  for (const fuzz::Shape s : shapes)
    for (const fuzz::Dist dist : {fuzz::Dist::kSpecials, fuzz::Dist::kBlockLogUniform, fuzz::Dist::kRandn}) {
      const std::uint32_t seed = std::random_device{}();
      const cases::Case c = amax_case("te", f32(fuzz::fill_data(s, dist, seed)));
      const std::vector<compare::TensorDiff> d = compare::diff_outputs(cases::ReferenceBackend().run(c), example().run(c));
      EXPECT_TRUE(d.empty()) << s << " " << dist << " seed=0x" << std::hex << seed << "\n" << compare::describe(d);
    }
}

TEST(ExamplePlugin, IgnoresNanAndGivesPlusZeroForNoOtherElement) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const FloatMatrix rows[] = {{{nan, -0.0f}}, {{nan, -3.5f, nan}}, {{-inf, nan}}};
  for (const FloatMatrix& m : rows) {
    const cases::Case c = amax_case("te", f32(m));
    const std::vector<compare::TensorDiff> d = compare::diff_outputs(cases::ReferenceBackend().run(c), example().run(c));
    EXPECT_TRUE(d.empty()) << "row " << &m - rows << "\n" << compare::describe(d);
  }
}

TEST(ExamplePlugin, RejectsANonMatrixWithTheReferencesCode) {
  const std::vector<float> values(8, 1.0f);
  for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{8}, std::vector<std::int64_t>{2, 2, 2}}) {
    const cases::Case c = amax_case("te", io::make_tensor_from<float>(io::DType::F32, shape, std::span<const float>(values)));
    EXPECT_THAT(thrown<Error>([&] { cases::ReferenceBackend().run(c); }), HasSubstr("amax_global: E_RANK: "));
    EXPECT_EQ(thrown<Error>([&] { example().run(c); }), "amax_global: E_RANK: x must be a matrix");
  }
}

// ---- loading ----

TEST(PluginLoader, MissingFileIsUnavailableNamingIt) {
  EXPECT_EQ(thrown<cases::BackendUnavailable>([] { load_plugin("/no/such/dir/libmine.so"); }),
            "plugin /no/such/dir/libmine.so: no such file");
}

TEST(PluginLoader, AFileThatIsNoSharedLibraryIsUnavailableWithDlopensReason) {
  const test_support::TempDir tmp;
  const std::filesystem::path path = tmp.path() / "not-a-library.so";
  std::ofstream(path) << "not an ELF file\n";
  const std::string what = thrown<cases::BackendUnavailable>([&] { load_plugin(path); });
  EXPECT_THAT(what, HasSubstr("plugin " + path.string() + ": cannot be loaded: "));
  EXPECT_THAT(what, HasSubstr("not-a-library.so"));  // dlerror names the file and says why
}

TEST(PluginLoader, ASharedLibraryWithoutTheEntryPointsIsUnavailable) {
  Dl_info info{};  // libstdc++.so: a real shared library that is no plugin
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&std::terminate), &info), 0);
  const std::string what = thrown<cases::BackendUnavailable>([&] { load_plugin(info.dli_fname); });
  EXPECT_THAT(what, HasSubstr(fmt::format("plugin {}: not an nvfp4-verify plugin: it has no entry point "
                                          "nvfp4_plugin_abi_version",
                                          info.dli_fname)));
}

TEST(PluginLoader, AnotherAbiVersionIsUnavailableNamingBothVersions) {
  EXPECT_EQ(thrown<cases::BackendUnavailable>([] { load_plugin(NVFP4_FIXTURE_ABI999_PLUGIN); }),
            fmt::format("plugin {}: it implements plugin ABI version 999; this nvfp4-verify loads version 1",
                        NVFP4_FIXTURE_ABI999_PLUGIN));
}

// ---- answers ----

TEST(PluginRun, ARejectionWithACodeIsAnErrorWithThatCode) {
  const cases::Case c = amax_case("te-2.13", f32(xt::ones<float>({2, 2})));
  try {
    fixture().run(c);
    ADD_FAILURE() << "no rejection";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::E_DIM16_K);
    EXPECT_STREQ(e.what(), "amax_global: E_DIM16_K: K=100 is not a multiple of 16");
  }
}

TEST(PluginRun, ARejectionWithoutACodeIsUncoded) {
  EXPECT_EQ(thrown<cases::UncodedRejection>([] {
              fixture().run(amax_case("te", f32(xt::ones<float>({2, 2}))));
            }),
            "amax_global: rejected without a code");
}

TEST(PluginRun, FaultsAndUnavailabilityKeepTheirKindAndMessage) {
  const auto fault = [](const std::string& profile) -> std::string {
    try {
      fixture().run(amax_case(profile, f32(xt::ones<float>({2, 2}))));
    } catch (const cases::BackendFault& e) {
      return fmt::format("{}: {}", cases::fault_kind_name(e.kind()), e.what());
    }
    return "no fault";
  };
  EXPECT_EQ(fault("te-pyref"), "crash: plugin loader fixture: failed: the kernel faulted");
  EXPECT_EQ(fault("te-2.13-1d"),
            "protocol: plugin loader fixture: rejected the case with unknown error code "
            "'E_NO_SUCH_CODE': a code outside the contract");
  EXPECT_EQ(fault("torchao-1lvl"),
            "protocol: plugin loader fixture: nvfp4_plugin_run returned 7, which is no "
            "NVFP4_PLUGIN_* result");
  EXPECT_EQ(fault("mslk"),
            "protocol: plugin loader fixture: the plugin asked for a bad output: 'amax' has unknown "
            "dtype 'F33'");
  EXPECT_EQ(thrown<cases::BackendUnavailable>([] {
              fixture().run(amax_case("torchao", f32(xt::ones<float>({2, 2}))));
            }),
            "plugin loader fixture: cannot run: no device here");
}

// Output buffers come poisoned: a plugin that leaves its output unwritten fails the comparison.
TEST(PluginRun, AnUnwrittenOutputKeepsThePoisonAndDiffersFromTheReference) {
  const cases::Case c = amax_case("modelopt", f32(xt::ones<float>({2, 2})));
  const cases::TensorMap got = fixture().run(c);
  ASSERT_EQ(got.count("amax"), 1u);
  EXPECT_EQ(got.at("amax").dtype, io::DType::F32);
  EXPECT_EQ(got.at("amax").shape, std::vector<std::int64_t>{1});
  EXPECT_EQ(got.at("amax").bytes, std::vector<std::uint8_t>(4, 0xA5));
  EXPECT_EQ(compare::diff_outputs(cases::ReferenceBackend().run(c), got).size(), 1u);
}

TEST(PluginRun, CustomKnobsAreUnsupported) {
  cases::Case c = amax_case("te", f32(xt::ones<float>({2, 2})));
  c.knobs = cases::case_profile(c);
  EXPECT_THAT(thrown<Error>([&] { example().run(c); }),
              HasSubstr("amax_global: E_UNSUPPORTED: a plugin runs named profiles only"));
}

}  // namespace
}  // namespace nvfp4::external
