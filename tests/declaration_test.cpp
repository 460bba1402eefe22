// The closed-world declaration (docs/spec/worker-protocol.md, protocol 2): a parameter a backend does
// not name accepts only its default, "*" accepts every value, and a worker written before a
// parameter existed (protocol 1) never receives a case that uses it.
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "cases/declaration.h"
#include "cases/registry.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

cases::Declaration quantize_declaration(const std::string& params) {
  return cases::Declaration::parse(json::parse(fmt::format(R"([{{"op": "quantize", "params": {{{}}}}}])", params)), "test");
}

// A quantize case with every parameter at its default but those set here.
cases::Case quantize_with(const std::string& name, cases::ParamValue v) {
  cases::Case c = cases::make_case("quantize");
  c.params.set(name, std::move(v));
  return c;
}

TEST(Declaration, AParameterItDoesNotNameAcceptsOnlyItsDefault) {
  const cases::Declaration d = quantize_declaration(R"("profile": ["te", "torchao"])");
  EXPECT_EQ(d.outside(cases::make_case("quantize")), "");
  EXPECT_EQ(d.outside(quantize_with("profile", std::string("torchao"))), "");
  EXPECT_EQ(d.outside(quantize_with("experts", true)), "experts=true is not declared");
  EXPECT_EQ(d.outside(quantize_with("amax", cases::F32Bits{0x40C00000u})), "amax=0x40C00000 is not declared");
  EXPECT_EQ(d.outside(quantize_with("block", std::string("2d"))), "block=2d is not declared");
  ASSERT_NE(d.allowed("quantize", "experts"), nullptr);
  EXPECT_EQ(*d.allowed("quantize", "experts"), std::vector<cases::ParamValue>{false});
}

TEST(Declaration, StarAcceptsEveryValueTheRegistryAllows) {
  const cases::Declaration d = quantize_declaration(R"("amax": "*", "block": "*")");
  EXPECT_EQ(d.allowed("quantize", "amax"), nullptr);
  EXPECT_EQ(d.outside(quantize_with("amax", cases::F32Bits{0x7FC00001u})), "");
  EXPECT_EQ(d.outside(quantize_with("block", std::string("2d"))), "");
  EXPECT_EQ(d.outside(quantize_with("experts", true)), "experts=true is not declared");
  EXPECT_EQ(d.to_json(), json::parse(R"([{"op": "quantize", "params": {"amax": "*", "block": "*"}}])"));
}

TEST(Declaration, HeldAtDefaultListsTheUnnamedParametersInRegistryOrder) {
  const cases::Declaration d = quantize_declaration(R"("rounding": ["nearest"], "profile": "*")");
  std::vector<std::string> held;
  for (const cases::ParamSpec* p : d.find("quantize")->held_at_default()) held.emplace_back(p->name);
  std::vector<std::string> expected;
  for (const cases::ParamSpec& p : cases::find_operation("quantize")->params)
    if (p.name != "rounding" && p.name != "profile") expected.emplace_back(p.name);
  EXPECT_EQ(held, expected);
  EXPECT_FALSE(held.empty());
}

TEST(Declaration, AValueOtherThanAListOrStarIsRefusedNamingIt) {
  for (const char* params : {R"("amax": "any")", R"("block": ["3d"])", R"("block": [])", R"("nonesuch": "*")"}) {
    try {
      quantize_declaration(params);
      ADD_FAILURE() << "accepted " << params;
    } catch (const cases::BackendUnavailable& e) {
      EXPECT_NE(std::string(e.what()).find("its declaration is invalid"), std::string::npos) << e.what();
    }
  }
}

std::string fake(const std::string& mode) { return std::string("'") + NVFP4_FAKE_WORKER + " " + mode + "'"; }

// The fake worker's v1 mode is an adapter written before quantize had `experts`: protocol 1, no
// mention of it, and 3-D inputs rejected with E_RANK. Under the open-world rule the campaign sent
// it expert weights (about one quantize case in ten) and failed; now it passes, and says on the
// console and on its summary page which space it covered.
TEST(Declaration, AnOldWorkerThatNeverNamedANewParameterPassesItsCampaign) {
  const test_support::TempDir tmp;
  const fs::path dir = tmp.path();
  const std::uint64_t seed = std::random_device{}();
  const auto fuzz = test_support::run_cli(
      fmt::format("fuzz --ops quantize --backends reference,worker --worker {} --cases 400 --seed {} --corpus {} --report {}",
                  fake("v1"), seed, (dir / "found").string(), (dir / "report").string()),
      dir);
  EXPECT_EQ(fuzz.exit_code, 0) << "seed " << seed << "\n" << fuzz.out << fuzz.err;
  EXPECT_NE(fuzz.out.find("fuzz: space: quantize: profile in [te]; block = \"1d\"; direction in [\"rowwise\", \"both\"]"),
            std::string::npos)
      << fuzz.out;
  EXPECT_NE(fuzz.out.find("experts = false"), std::string::npos) << fuzz.out;
  const std::string page = test_support::slurp_text(dir / "report" / "index.html");
  EXPECT_NE(page.find("space: <b class=\"mono\">quantize: profile in [te]"), std::string::npos) << page.substr(0, 4000);
  EXPECT_NE(page.find("experts = false"), std::string::npos);
}

TEST(Declaration, SelftestShowsTheProtocolAndWhatADeclarationLeavesAtItsDefaults) {
  const test_support::TempDir tmp;
  const fs::path dir = tmp.path();
  const auto v1 = test_support::run_cli("worker-selftest --worker " + fake("v1"), dir);
  EXPECT_EQ(v1.exit_code, 0) << v1.out << v1.err;
  EXPECT_NE(v1.out.find("PASS  handshake: protocol 1 (this harness speaks 2; a parameter the declaration does not name is held "
                        "at its default)"),
            std::string::npos)
      << v1.out;
  EXPECT_NE(v1.out.find("quantize: held at their defaults: amax=null, rounding=\"nearest\", seed=0, offset=0, rht=false, "
                        "rht_mask=55272, experts=false"),
            std::string::npos)
      << v1.out;
  EXPECT_NE(v1.out.find("quantize: newer parameters of the registry: rounding (at its default)"), std::string::npos) << v1.out;
  const auto v2 = test_support::run_cli("worker-selftest --worker " + fake("conform"), dir);
  EXPECT_EQ(v2.exit_code, 0) << v2.out << v2.err;
  EXPECT_NE(v2.out.find("quantize: newer parameters of the registry: rounding (named), seed (named), offset (named), rht (at its "
                        "default)"),
            std::string::npos)
      << v2.out;
}

}  // namespace
}  // namespace nvfp4
