// convert-checkpoint and check-checkpoint (docs/guides/checkpoints.md#commands) on tiny Hugging Face
// models generated here (BF16, real names, two shards and an index): a conversion to formats A and
// B checks clean, each known fault injected into a converted checkpoint is named with its tensor,
// and bad input, existing output and thread counts are handled. Formats C (miles) and the BMM
// experts are in checkpoint_miles_test.cpp and checkpoint_bmm_test.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "reference/half_float.h"
#include "tests/support/checkpoint_fixture.h"
#include "tests/support/cli_runner.h"
#include "tests/support/xml_dom.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using test_support::amax_of;
using test_support::CheckpointTest;
using test_support::f32_of;
using test_support::kHidden;
using test_support::llama4_specs;
using test_support::model_specs;
using test_support::read_json;
using test_support::run_cli;
using test_support::write_json;
using test_support::write_model;

TEST_F(CheckpointTest, DenseConversionChecksCleanAndWritesFormatA) {
  const fs::path q = converted(false);
  const auto r = check();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("14 of 14 tensors match, every one bit for bit"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos);

  // weight_scale_2 of q_proj is RN(g * RN(1/2688)) with g the max over q, k and v (docs/guides/checkpoints.md
  // sections 2.2, 2.6).
  const std::string a = "model.layers.0.self_attn.";
  const float g = std::max(
      {amax_of(source(a + "q_proj.weight")), amax_of(source(a + "k_proj.weight")), amax_of(source(a + "v_proj.weight"))});
  for (const char* m : {"q_proj", "k_proj", "v_proj"}) {
    const io::Tensor ws2 = stored(a + m + ".weight_scale_2");
    EXPECT_EQ(ws2.dtype, io::DType::F32);
    EXPECT_TRUE(ws2.shape.empty());
    float v;
    std::memcpy(&v, ws2.bytes.data(), 4);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(v), std::bit_cast<std::uint32_t>(g * (1.0f / 2688.0f))) << m;
  }
  const io::Tensor data = stored(a + "k_proj.weight"), scale = stored(a + "k_proj.weight_scale");
  EXPECT_EQ(data.dtype, io::DType::U8);
  EXPECT_EQ(data.shape, (std::vector<std::int64_t>{32, 32}));
  EXPECT_EQ(scale.dtype, io::DType::F8_E4M3);
  EXPECT_EQ(scale.shape, (std::vector<std::int64_t>{32, 4}));
  EXPECT_EQ(stored("lm_head.weight").dtype, io::DType::BF16);

  const nlohmann::json hf = read_json(q / "hf_quant_config.json"), config = read_json(q / "config.json");
  EXPECT_EQ(hf["producer"]["name"], "nvfp4-verify");
  EXPECT_EQ(hf["quantization"]["quant_algo"], "NVFP4");
  EXPECT_EQ(hf["quantization"]["group_size"], 16);
  EXPECT_EQ(hf["quantization"]["exclude_modules"], nlohmann::json({"lm_head"}));
  EXPECT_EQ(config["quantization_config"]["quant_method"], "modelopt");
  EXPECT_EQ(config["hidden_size"], kHidden);
  EXPECT_TRUE(fs::exists(q / "tokenizer.json"));
  const nlohmann::json index = read_json(q / "model.safetensors.index.json");
  EXPECT_TRUE(index["weight_map"].contains(a + "q_proj.weight_scale_2"));
  EXPECT_FALSE(index["weight_map"].contains(a + "q_proj.input_scale"));  // needs activation calibration
  std::uint64_t total = 0;
  for (const auto& [name, file] : index["weight_map"].items()) total += stored(name).bytes.size();
  EXPECT_EQ(index["metadata"]["total_size"], total);
}

