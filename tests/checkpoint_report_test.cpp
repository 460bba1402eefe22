// check-checkpoint --report DIR (docs/guides/checkpoints.md#commands) on a tiny Hugging Face model generated
// here and converted with convert-checkpoint: a clean checkpoint's index lists every tensor as a
// match, a faulty one's names the faulty tensor and links its page, which carries the explanation.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "tests/support/bf16_weights.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using test_support::random_bf16;
using test_support::run_cli;
using test_support::slurp_text;

constexpr std::int64_t kHidden = 64;

void write_json(const fs::path& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(2); }

// One Llama-like layer (7 quantized linears), one shard.
const std::vector<std::pair<std::string, std::vector<std::int64_t>>> kSpecs = {
    {"model.embed_tokens.weight", {64, kHidden}},
    {"model.layers.0.input_layernorm.weight", {kHidden}},
    {"model.layers.0.self_attn.q_proj.weight", {64, kHidden}},
    {"model.layers.0.self_attn.k_proj.weight", {32, kHidden}},
    {"model.layers.0.self_attn.v_proj.weight", {32, kHidden}},
    {"model.layers.0.self_attn.o_proj.weight", {kHidden, 64}},
    {"model.layers.0.mlp.gate_proj.weight", {128, kHidden}},
    {"model.layers.0.mlp.up_proj.weight", {128, kHidden}},
    {"model.layers.0.mlp.down_proj.weight", {kHidden, 128}},
    {"model.norm.weight", {kHidden}},
    {"lm_head.weight", {64, kHidden}},
};
const char* const kModules[] = {"model.layers.0.mlp.down_proj",    "model.layers.0.mlp.gate_proj",
                                "model.layers.0.mlp.up_proj",      "model.layers.0.self_attn.k_proj",
                                "model.layers.0.self_attn.o_proj", "model.layers.0.self_attn.q_proj",
                                "model.layers.0.self_attn.v_proj"};

class CheckpointReportTest : public test_support::TempDirTest {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "src");
    io::File f;
    nlohmann::json weight_map = nlohmann::json::object();
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < kSpecs.size(); ++i) {
      io::Tensor t = random_bf16(kSpecs[i].second, unsigned(2000 + i), 0.02f * float(1 + i % 5));
      total += t.bytes.size();
      f.tensors[kSpecs[i].first] = std::move(t);
      weight_map[kSpecs[i].first] = "model.safetensors";
    }
    io::write_file_atomic(dir_ / "src" / "model.safetensors", f);
    write_json(dir_ / "src" / "model.safetensors.index.json",
               {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}});
    write_json(dir_ / "src" / "config.json", {{"model_type", "llama"}, {"hidden_size", kHidden}});
    const auto r = run_cli(
        "convert-checkpoint --input " + (dir_ / "src").string() + " --output " + (dir_ / "q").string() + " --format modelopt",
        dir_);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  test_support::CliRun check(const std::string& extra = "") {
    return run_cli("check-checkpoint --source " + (dir_ / "src").string() + " --quantized " + (dir_ / "q").string() +
                       " --report " + (dir_ / "report").string() + extra,
                   dir_);
  }

  // Replaces tensors of the converted checkpoint (a fault injected after the fact).
  void replace(const std::map<std::string, io::Tensor>& tensors) {
    const nlohmann::json index = nlohmann::json::parse(std::ifstream(dir_ / "q" / "model.safetensors.index.json"));
    for (const auto& [name, t] : tensors) {
      const fs::path p = dir_ / "q" / index["weight_map"][name].get<std::string>();
      io::File f = io::read_file(p);
      ASSERT_TRUE(f.tensors.count(name)) << name;
      f.tensors[name] = t;
      io::write_file_atomic(p, f);
    }
  }
};

TEST_F(CheckpointReportTest, CleanCheckpointListsEveryTensorAsMatch) {
  const auto r = check();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("check-checkpoint: report written to " + (dir_ / "report" / "index.html").string()), std::string::npos)
      << r.out;
  const std::string index = slurp_text(dir_ / "report" / "index.html");
  EXPECT_NE(index.find("badge pass"), std::string::npos);
  EXPECT_NE(index.find("id=\"total-cases\">7<"), std::string::npos);
  EXPECT_NE(index.find("format: <b class=\"mono\">modelopt</b>"), std::string::npos) << index;
  EXPECT_NE(index.find("profile: <b class=\"mono\">modelopt</b>"), std::string::npos);
  EXPECT_NE(index.find((dir_ / "src").string()), std::string::npos);
  for (const char* m : kModules)
    EXPECT_NE(index.find(std::string("<tr><td class=\"mono\">") + m + "</td><td>match</td>"), std::string::npos) << m;
  EXPECT_EQ(index.find("MISMATCH"), std::string::npos);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_ / "report")) ++files;
  EXPECT_EQ(files, 1u);                               // index.html only, no temporary left
  for (const auto& e : fs::directory_iterator(dir_))  // nor beside the report
    EXPECT_EQ(e.path().filename().string().find("tmp"), std::string::npos) << e.path();

  // --identify writes the report too, naming the profiles each tensor matches under.
  const auto i = check(" --identify");
  EXPECT_EQ(i.exit_code, 0) << i.out << i.err;
  EXPECT_NE(slurp_text(dir_ / "report" / "index.html").find("every tensor matches under modelopt"), std::string::npos);
}

TEST_F(CheckpointReportTest, FaultyTensorHasAPageWithTheExplanation) {
  // down_proj with the nibbles of its data bytes swapped (a byte-order bug).
  const std::string down = "model.layers.0.mlp.down_proj";
  io::Tensor data = io::read_file(dir_ / "q" / "model.safetensors").tensors.at(down + ".weight");
  for (std::uint8_t& b : data.bytes) b = std::uint8_t((b << 4) | (b >> 4));
  replace({{down + ".weight", data}});

  const auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string index = slurp_text(dir_ / "report" / "index.html");
  EXPECT_NE(index.find("badge fail"), std::string::npos);
  EXPECT_NE(index.find("id=\"failed-cases\">1<"), std::string::npos) << index;
  EXPECT_NE(index.find("<a href=\"" + down + ".html\">" + down + "</a>"), std::string::npos) << index;
  EXPECT_NE(index.find("nibble order x "), std::string::npos) << index;  // the classification
  for (const char* m : kModules) {
    if (m != down) {
      EXPECT_NE(index.find(std::string("<tr><td class=\"mono\">") + m + "</td><td>match</td>"), std::string::npos) << m;
    }
  }

  const std::string page = slurp_text(dir_ / "report" / (down + ".html"));
  ASSERT_FALSE(page.empty());
  // The explanation's verdict names the byte-order bug, and the console says so under the tensor's line.
  EXPECT_NE(page.find("id=\"verdict\">nibble-order-swapped: "), std::string::npos) << page.substr(0, 4000);
  EXPECT_NE(r.out.find(down + ": MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  verdict: nibble-order-swapped: "), std::string::npos) << r.out;
  EXPECT_NE(page.find("nibble order"), std::string::npos);
  EXPECT_NE(page.find("check-checkpoint --source"), std::string::npos);  // the replay line
  EXPECT_NE(page.find("<svg"), std::string::npos);                       // the block map
}

}  // namespace
}  // namespace nvfp4
