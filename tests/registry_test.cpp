// The operation registry: every operation is complete in every layer that the CPU build has
// (reference, metamorphic relation, case generator, seed-corpus case, documentation row), its
// parameters are well declared, bad parameters get one clear error, and `ops --json` is the
// whole registry. (The device layer's rows are checked in device_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "cases/seeds/seed_corpus.h"
#include "fuzz/op_generators.h"
#include "reference/error.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::run_cli;
using test_support::slurp_text;

// The message of the nvfp4::Error that f throws ("" when it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Registry, EveryOperationHasEveryPart) {
  std::set<std::string> seeded;
  for (const cases::CaseRecord& r : cases::seed_corpus()) seeded.insert(r.c.op);
  const std::string docs = slurp_text(fs::path(NVFP4_SOURCE_DIR) / "docs" / "spec" / "operations.md");
  ASSERT_FALSE(cases::operations().empty());
  for (const cases::OperationSpec& op : cases::operations()) {
    SCOPED_TRACE(std::string(op.name));
    EXPECT_FALSE(op.family.empty());
    EXPECT_FALSE(op.summary.empty());
    EXPECT_FALSE(op.section.empty()) << "where docs/NUMERICS.md specifies it";
    EXPECT_FALSE(op.inputs.empty());
    EXPECT_FALSE(op.outputs.empty());
    EXPECT_NE(op.reference, nullptr) << "no reference function";
    EXPECT_NE(op.metamorphic, nullptr) << "no metamorphic relation";
    EXPECT_FALSE(op.relation.empty()) << "the metamorphic relation is not described";
    EXPECT_NE(fuzz::find_generator(op.name), nullptr) << "no case generator in fuzz/op_generators.cpp";
    EXPECT_TRUE(seeded.count(std::string(op.name))) << "no seed-corpus case (cases/seeds/)";
    EXPECT_NE(docs.find("| `" + std::string(op.name) + "` |"), std::string::npos) << "no row in docs/spec/operations.md";
    for (const cases::TensorSpec& t : op.inputs)  // what a case file's tensors are checked against when read
      EXPECT_FALSE(t.ranks.empty() || t.dtypes.empty()) << "input " << t.name << " declares no rank or no dtype";
  }
  for (const fuzz::GeneratorRow& g : fuzz::op_generators())
    EXPECT_NE(cases::find_operation(g.op), nullptr) << "generator for an operation the registry lacks: " << g.op;
}

TEST(Registry, NamesAreUniqueAndParametersWellDeclared) {
  std::set<std::string_view> names;
  for (const cases::OperationSpec& op : cases::operations()) {
    SCOPED_TRACE(std::string(op.name));
    EXPECT_TRUE(names.insert(op.name).second) << "duplicate operation name";
    std::set<std::string_view> params;
    for (const cases::ParamSpec& p : op.params) {
      SCOPED_TRACE(std::string(p.name));
      EXPECT_TRUE(params.insert(p.name).second) << "duplicate parameter";
      EXPECT_FALSE(p.doc.empty());
      if (p.type == cases::ParamType::kEnum) {
        ASSERT_FALSE(p.allowed.empty());
        EXPECT_NE(std::find(p.allowed.begin(), p.allowed.end(), std::get<std::string>(p.default_value)), p.allowed.end());
      }
      // The default survives JSON as the case file and ops --json write it.
      EXPECT_TRUE(cases::param_from_json(op, p, cases::param_to_json(p.default_value)) == p.default_value);
    }
    for (const cases::TensorSpec& t : op.inputs)
      EXPECT_EQ(op.param(t.name), nullptr) << "parameter and input tensor share the name " << t.name
                                           << ": keyword interfaces (the Python package) could not tell them apart";
    const cases::Case c = cases::make_case(op.name);
    EXPECT_NO_THROW(cases::validate_params(c)) << "the defaults are valid";
  }
}

TEST(Registry, BadParametersGetOneErrorNamingOperationParameterAndAllowedValues) {
  cases::Case c = cases::make_case("quantize");
  c.params.set("block", std::string("3d"));
  EXPECT_EQ(error_of([&] { cases::validate_params(c); }), "quantize: E_UNSUPPORTED: parameter 'block' is '3d'; allowed: 1d, 2d");
  c = cases::make_case("quantize");
  c.params.set("row_scaled", std::string("yes"));
  EXPECT_EQ(error_of([&] { cases::validate_params(c); }), "quantize: E_UNSUPPORTED: parameter 'row_scaled' must be of type bool");
  c = cases::make_case("swizzle");
  c.params.set("profile", std::string("te"));
  EXPECT_EQ(error_of([&] { cases::validate_params(c); }),
            "swizzle: E_UNSUPPORTED: no parameter 'profile' (its parameters: none)");
  c = cases::make_case("transpose_scales_2d");
  c.params.erase("K");
  EXPECT_EQ(error_of([&] { cases::validate_params(c); }), "transpose_scales_2d: E_UNSUPPORTED: parameter 'K' is missing");
  c = cases::make_case("dequantize");
  c.inputs["data"] = io::make_tensor(io::DType::U8, {16, 8}, std::vector<std::uint8_t>(128));
  EXPECT_EQ(error_of([&] { cases::validate_case(c); }),
            "dequantize: E_UNSUPPORTED: missing input: no tensor 'scale' (inputs: data, scale, amax)");
  // The backends check the same before they run anything.
  c = cases::make_case("quantize");
  c.params.set("direction", std::string("diagonal"));
  EXPECT_EQ(error_of([&] { cases::ReferenceBackend().run(c); }),
            "quantize: E_UNSUPPORTED: parameter 'direction' is 'diagonal'; allowed: rowwise, columnwise, both");
  EXPECT_NE(error_of([] { cases::make_case("frobnicate"); }).find("unknown operation (known: quantize, dequantize"),
            std::string::npos);
}