TEST_F(CheckpointTest, MoeConversionChecksCleanAndIdentifiesModelopt) {
  converted(true);
  auto r = check();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("32 of 32 tensors match"), std::string::npos) << r.out;
  // gate and up of one expert share one global scale, experts have their own.
  const std::string x = "model.layers.0.mlp.experts.";
  EXPECT_EQ(stored(x + "0.gate_proj.weight_scale_2").bytes, stored(x + "0.up_proj.weight_scale_2").bytes);
  EXPECT_NE(stored(x + "0.gate_proj.weight_scale_2").bytes, stored(x + "1.gate_proj.weight_scale_2").bytes);
  EXPECT_EQ(read_json(dir_ / "q" / "hf_quant_config.json")["quantization"]["exclude_modules"],
            nlohmann::json({"lm_head", "model.layers.0.mlp.gate", "model.layers.1.mlp.gate"}));

  r = check(" --identify --junit " + (dir_ / "junit.xml").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("identify: every tensor matches under modelopt\n"), std::string::npos) << r.out;
  EXPECT_NE(test_support::slurp_text(dir_ / "junit.xml").find("tests=\"32\" failures=\"0\""), std::string::npos);
}

TEST_F(CheckpointTest, ExcludedModulesStayBf16AndAreListed) {
  converted(false, " --exclude '*.o_proj'");
  EXPECT_EQ(stored("model.layers.1.self_attn.o_proj.weight").dtype, io::DType::BF16);
  const auto excluded = read_json(dir_ / "q" / "hf_quant_config.json")["quantization"]["exclude_modules"];
  EXPECT_EQ(excluded, nlohmann::json({"lm_head", "model.layers.0.self_attn.o_proj", "model.layers.1.self_attn.o_proj"}));
  const auto r = check();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("12 of 12 tensors match"), std::string::npos) << r.out;
}

TEST_F(CheckpointTest, GateAndUpWithSeparateAmaxesAreNamed) {
  converted(false);
  const std::string gate = "model.layers.0.mlp.gate_proj", up = "model.layers.0.mlp.up_proj";
  const float ga = amax_of(source(gate + ".weight")), ua = amax_of(source(up + ".weight"));
  ASSERT_NE(ga, ua);
  const std::string smaller = ga < ua ? gate : up, peer = ga < ua ? up : gate;
  const auto q = quantize(smaller, "modelopt", std::min(ga, ua));
  replace({{smaller + ".weight", q.data}, {smaller + ".weight_scale", q.scale}, {smaller + ".weight_scale_2", *q.global_scale}});
  const auto r = check(" --junit " + (dir_ / "junit.xml").string());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(smaller + ": MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("separate amax (not shared with " + peer + ")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(peer + ": match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("13 of 14 tensors match"), std::string::npos) << r.out;
  const std::string junit = test_support::slurp_text(dir_ / "junit.xml");
  EXPECT_NE(junit.find("tests=\"14\" failures=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<testcase classname=\"check-checkpoint\" name=\"" + smaller + "\"><failure"), std::string::npos) << junit;
}

TEST_F(CheckpointTest, TheJunitFileReadsBackWithEveryModulesVerdictAsPrinted) {
  // One more module, named with every character markup escapes and one that XML forbids.
  const std::string odd = "model.layers.0.mlp.odd&<\"'>\x01_proj";
  auto specs = model_specs(false);
  specs.push_back({odd + ".weight", {64, kHidden}});
  write_model(dir_ / "src", specs);
  ASSERT_EQ(run_cli("convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format modelopt", dir_)
                .exit_code,
            0);
  io::Tensor w = stored(odd + ".weight");
  w.bytes[0] ^= 0x11;
  replace({{odd + ".weight", w}});
  const auto r = check(" --junit " + (dir_ / "junit.xml").string());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;

  std::string error;
  const auto root = test_support::parse_xml(test_support::slurp_text(dir_ / "junit.xml"), error);
  ASSERT_TRUE(root) << error << "\n" << test_support::slurp_text(dir_ / "junit.xml");
  EXPECT_EQ(root->attr("name"), "nvfp4-verify check-checkpoint");
  const auto suites = root->all("testsuite");
  ASSERT_EQ(suites.size(), 1u);
  EXPECT_EQ(suites[0]->attr("name"), "check-checkpoint (modelopt)");
  EXPECT_EQ(suites[0]->attr("failures"), "1");
  // A testcase per verdict line printed, in order, named by its module; a mismatch fails with
  // its line and the explanation's verdict printed under it.
  std::vector<std::string> lines, verdicts;
  std::istringstream out(r.out);
  for (std::string line; std::getline(out, line) && !line.starts_with("check-checkpoint: ");) {
    if (line.starts_with("  verdict: ")) {
      verdicts.back() = line.substr(11);
      continue;
    }
    const std::size_t x = line.find('\x01');
    lines.push_back(x == std::string::npos ? line : line.replace(x, 1, "\xEF\xBF\xBD"));  // U+FFFD
    verdicts.emplace_back();
  }
  const auto cases = suites[0]->all("testcase");
  ASSERT_EQ(cases.size(), lines.size()) << r.out;
  EXPECT_EQ(suites[0]->attr("tests"), std::to_string(lines.size()));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string& line = lines[i];
    EXPECT_EQ(cases[i]->attr("classname"), "check-checkpoint");
    EXPECT_EQ(cases[i]->attr("name"), line.substr(0, line.rfind(line.ends_with(": match") ? ": match" : ": MISMATCH")));
    const auto failure = cases[i]->all("failure");
    if (line.ends_with(": match")) {
      EXPECT_TRUE(failure.empty()) << line;
    } else {
      ASSERT_EQ(failure.size(), 1u) << line;
      ASSERT_FALSE(verdicts[i].empty()) << line;
      EXPECT_EQ(failure[0]->attr("message"), line + ". " + verdicts[i]);
    }
  }
  EXPECT_NE(r.out.find(odd + ": MISMATCH"), std::string::npos) << r.out;
}

TEST_F(CheckpointTest, ExpertScalesInTheNeighboursSlotAreNamed) {
  converted(true);
  const std::string x = "model.layers.0.mlp.experts.";
  replace({{x + "2.gate_proj.weight_scale", stored(x + "1.gate_proj.weight_scale")}});
  const auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(x + "2.gate_proj: MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weight_scale_2 matches): scales of expert 1\n"), std::string::npos) << r.out;
}

