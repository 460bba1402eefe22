// convert-checkpoint and check-checkpoint (docs/guides/checkpoints.md#commands) on tiny Hugging Face
// models generated here (BF16, real names, two shards and an index): a conversion checks clean,
// and each known fault injected into a converted checkpoint is named with its tensor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cfloat>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cases/reference_backend.h"
#include "checkpoint/format.h"
#include "checkpoint/weight_quantizer.h"
#include "io/safetensors.h"
#include "tests/support/bf16_weights.h"
#include "tests/support/cli_runner.h"
#include "tests/support/xml_dom.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using test_support::random_bf16;
using test_support::run_cli;

constexpr std::int64_t kHidden = 64, kVocab = 64, kHeadDim = 16;

float amax_of(const io::Tensor& t) {
  float a = 0;
  for (std::size_t i = 0; i < t.bytes.size(); i += 2) {
    std::uint16_t h;
    std::memcpy(&h, t.bytes.data() + i, 2);
    a = std::max(a, std::fabs(bf16_to_float(h)));
  }
  return a;
}

void write_json(const fs::path& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(2); }
nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(std::ifstream(p)); }

using TensorSpecs = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;

// The norms and attention projections of the layer whose names start with `p`.
void push_attention(TensorSpecs& s, const std::string& p) {
  s.push_back({p + "input_layernorm.weight", {kHidden}});
  s.push_back({p + "self_attn.q_proj.weight", {4 * kHeadDim, kHidden}});
  s.push_back({p + "self_attn.k_proj.weight", {2 * kHeadDim, kHidden}});
  s.push_back({p + "self_attn.v_proj.weight", {2 * kHeadDim, kHidden}});
  s.push_back({p + "self_attn.o_proj.weight", {kHidden, 4 * kHeadDim}});
  s.push_back({p + "post_attention_layernorm.weight", {kHidden}});
}

// (name, shape) of a Llama-like (dense) or Qwen3-MoE-like model of two layers, in file order.
std::vector<std::pair<std::string, std::vector<std::int64_t>>> model_specs(bool moe) {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> s = {{"model.embed_tokens.weight", {kVocab, kHidden}}};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    push_attention(s, p);
    if (moe) {
      s.push_back({p + "self_attn.q_norm.weight", {kHeadDim}});
      s.push_back({p + "self_attn.k_norm.weight", {kHeadDim}});
      s.push_back({p + "mlp.gate.weight", {4, kHidden}});
      for (int e = 0; e < 4; ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        s.push_back({x + "gate_proj.weight", {32, kHidden}});
        s.push_back({x + "up_proj.weight", {32, kHidden}});
        s.push_back({x + "down_proj.weight", {kHidden, 32}});
      }
    } else {
      s.push_back({p + "mlp.gate_proj.weight", {128, kHidden}});
      s.push_back({p + "mlp.up_proj.weight", {128, kHidden}});
      s.push_back({p + "mlp.down_proj.weight", {kHidden, 128}});
    }
  }
  s.push_back({"model.norm.weight", {kHidden}});
  s.push_back({"lm_head.weight", {kVocab, kHidden}});
  return s;
}

// A MoE model whose experts are fused 3-D tensors [E, N, K] (Llama-4 / GPT-OSS style, under the
// names miles selects): `mlp.experts.gate_up_proj.weight` [4, 64, H] and `down_proj.weight` [4, H, 32].
std::vector<std::pair<std::string, std::vector<std::int64_t>>> fused_moe_specs() {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> s = {{"model.embed_tokens.weight", {kVocab, kHidden}}};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    s.push_back({p + "input_layernorm.weight", {kHidden}});
    s.push_back({p + "self_attn.q_proj.weight", {4 * kHeadDim, kHidden}});
    s.push_back({p + "self_attn.o_proj.weight", {kHidden, 4 * kHeadDim}});
    s.push_back({p + "mlp.router.weight", {4, kHidden}});
    s.push_back({p + "mlp.experts.gate_up_proj.weight", {4, 64, kHidden}});
    s.push_back({p + "mlp.experts.down_proj.weight", {4, kHidden, 32}});
  }
  s.push_back({"lm_head.weight", {kVocab, kHidden}});
  return s;
}