TEST(Registry, CaseLabelsShowTheParametersThatDifferFromTheirDefaults) {
  cases::Case c = cases::make_case("quantize");
  c.inputs["x"] = io::make_tensor(io::DType::BF16, {48, 80}, std::vector<std::uint8_t>(48 * 80 * 2));
  c.params.set("block", std::string("2d"));
  c.params.set("amax", cases::F32Bits{0x40C00000u});
  EXPECT_EQ(cases::case_label(c), "quantize te 48x80 BF16 block=2d amax=0x40C00000");
  cases::Case t = cases::make_case("transpose_packed");
  t.inputs["data"] = io::make_tensor(io::DType::U8, {2, 8}, std::vector<std::uint8_t>(16));
  EXPECT_EQ(cases::case_label(t), "transpose_packed 2x8 U8");
}

using OpsCommand = test_support::TempDirTest;

TEST_F(OpsCommand, ListsOneLinePerOperation) {
  const auto r = run_cli("ops", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::size_t(std::count(r.out.begin(), r.out.end(), '\n')), cases::operations().size());
  for (const cases::OperationSpec& op : cases::operations())
    EXPECT_NE(r.out.find(std::string(op.name) + " "), std::string::npos) << op.name;
}

TEST_F(OpsCommand, JsonIsTheWholeRegistry) {
  const auto r = run_cli("ops --json", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("registry_format"), 1);
  EXPECT_EQ(j.at("case_format"), 2);
  EXPECT_EQ(j.at("tool_version"), NVFP4_VERSION);
  const json& ops = j.at("operations");
  ASSERT_EQ(ops.size(), cases::operations().size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const cases::OperationSpec& op = cases::operations()[i];
    SCOPED_TRACE(std::string(op.name));
    EXPECT_EQ(ops[i].at("name"), op.name);
    EXPECT_EQ(ops[i].at("params").size(), op.params.size());
    for (std::size_t k = 0; k < op.params.size(); ++k) {
      const json& p = ops[i].at("params")[k];
      EXPECT_EQ(p.at("name"), op.params[k].name);
      EXPECT_EQ(p.at("type"), cases::param_type_name(op.params[k].type));
      EXPECT_TRUE(cases::param_from_json(op, op.params[k], p.at("default")) == op.params[k].default_value);
      if (op.params[k].type == cases::ParamType::kEnum) {
        EXPECT_EQ(p.at("allowed"), op.params[k].allowed);
      }
    }
    EXPECT_EQ(ops[i].at("inputs").size(), op.inputs.size());
    EXPECT_EQ(ops[i].at("outputs").size(), op.outputs.size());
    for (const json& t : ops[i].at("inputs")) {
      EXPECT_FALSE(t.at("dtypes").empty());
      EXPECT_FALSE(t.at("shape").get<std::string>().empty());
    }
    const json& device = ops[i].at("backends").at("device");
    EXPECT_EQ(device.at("runs"), op.no_device_reason.empty());
    EXPECT_TRUE(ops[i].at("backends").at("reference").at("runs"));
  }
  EXPECT_EQ(j.at("error_codes").size(), std::size_t(int(ErrorCode::E_UNSUPPORTED) + 1));
}

TEST_F(OpsCommand, MarkdownIsTheCommittedDocsOperationsTable) {
  const auto r = run_cli("ops --markdown", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, slurp_text(fs::path(NVFP4_SOURCE_DIR) / "docs" / "spec" / "operations.md"))
      << "docs/spec/operations.md is stale: regenerate it with `nvfp4-verify ops --markdown > docs/spec/operations.md`";
}

// The version, then the revision this test reads from git itself, then the CUDA architectures.
TEST_F(OpsCommand, VersionPrintsTheProjectVersionRevisionAndArchitectures) {
  const auto r = run_cli("--version", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  const std::regex line(
      R"(nvfp4-verify ([0-9.]+) \((git ([0-9a-f]{12})(-dirty)?|release), (CUDA (sm_[0-9]+[af]?)( sm_[0-9]+[af]?)*|built without CUDA)\)\n)");
  ASSERT_TRUE(std::regex_match(r.out, m, line)) << r.out;
  EXPECT_EQ(m[1], NVFP4_VERSION);
  EXPECT_EQ(m[5] != "built without CUDA", bool(NVFP4_TESTS_HAVE_CUDA)) << r.out;
  const std::string git = std::string("git -C '") + NVFP4_SOURCE_DIR + "' rev-parse --short=12 HEAD 2>/dev/null";
  std::string head(64, '\0');
  FILE* p = popen(git.c_str(), "r");
  ASSERT_NE(p, nullptr);
  head.resize(std::fread(head.data(), 1, head.size(), p));
  if (pclose(p) != 0) GTEST_SKIP() << "the source tree is not a git checkout: " << r.out;
  EXPECT_EQ(m[3].str() + "\n", head) << r.out << "(a CLI built at another commit than HEAD: rebuild)";
}

}  // namespace
}  // namespace nvfp4