TEST_F(CheckpointTest, SwizzledScalesAreNamed) {
  converted(false);
  const std::string gate = "model.layers.0.mlp.gate_proj", up = "model.layers.0.mlp.up_proj";
  const float g = std::max(amax_of(source(gate + ".weight")), amax_of(source(up + ".weight")));
  const auto q = quantize(gate, "modelopt", g, true);  // [128, 4]: the padded shape is the linear one
  ASSERT_EQ(q.scale.shape, stored(gate + ".weight_scale").shape);
  replace({{gate + ".weight_scale", q.scale}});
  const auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(gate + ": MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scales swizzled where the format stores them linear"), std::string::npos) << r.out;
}

TEST_F(CheckpointTest, ReciprocalGlobalScaleIsNamed) {
  converted(false);
  const std::string o = "model.layers.1.self_attn.o_proj";
  io::Tensor ws2 = stored(o + ".weight_scale_2");
  float v;
  std::memcpy(&v, ws2.bytes.data(), 4);
  v = 1.0f / v;
  std::memcpy(ws2.bytes.data(), &v, 4);
  replace({{o + ".weight_scale_2", ws2}});
  const auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(o + ": MISMATCH (data: 0 of 2048 bytes differ; weight_scale: 0 of 256 bytes differ; "
                           "weight_scale_2 differs): global scale stored as its reciprocal"),
            std::string::npos)
      << r.out;
}