// A Llama-4-style MoE model (Llama4TextExperts, docs/guides/checkpoints.md section 2.7): per layer the BMM
// expert parameters `feed_forward.experts.gate_up_proj` [E, in = H, out = 2I] and `down_proj`
// [E, in = I, out = H] (3-D, no ".weight"), a shared expert of 2-D linears and a router. E = 4,
// I = 48 (so that in != out); `gate_up_in` grows the first layer's gate_up_proj (for tensors that
// the reference splits over threads).
std::vector<std::pair<std::string, std::vector<std::int64_t>>> llama4_specs(std::int64_t gate_up_in = kHidden) {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> s = {{"model.embed_tokens.weight", {kVocab, kHidden}}};
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    push_attention(s, p);
    s.push_back({p + "feed_forward.router.weight", {4, kHidden}});
    s.push_back({p + "feed_forward.experts.gate_up_proj", {4, l == 0 ? gate_up_in : kHidden, 96}});
    s.push_back({p + "feed_forward.experts.down_proj", {4, 48, kHidden}});
    s.push_back({p + "feed_forward.shared_expert.gate_proj.weight", {48, kHidden}});
    s.push_back({p + "feed_forward.shared_expert.up_proj.weight", {48, kHidden}});
    s.push_back({p + "feed_forward.shared_expert.down_proj.weight", {kHidden, 48}});
  }
  s.push_back({"model.norm.weight", {kHidden}});
  s.push_back({"lm_head.weight", {kVocab, kHidden}});
  return s;
}

// Writes a model into `dir`: two shards, the index, config.json and a tokenizer file.
void write_model(const fs::path& dir, const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& specs,
                 const std::string& model_type = "llama") {
  fs::create_directories(dir);
  io::File shards[2];
  nlohmann::json weight_map = nlohmann::json::object();
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const int s = i < specs.size() / 2 ? 0 : 1;
    io::Tensor t = random_bf16(specs[i].second, unsigned(1000 + i), 0.02f * float(1 + i % 7));
    total += t.bytes.size();
    shards[s].tensors[specs[i].first] = std::move(t);
    weight_map[specs[i].first] = "model-0000" + std::to_string(s + 1) + "-of-00002.safetensors";
  }
  for (int s = 0; s < 2; ++s)
    io::write_file_atomic(dir / ("model-0000" + std::to_string(s + 1) + "-of-00002.safetensors"), shards[s]);
  write_json(dir / "model.safetensors.index.json", {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}});
  write_json(dir / "config.json", {{"model_type", model_type}, {"hidden_size", kHidden}});
  write_json(dir / "tokenizer.json", {{"version", "1.0"}});
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nvfp4_checkpoint_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A model of the kind asked for, converted to `format` (A unless told); returns the converted
  // directory.
  fs::path converted(bool moe, const std::string& extra = "", const std::string& format = "modelopt") {
    write_model(dir_ / "src", model_specs(moe));
    convert_out_ = run_cli(
        "convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format " + format + extra,
        dir_);
    EXPECT_EQ(convert_out_.exit_code, 0) << convert_out_.err;
    return dir_ / "q";
  }
  // The fused 3-D expert model converted to `format`.
  test_support::CliRun convert_fused(const std::string& format) {
    write_model(dir_ / "src", fused_moe_specs());
    return run_cli("convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format " + format,
                   dir_);
  }
  // The Llama-4-style model (model_type llama4_text unless told) converted to `format`, into `out`.
  test_support::CliRun convert_llama4(const std::string& format = "modelopt", const std::string& extra = "",
                                      const std::string& model_type = "llama4_text", const std::string& out = "q") {
    if (!fs::exists(dir_ / "src")) write_model(dir_ / "src", llama4_specs(), model_type);
    return run_cli("convert-checkpoint --input " + src() + " --output " + (dir_ / out).string() + " --format " + format +
                       extra,
                   dir_);
  }
  std::string src() const { return (dir_ / "src").string(); }
  test_support::CliRun check(const std::string& extra = "") {
    return run_cli("check-checkpoint --source " + src() + " --quantized " + (dir_ / "q").string() + extra, dir_);
  }

  // The shard of `dir` holding `tensor`, read whole.
  static fs::path shard_of(const fs::path& dir, const std::string& tensor) {
    return dir / read_json(dir / "model.safetensors.index.json")["weight_map"][tensor].get<std::string>();
  }
  // Replaces tensors of the converted checkpoint (a fault injected after the fact).
  void replace(const std::map<std::string, io::Tensor>& tensors) {
    for (const auto& [name, t] : tensors) {
      const fs::path p = shard_of(dir_ / "q", name);
      io::File f = io::read_file(p);
      ASSERT_TRUE(f.tensors.count(name)) << name;
      f.tensors[name] = t;
      io::write_file_atomic(p, f);
    }
  }
  io::Tensor source(const std::string& name) { return io::read_file(shard_of(dir_ / "src", name)).tensors.at(name); }
  io::Tensor stored(const std::string& name) { return io::read_file(shard_of(dir_ / "q", name)).tensors.at(name); }
  checkpoint::QuantizedWeight quantize(const std::string& module, const std::string& profile, float amax,
                                       bool swizzled = false) {
    ReferenceBackend ref;
    return checkpoint::quantize_weight(ref, module, source(module + ".weight"), profile, amax, swizzled);
  }

  fs::path dir_;
  test_support::CliRun convert_out_;
};

float f32_of(const io::Tensor& t) {
  float v;
  std::memcpy(&v, t.bytes.data(), 4);
  return v;
}

TEST_F(CheckpointTest, DenseConversionChecksCleanAndWritesFormatA) {
  const fs::path q = converted(false);
  const auto r = check();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("14 of 14 tensors match, every one bit for bit"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos);

  // weight_scale_2 of q_proj is RN(g * RN(1/2688)) with g the max over q, k and v (docs/guides/checkpoints.md
  // sections 2.2, 2.6).
  const std::string a = "model.layers.0.self_attn.";
  const float g = std::max({amax_of(source(a + "q_proj.weight")), amax_of(source(a + "k_proj.weight")),
                            amax_of(source(a + "v_proj.weight"))});
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
  EXPECT_EQ(excluded,
            nlohmann::json({"lm_head", "model.layers.0.self_attn.o_proj", "model.layers.1.self_attn.o_proj"}));
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
  replace({{smaller + ".weight", q.data},
           {smaller + ".weight_scale", q.scale},
           {smaller + ".weight_scale_2", *q.global_scale}});
  const auto r = check(" --junit " + (dir_ / "junit.xml").string());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(smaller + ": MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("separate amax (not shared with " + peer + ")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(peer + ": match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("13 of 14 tensors match"), std::string::npos) << r.out;
  const std::string junit = test_support::slurp_text(dir_ / "junit.xml");
  EXPECT_NE(junit.find("tests=\"14\" failures=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<testcase classname=\"check-checkpoint\" name=\"" + smaller + "\"><failure"), std::string::npos)
      << junit;
}

TEST_F(CheckpointTest, TheJunitFileReadsBackWithEveryModulesVerdictAsPrinted) {
  // One more module, named with every character markup escapes and one that XML forbids.
  const std::string odd = "model.layers.0.mlp.odd&<\"'>\x01_proj";
  auto specs = model_specs(false);
  specs.push_back({odd + ".weight", {64, kHidden}});
  write_model(dir_ / "src", specs);
  ASSERT_EQ(run_cli("convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format modelopt", dir_).exit_code,
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
  // its line.
  std::vector<std::string> lines;
  std::istringstream out(r.out);
  for (std::string line; std::getline(out, line) && !line.starts_with("check-checkpoint: ");) {
    const std::size_t x = line.find('\x01');
    lines.push_back(x == std::string::npos ? line : line.replace(x, 1, "\xEF\xBF\xBD"));  // U+FFFD
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
      EXPECT_EQ(failure[0]->attr("message"), line);
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
// [1], no hf_quant_config.json, the compressed-tensors profile; q/k/v share the largest amax.
TEST_F(CheckpointTest, CompressedTensorsDenseConversionChecksCleanAndWritesFormatB) {
  const fs::path q = converted(false, "", "compressed-tensors");
  const auto r = check();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("14 of 14 tensors match, every one bit for bit"), std::string::npos) << r.out;
  const std::string a = "model.layers.0.self_attn.";
  const float g = std::max({amax_of(source(a + "q_proj.weight")), amax_of(source(a + "k_proj.weight")),
                            amax_of(source(a + "v_proj.weight"))});
  const float reciprocal = 1.0f / g, G = reciprocal * 2688.0f;  // generate_gparam: 2688 / g as reciprocal * 2688
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
  EXPECT_NE(r.out.find("identify: every tensor matches under compressed-tensors\n"), std::string::npos) << r.out;
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
TEST_F(CheckpointTest, MilesMoeConversionChecksCleanAndIdentifiesTePyref) {
  const fs::path q = converted(true, "", "miles");
  EXPECT_NE(convert_out_.out.find("(miles, profile te-pyref): 24 weights quantized"), std::string::npos)
      << convert_out_.out;
  auto r = check();  // --format auto tells C from A by its input_scale placeholders
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("under te-pyref: 24 of 24 tensors match, every one bit for bit"), std::string::npos) << r.out;

  const std::string x = "model.layers.0.mlp.experts.";
  const float g = std::max(amax_of(source(x + "0.gate_proj.weight")), amax_of(source(x + "0.up_proj.weight")));
  float S = std::min(2688.0f / g, FLT_MAX);
  if (S == 0.0f) S = 1.0f;
  for (const char* m : {"0.gate_proj", "0.up_proj"}) {
    const io::Tensor ws2 = stored(x + m + ".weight_scale_2"), in = stored(x + m + ".input_scale");
    EXPECT_TRUE(ws2.shape.empty());
    EXPECT_EQ(std::bit_cast<std::uint32_t>(f32_of(ws2)), std::bit_cast<std::uint32_t>(1.0f / S)) << m;
    EXPECT_EQ(in.dtype, io::DType::F32);
    EXPECT_EQ(f32_of(in), 1.0f) << m;
  }
  EXPECT_NE(stored(x + "0.down_proj.weight_scale_2").bytes, stored(x + "0.gate_proj.weight_scale_2").bytes);
  EXPECT_EQ(stored("model.layers.0.self_attn.q_proj.weight").dtype, io::DType::BF16);
  EXPECT_EQ(stored("model.layers.0.mlp.gate.weight").dtype, io::DType::BF16);

  const nlohmann::json hf = read_json(q / "hf_quant_config.json"), config = read_json(q / "config.json");
  EXPECT_EQ(hf["quantization"]["kv_cache_quant_algo"], "FP8");
  const nlohmann::json ignore = hf["quantization"]["exclude_modules"];
  for (const char* m : {"model.embed_tokens", "model.norm", "lm_head", "model.layers.0.mlp.gate",
                        "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.qkv_proj",
                        "model.layers.1.input_layernorm"})
    EXPECT_NE(std::find(ignore.begin(), ignore.end(), m), ignore.end()) << m << " in " << ignore.dump();
  EXPECT_EQ(std::count(ignore.begin(), ignore.end(), "model.layers.0.self_attn.qkv_proj"), 1);
  EXPECT_EQ(config["quantization_config"]["quant_method"], "modelopt");
  EXPECT_EQ(config["quantization_config"]["ignore"], ignore);
  EXPECT_EQ(config["quantization_config"]["kv_cache_scheme"]["num_bits"], 8);

  r = check(" --identify");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("identify: te-pyref: 24 of 24 tensors match\n"), std::string::npos) << r.out;
  const std::size_t verdict = r.out.find("identify: every tensor matches under ");
  ASSERT_NE(verdict, std::string::npos) << r.out;
  EXPECT_NE(r.out.substr(verdict, r.out.find('\n', verdict) - verdict).find("te-pyref"), std::string::npos) << r.out;
  // The same checkpoint read as format A: the ModelOpt profile's global scale is another number.
  EXPECT_EQ(check(" --format modelopt").exit_code, 1);
}

TEST_F(CheckpointTest, MilesDenseModelQuantizesNothingAndSaysSo) {
  const fs::path q = converted(false, "", "miles");
  EXPECT_NE(convert_out_.out.find("0 weights quantized"), std::string::npos) << convert_out_.out;
  EXPECT_NE(convert_out_.out.find("format miles quantizes none of the tensors of " + src() +
                                  " (it quantizes MoE expert linears only)"),
            std::string::npos)
      << convert_out_.out;
  EXPECT_EQ(stored("model.layers.0.mlp.gate_proj.weight").dtype, io::DType::BF16);
  EXPECT_FALSE(read_json(q / "model.safetensors.index.json")["weight_map"].contains(
      "model.layers.0.mlp.gate_proj.weight_scale"));
  const nlohmann::json ignore = read_json(q / "hf_quant_config.json")["quantization"]["exclude_modules"];
  EXPECT_NE(std::find(ignore.begin(), ignore.end(), "model.layers.1.mlp.down_proj"), ignore.end()) << ignore.dump();
  const auto r = check(" --format miles");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no quantized module to check"), std::string::npos) << r.err;
}

TEST_F(CheckpointTest, MilesGateAndUpWithSeparateAmaxesAreNamed) {
  converted(true, "", "miles");
  const std::string x = "model.layers.1.mlp.experts.2.";
  const std::string gate = x + "gate_proj", up = x + "up_proj";
  const float ga = amax_of(source(gate + ".weight")), ua = amax_of(source(up + ".weight"));
  ASSERT_NE(ga, ua);
  const std::string smaller = ga < ua ? gate : up, peer = ga < ua ? up : gate;
  ReferenceBackend ref;
  const auto q = checkpoint::quantize_for_format(ref, *checkpoint::find_format("miles"), smaller + ".weight",
                                                 source(smaller + ".weight"), "te-pyref", std::min(ga, ua));
  replace({{smaller + ".weight", q.data},
           {smaller + ".weight_scale", q.scale},
           {smaller + ".weight_scale_2", *q.global_scale}});
  const auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(smaller + ": MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("separate amax (not shared with " + peer + ")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(peer + ": match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("under te-pyref: 23 of 24 tensors match"), std::string::npos) << r.out;
}

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
  const auto r = run_cli(
      "convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format modelopt", dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "q"), fs::directory_iterator()), 1);
  EXPECT_EQ(read_json(dir_ / "q" / "mine.json")["keep"], true);
}

TEST_F(CheckpointTest, OutputWithATrailingSlashIsTheDirectoryItself) {
  write_model(dir_ / "src", model_specs(false));
  const auto r = run_cli(
      "convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + "/ --format modelopt", dir_);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "q" / "hf_quant_config.json"));
  for (const fs::path& d : {dir_, dir_ / "q"})  // no temporary inside the output or beside it
    for (const auto& e : fs::directory_iterator(d))
      EXPECT_EQ(e.path().filename().string().find("tmp"), std::string::npos) << e.path();
}

TEST_F(CheckpointTest, UnsupportedFormatIsRefusedNamingTheSupportedOne) {
  write_model(dir_ / "src", model_specs(false));
  const auto r = run_cli(
      "convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format gguf",
      dir_);
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
  const auto r = run_cli(
      "convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format modelopt", dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("model.layers.1.mlp.down_proj.weight"), std::string::npos) << r.err;
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().rfind("q", 0), std::string::npos) << e.path();
}

// 3-D expert weights [E, N, K] in format C (docs/guides/checkpoints.md sections 4.1, 4.5): quantized
// expert by expert, each expert with its own amax (gate and up halves of a fused gate_up_proj
// sharing it), weight_scale_2 and input_scale [E].
TEST_F(CheckpointTest, MilesFused3dExpertsConvertAndCheckClean) {
  const auto c = convert_fused("miles");
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("4 weights quantized"), std::string::npos) << c.out;
  const auto r = check();  // --format auto: [E] input_scale placeholders of 1.0
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("model.layers.0.mlp.experts.gate_up_proj: match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("under te-pyref: 4 of 4 tensors match, every one bit for bit"), std::string::npos) << r.out;

  const std::string m = "model.layers.1.mlp.experts.gate_up_proj";
  const io::Tensor w = source(m + ".weight");
  EXPECT_EQ(stored(m + ".weight").shape, (std::vector<std::int64_t>{4, 64, kHidden / 2}));
  EXPECT_EQ(stored(m + ".weight_scale").shape, (std::vector<std::int64_t>{4, 64, kHidden / 16}));
  const io::Tensor ws2 = stored(m + ".weight_scale_2"), in = stored(m + ".input_scale");
  ASSERT_EQ(ws2.shape, (std::vector<std::int64_t>{4}));
  ASSERT_EQ(in.shape, (std::vector<std::int64_t>{4}));
  const std::size_t per_expert = w.bytes.size() / 4;
  std::set<std::uint32_t> distinct;
  for (std::size_t e = 0; e < 4; ++e) {
    // Expert e's amax over its whole slice: gate and up halves share it.
    const io::Tensor slice{io::DType::BF16, {64, kHidden},
                           std::vector<std::uint8_t>(w.bytes.begin() + std::ptrdiff_t(e * per_expert),
                                                     w.bytes.begin() + std::ptrdiff_t((e + 1) * per_expert))};
    float S = std::min(2688.0f / amax_of(slice), FLT_MAX);
    if (S == 0.0f) S = 1.0f;
    float g, one;
    std::memcpy(&g, ws2.bytes.data() + 4 * e, 4);
    std::memcpy(&one, in.bytes.data() + 4 * e, 4);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(g), std::bit_cast<std::uint32_t>(1.0f / S)) << "expert " << e;
    EXPECT_EQ(one, 1.0f) << "expert " << e;
    distinct.insert(std::bit_cast<std::uint32_t>(g));
  }
  EXPECT_GT(distinct.size(), 1u) << "experts have their own amax";
  EXPECT_EQ(stored("model.layers.0.mlp.router.weight").dtype, io::DType::BF16);
  EXPECT_EQ(check(" --identify").exit_code, 0);
}

TEST_F(CheckpointTest, Miles3dExpertScalesSwappedWithTheNeighboursAreNamed) {
  ASSERT_EQ(convert_fused("miles").exit_code, 0);
  const std::string m = "model.layers.0.mlp.experts.gate_up_proj";
  io::Tensor scale = stored(m + ".weight_scale");
  const std::size_t n = scale.bytes.size() / 4;
  std::vector<std::uint8_t> e1(scale.bytes.begin() + std::ptrdiff_t(n), scale.bytes.begin() + std::ptrdiff_t(2 * n));
  ASSERT_FALSE(std::equal(e1.begin(), e1.end(), scale.bytes.begin() + std::ptrdiff_t(2 * n)));
  std::copy(scale.bytes.begin() + std::ptrdiff_t(2 * n), scale.bytes.begin() + std::ptrdiff_t(3 * n),
            scale.bytes.begin() + std::ptrdiff_t(n));
  std::copy(e1.begin(), e1.end(), scale.bytes.begin() + std::ptrdiff_t(2 * n));
  replace({{m + ".weight_scale", scale}});
  const auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(m + ": MISMATCH (data: 0 of"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weight_scale_2 matches): expert 1: scales of expert 2; expert 2: scales of expert 1\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("model.layers.1.mlp.experts.gate_up_proj: match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 of 4 tensors match"), std::string::npos) << r.out;
  // The report lists the 3-D tensor with its verdict (its pages are for 2-D tensors).
  const auto rep = check(" --report " + (dir_ / "report").string());
  EXPECT_EQ(rep.exit_code, 1) << rep.out << rep.err;
  const std::string index = test_support::slurp_text(dir_ / "report" / "index.html");
  EXPECT_NE(index.find("expert 1: scales of expert 2"), std::string::npos);
  EXPECT_NE(index.find("no block-level page for 3-D expert tensors"), std::string::npos);
}