TEST_F(CheckpointTest, OneTensorUnderAnotherProfileIsNamed) {
  converted(false);
  const std::string down = "model.layers.1.mlp.down_proj";  // alone in its group: its own amax
  const auto q = quantize(down, "te", amax_of(source(down + ".weight")));
  replace({{down + ".weight", q.data}, {down + ".weight_scale", q.scale}});
  const auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(down + ": MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("another profile: te\n"), std::string::npos) << r.out;
  EXPECT_NE(check(" --identify").out.find("identify: no profile matches every tensor"), std::string::npos);
}

// Format B (docs/guides/checkpoints.md section 3): weight_packed, weight_scale, weight_global_scale = G as
// [1], no hf_quant_config.json, the compressed-tensors-bf16 profile; q/k/v share the largest amax.
TEST_F(CheckpointTest, CompressedTensorsDenseConversionChecksCleanAndWritesFormatB) {
  const fs::path q = converted(false, "", "compressed-tensors");
  const auto r = check();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("14 of 14 tensors match, every one bit for bit"), std::string::npos) << r.out;
  const std::string a = "model.layers.0.self_attn.";
  const float g = std::max(
      {amax_of(source(a + "q_proj.weight")), amax_of(source(a + "k_proj.weight")), amax_of(source(a + "v_proj.weight"))});
  // generate_gparam on the BF16 amax: 2688 / g as reciprocal * 2688, each step rounded to BF16
  const auto bf16 = [](float v) { return bf16_to_float(float_to_bf16(v)); };
  const float G = bf16(bf16(1.0f / g) * 2688.0f);
  for (const char* m : {"q_proj", "k_proj", "v_proj"}) {
    const io::Tensor gs = stored(a + m + ".weight_global_scale");
    EXPECT_EQ(gs.dtype, io::DType::F32);
    EXPECT_EQ(gs.shape, (std::vector<std::int64_t>{1}));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(f32_of(gs)), std::bit_cast<std::uint32_t>(G)) << m;
  }
  const io::Tensor data = stored(a + "k_proj.weight_packed"), scale = stored(a + "k_proj.weight_scale");
  EXPECT_EQ(data.dtype, io::DType::U8);
  EXPECT_EQ(data.shape, (std::vector<std::int64_t>{32, 32}));
  EXPECT_EQ(scale.dtype, io::DType::F8_E4M3);
  EXPECT_EQ(scale.shape, (std::vector<std::int64_t>{32, 4}));
  EXPECT_EQ(stored("lm_head.weight").dtype, io::DType::BF16);
  EXPECT_FALSE(fs::exists(q / "hf_quant_config.json"));
  const nlohmann::json qc = read_json(q / "config.json")["quantization_config"];
  EXPECT_EQ(qc["quant_method"], "compressed-tensors");
  EXPECT_EQ(qc["format"], "nvfp4-pack-quantized");
  EXPECT_EQ(qc["ignore"], nlohmann::json({"lm_head"}));
  EXPECT_EQ(qc["config_groups"]["group_0"]["weights"]["group_size"], 16);
  const nlohmann::json index = read_json(q / "model.safetensors.index.json");
  EXPECT_FALSE(index["weight_map"].contains(a + "q_proj.input_global_scale"));  // weights only (NVFP4A16)
  EXPECT_FALSE(index["weight_map"].contains(a + "q_proj.weight"));
}

TEST_F(CheckpointTest, CompressedTensorsMoeConversionIdentifiesItsProfileAndNamesAReciprocalGlobalScale) {
  converted(true, "", "compressed-tensors");
  auto r = check(" --identify");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("identify: every tensor matches under compressed-tensors-bf16, compressed-tensors-bf16-0.18\n"),
            std::string::npos)
      << r.out;
  const std::string x = "model.layers.0.mlp.experts.";
  EXPECT_EQ(stored(x + "0.gate_proj.weight_global_scale").bytes, stored(x + "0.up_proj.weight_global_scale").bytes);
  EXPECT_NE(stored(x + "0.gate_proj.weight_global_scale").bytes, stored(x + "1.gate_proj.weight_global_scale").bytes);
  // The fault: a global scale written as its reciprocal (the other formats' decode convention).
  const std::string down = x + "1.down_proj";
  io::Tensor gs = stored(down + ".weight_global_scale");
  const float inverted = 1.0f / f32_of(gs);
  std::memcpy(gs.bytes.data(), &inverted, 4);
  replace({{down + ".weight_global_scale", gs}});
  r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(down + ": MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weight_global_scale differs"), std::string::npos) << r.out;
}