// Format A's layout for 3-D experts is an open question (docs/guides/checkpoints.md section 2.7): refused,
// naming the tensor, rather than copied unquantized.
TEST_F(CheckpointTest, Modelopt3dExpertTensorIsRefused) {
  const auto c = convert_fused("modelopt");
  EXPECT_EQ(c.exit_code, 2) << c.out << c.err;
  EXPECT_NE(c.err.find("model.layers.0.mlp.experts.down_proj.weight is a 3-D expert tensor"), std::string::npos)
      << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "q"));
}

// ---- BMM-style 3-D experts in format A (docs/guides/checkpoints.md section 2.7) ------------------------

// The [E, in, out] BF16 parameter's expert e, transposed by hand to [out, in].
io::Tensor expert_transposed(const io::Tensor& w, std::int64_t e) {
  const std::int64_t in = w.shape.at(1), out = w.shape.at(2);
  io::Tensor t{io::DType::BF16, {out, in}, std::vector<std::uint8_t>(std::size_t(in * out * 2))};
  for (std::int64_t k = 0; k < in; ++k)
    for (std::int64_t n = 0; n < out; ++n)
      std::memcpy(t.bytes.data() + (n * in + k) * 2, w.bytes.data() + ((e * in + k) * out + n) * 2, 2);
  return t;
}

// Byte tensors [E, a, b] -> [E, b, a], by hand.
io::Tensor swap_last2(const io::Tensor& t) {
  const std::int64_t E = t.shape.at(0), a = t.shape.at(1), b = t.shape.at(2);
  io::Tensor out{t.dtype, {E, b, a}, std::vector<std::uint8_t>(t.bytes.size())};
  for (std::int64_t e = 0; e < E; ++e)
    for (std::int64_t i = 0; i < a; ++i)
      for (std::int64_t j = 0; j < b; ++j) out.bytes[std::size_t((e * b + j) * a + i)] = t.bytes[std::size_t((e * a + i) * b + j)];
  return out;
}

// What a converter that quantizes each expert with its own amax writes: data [E, out, in/2], scales
// [E, out, in/16] (the quantized orientation) and weight_scale_2 [E].
checkpoint::QuantizedWeight per_expert_untransposed(const io::Tensor& w) {
  ReferenceBackend ref;
  const std::int64_t E = w.shape.at(0), in = w.shape.at(1), out = w.shape.at(2);
  checkpoint::QuantizedWeight q;
  q.data = io::Tensor{io::DType::U8, {E, out, in / 2}, {}};
  q.scale = io::Tensor{io::DType::F8_E4M3, {E, out, in / 16}, {}};
  std::vector<float> g;
  for (std::int64_t e = 0; e < E; ++e) {
    const io::Tensor slice = expert_transposed(w, e);
    const auto qe = checkpoint::quantize_weight(ref, "expert", slice, "modelopt", amax_of(slice), false);
    q.data.bytes.insert(q.data.bytes.end(), qe.data.bytes.begin(), qe.data.bytes.end());
    q.scale.bytes.insert(q.scale.bytes.end(), qe.scale.bytes.begin(), qe.scale.bytes.end());
    g.push_back(f32_of(*qe.global_scale));
  }
  q.global_scale = io::make_tensor_from<float>(io::DType::F32, {E}, g);
  return q;
}