// Format C (docs/guides/checkpoints.md section 4): MoE expert linears only, data and scales of te-pyref,
// weight_scale_2 = RN(1/S), input_scale = 1.0, gate/up sharing max(gate, up).
TEST_F(CheckpointTest, TruncatedShardIsBadInput) {
  const fs::path q = converted(false);
  const fs::path shard = q / "model-00002-of-00002.safetensors";
  fs::resize_file(shard, fs::file_size(shard) - 100);
  const auto r = check();
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("model-00002-of-00002.safetensors"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CheckpointTest, IndexNamingAMissingTensorIsBadInput) {
  const fs::path q = converted(false);
  nlohmann::json index = read_json(q / "model.safetensors.index.json");
  index["weight_map"]["model.layers.0.mlp.extra_proj.weight_scale"] = "model-00001-of-00002.safetensors";
  write_json(q / "model.safetensors.index.json", index);
  const auto r = check();
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("model.layers.0.mlp.extra_proj.weight_scale"), std::string::npos) << r.err;
}

TEST_F(CheckpointTest, ExistingOutputIsRefusedAndLeftAsItWas) {
  write_model(dir_ / "src", model_specs(false));
  fs::create_directories(dir_ / "q");
  write_json(dir_ / "q" / "mine.json", {{"keep", true}});
  const auto r =
      run_cli("convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format modelopt", dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "q"), fs::directory_iterator()), 1);
  EXPECT_EQ(read_json(dir_ / "q" / "mine.json")["keep"], true);
}

TEST_F(CheckpointTest, OutputWithATrailingSlashIsTheDirectoryItself) {
  write_model(dir_ / "src", model_specs(false));
  const auto r =
      run_cli("convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + "/ --format modelopt", dir_);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "q" / "hf_quant_config.json"));
  for (const fs::path& d : {dir_, dir_ / "q"})  // no temporary inside the output or beside it
    for (const auto& e : fs::directory_iterator(d))
      EXPECT_EQ(e.path().filename().string().find("tmp"), std::string::npos) << e.path();
}

TEST_F(CheckpointTest, UnsupportedFormatIsRefusedNamingTheSupportedOne) {
  write_model(dir_ / "src", model_specs(false));
  const auto r = run_cli("convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format gguf", dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("supported: modelopt, compressed-tensors, miles"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "q"));
}

TEST_F(CheckpointTest, AbandonedConversionLeavesNoOutput) {
  // The last linear of the second shard has K = 40, not a multiple of 16: the quantize pass
  // fails after the first shard was written.
  auto specs = model_specs(false);
  specs[specs.size() - 3].second = {kHidden, 40};
  ASSERT_EQ(specs[specs.size() - 3].first, "model.layers.1.mlp.down_proj.weight");
  write_model(dir_ / "src", specs);
  const auto r =
      run_cli("convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format modelopt", dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("model.layers.1.mlp.down_proj.weight"), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().rfind("q", 0), std::string::npos) << e.path();
}
// --threads N: the reference's threads over one tensor's rows; gate_up_proj of layer 0 is
// [4, 2048, 96] (786,432 elements: three threads' worth), and the outputs are the same bytes.
TEST_F(CheckpointTest, ConversionIsByteIdenticalForAnyThreadCount) {
  write_model(dir_ / "src", llama4_specs(2048), "llama4_text");
  ASSERT_EQ(convert_llama4("modelopt", " --threads 1", "llama4_text", "q1").exit_code, 0);
  const auto c = convert_llama4("modelopt", " --threads 3", "llama4_text", "q3");
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir_ / "q1")) files.insert(e.path().filename().string());
  std::set<std::string> files3;
  for (const auto& e : fs::directory_iterator(dir_ / "q3")) files3.insert(e.path().filename().string());
  EXPECT_EQ(files, files3);
  EXPECT_EQ(files.size(), 6u);  // two shards, index, config, hf_quant_config, tokenizer
  for (const std::string& f : files)
    EXPECT_EQ(test_support::slurp_text(dir_ / "q1" / f), test_support::slurp_text(dir_ / "q3" / f)) << f;
  const auto r = run_cli("check-checkpoint --threads 2 --source " + src() + " --quantized " + (dir_ / "q3").string(), dir_);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("18 of 18 tensors match"), std::string::npos) << r.out;
}

TEST_F(CheckpointTest, ThreadCountBelowOneIsRefused) {
  auto r = convert_llama4("modelopt", " --threads 0");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--threads 0: must be at least 1"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "q"));
  r = run_cli("check-checkpoint --threads -2 --source " + src() + " --quantized " + src(), dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--threads -2: must be at least 1"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace nvfp4