TEST_F(CheckpointTest, Llama4BmmExpertsConvertToModelOptsLayoutAndCheckClean) {
  const auto c = convert_llama4();
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find("(modelopt, profile modelopt): 18 weights quantized"), std::string::npos) << c.out;
  auto r = check();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("model.layers.0.feed_forward.experts.gate_up_proj: match\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model.layers.1.feed_forward.experts.down_proj: match\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("18 of 18 tensors match, every one bit for bit"), std::string::npos) << r.out;

  // <p> U8 [E, in/2, out], <p>_weight_scale F8_E4M3 [E, in/16, out], <p>_weight_scale_2 F32 [].
  const std::string x = "model.layers.1.feed_forward.experts.";
  const struct {
    const char* leaf;
    std::int64_t in, out;
  } params[] = {{"gate_up_proj", kHidden, 96}, {"down_proj", 48, kHidden}};
  for (const auto& [leaf, in, out] : params) {
    const std::string p = x + leaf;
    const io::Tensor data = stored(p), scale = stored(p + "_weight_scale"), ws2 = stored(p + "_weight_scale_2");
    EXPECT_EQ(data.dtype, io::DType::U8) << p;
    EXPECT_EQ(data.shape, (std::vector<std::int64_t>{4, in / 2, out})) << p;
    EXPECT_EQ(scale.dtype, io::DType::F8_E4M3) << p;
    EXPECT_EQ(scale.shape, (std::vector<std::int64_t>{4, in / 16, out})) << p;
    EXPECT_EQ(ws2.dtype, io::DType::F32) << p;
    EXPECT_TRUE(ws2.shape.empty()) << p;
  }
  const nlohmann::json index = read_json(dir_ / "q" / "model.safetensors.index.json");
  EXPECT_FALSE(index["weight_map"].contains(x + "gate_up_proj_input_scale"));  // as for 2-D weights
  EXPECT_FALSE(index["weight_map"].contains(x + "gate_up_proj.weight"));
  EXPECT_EQ(stored("model.layers.0.feed_forward.router.weight").dtype, io::DType::BF16);
  const std::string ff = "model.layers.1.feed_forward.";  // the shared expert's gate and up share one amax
  EXPECT_EQ(stored(ff + "shared_expert.up_proj.weight_scale_2").bytes,
            stored(ff + "shared_expert.gate_proj.weight_scale_2").bytes);
  EXPECT_EQ(read_json(dir_ / "q" / "hf_quant_config.json")["quantization"]["exclude_modules"],
            nlohmann::json({"lm_head", "model.layers.0.feed_forward.router", "model.layers.1.feed_forward.router"}));

  r = check(" --identify");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("identify: modelopt: 18 of 18 tensors match\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("identify: every tensor matches under modelopt\n"), std::string::npos) << r.out;
}

// Expert 2 of gate_up_proj recomputed here: its [in, out] slice transposed by hand and quantized by
// the reference under modelopt with the amax of the whole 3-D tensor; every stored column of that
// expert holds the quantized row, and weight_scale_2 = RN(g * RN(1/2688)) of that amax.
TEST_F(CheckpointTest, Llama4BmmExpertsMatchAnIndependentRecomputation) {
  ASSERT_EQ(convert_llama4().exit_code, 0);
  const std::string p = "model.layers.0.feed_forward.experts.gate_up_proj";
  const io::Tensor w = source(p);
  ASSERT_EQ(w.shape, (std::vector<std::int64_t>{4, kHidden, 96}));
  const float g = amax_of(w);  // all experts, gate and up halves together
  const io::Tensor ws2 = stored(p + "_weight_scale_2");
  EXPECT_EQ(std::bit_cast<std::uint32_t>(f32_of(ws2)), std::bit_cast<std::uint32_t>(g * (1.0f / 2688.0f)));

  ReferenceBackend ref;
  const std::int64_t e = 2, in = kHidden, out = 96;
  const auto q = checkpoint::quantize_weight(ref, "expert 2", expert_transposed(w, e), "modelopt", g, false);
  ASSERT_EQ(q.data.shape, (std::vector<std::int64_t>{out, in / 2}));
  EXPECT_EQ(q.global_scale->bytes, ws2.bytes);
  const io::Tensor data = stored(p), scale = stored(p + "_weight_scale");
  std::size_t columns = 0;
  for (std::int64_t n = 0; n < out; ++n) {
    bool same = true;
    for (std::int64_t k2 = 0; k2 < in / 2; ++k2)  // byte [e, k2, n]: elements 2·k2 (low nibble), 2·k2 + 1
      same = same && data.bytes[std::size_t((e * (in / 2) + k2) * out + n)] == q.data.bytes[std::size_t(n * (in / 2) + k2)];
    for (std::int64_t j = 0; j < in / 16; ++j)
      same = same && scale.bytes[std::size_t((e * (in / 16) + j) * out + n)] == q.scale.bytes[std::size_t(n * (in / 16) + j)];
    EXPECT_TRUE(same) << "column " << n;
    columns += same;
  }
  EXPECT_EQ(columns, std::size_t(out));
  // The one amax matters: an expert quantized with its own amax gets another global scale.
  bool own_differs = false;
  for (std::int64_t i = 0; i < 4; ++i) {
    const io::Tensor slice = expert_transposed(w, i);
    own_differs = own_differs || checkpoint::quantize_weight(ref, "expert", slice, "modelopt", amax_of(slice), false)
                                         .global_scale->bytes != ws2.bytes;
  }
  EXPECT_TRUE(own_differs);
}

TEST_F(CheckpointTest, Llama4BmmWeightScale2PerExpertIsNamed) {
  ASSERT_EQ(convert_llama4().exit_code, 0);
  const std::string p = "model.layers.1.feed_forward.experts.down_proj";
  // Each expert its own amax and weight_scale_2 [E], in ModelOpt's orientation ...
  const auto q = per_expert_untransposed(source(p));
  replace({{p, swap_last2(q.data)}, {p + "_weight_scale", swap_last2(q.scale)}, {p + "_weight_scale_2", *q.global_scale}});
  auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(p + ": MISMATCH (data: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weight_scale_2 differs): one weight_scale_2 per expert (each expert quantized with its own "
                       "amax), where ModelOpt stores one for the whole 3-D tensor\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("17 of 18 tensors match"), std::string::npos) << r.out;
  // ... and untransposed as well ([E, out, in/2], [E, out, in/16]), as other converters write it.
  replace({{p, q.data}, {p + "_weight_scale", q.scale}});
  r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(p + ": MISMATCH (data: 6144 of 6144 bytes differ; weight_scale: 768 of 768 bytes differ; "
                           "weight_scale_2 differs): one weight_scale_2 per expert"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("3-D tensor; data untransposed [E, out, in/2] (ModelOpt's layout: [E, in/2, out]), scales "
                       "untransposed [E, out, in/16]"),
            std::string::npos)
      << r.out;
}

TEST_F(CheckpointTest, Llama4BmmDataWrittenUntransposedIsNamed) {
  ASSERT_EQ(convert_llama4().exit_code, 0);
  const std::string p = "model.layers.0.feed_forward.experts.gate_up_proj";
  const io::Tensor data = stored(p);  // [4, 32, 96] -> [4, 96, 32]
  replace({{p, swap_last2(data)}});
  const auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(p + ": MISMATCH (data: 12288 of 12288 bytes differ; weight_scale: 0 of 1536 bytes differ; "
                           "weight_scale_2 matches): data untransposed [E, out, in/2] (ModelOpt's layout: "
                           "[E, in/2, out])\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("17 of 18 tensors match"), std::string::npos) << r.out;
  const auto rep = check(" --report " + (dir_ / "report").string());
  EXPECT_EQ(rep.exit_code, 1) << rep.out << rep.err;
  EXPECT_NE(test_support::slurp_text(dir_ / "report" / "index.html").find("no block-level page for 3-D expert tensors"),
            std::string::npos);
}

TEST_F(CheckpointTest, Llama4BmmExpertScalesSwappedWithTheNeighboursAreNamed) {
  ASSERT_EQ(convert_llama4().exit_code, 0);
  const std::string p = "model.layers.0.feed_forward.experts.down_proj";
  io::Tensor scale = stored(p + "_weight_scale");
  const std::size_t n = scale.bytes.size() / 4;
  std::swap_ranges(scale.bytes.begin() + std::ptrdiff_t(n), scale.bytes.begin() + std::ptrdiff_t(2 * n),
                   scale.bytes.begin() + std::ptrdiff_t(2 * n));
  ASSERT_NE(scale.bytes, stored(p + "_weight_scale").bytes);
  replace({{p + "_weight_scale", scale}});
  const auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(p + ": MISMATCH (data: 0 of"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weight_scale_2 matches): expert 1: scales of expert 2; expert 2: scales of expert 1\n"),
            std::string::npos)
      << r.out;
}

// ModelOpt's transposed layout belongs to Llama-4 and GPT-OSS experts; another model's fused experts
// (ModelOpt splits them into 2-D modules) and format B (separate 2-D expert modules) are refused.
TEST_F(CheckpointTest, BmmExpertsAreRefusedWhereModelOptsLayoutDoesNotApply) {
  auto c = convert_llama4("modelopt", "", "qwen3_moe");
  EXPECT_EQ(c.exit_code, 2) << c.out << c.err;
  EXPECT_NE(c.err.find("model.layers.0.feed_forward.experts.down_proj is a 3-D expert tensor of a model of type "
                       "'qwen3_moe'"),
            std::string::npos)
      << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "q"));
  c = convert_llama4("compressed-tensors");
  EXPECT_EQ(c.exit_code, 2) << c.out << c.err;
  EXPECT_NE(c.err.find("model.layers.0.feed_forward.experts.down_proj is a 3-D expert tensor [E, in, out]; format "
                       "compressed-tensors stores experts as separate 2-D modules"),
            std::string::npos)
      << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "q"));
  // Llama-4's multimodal config: the text model's type is in text_config.
  write_json(dir_ / "src" / "config.json", {{"model_type", "llama4"}, {"text_config", {{"model_type", "llama4_text"}}}});
  c = convert_llama4();
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
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
