// convert-checkpoint and check-checkpoint in format C (miles, docs/guides/checkpoints.md section 4) on
// tiny Hugging Face models generated here: a conversion checks clean, each known fault injected
// into a converted checkpoint is named with its tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/reference_backend.h"
#include "checkpoint/format.h"
#include "io/safetensors.h"
#include "tests/support/checkpoint_fixture.h"
#include "tests/support/cli_runner.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using test_support::amax_of;
using test_support::CheckpointTest;
using test_support::f32_of;
using test_support::kHidden;
using test_support::read_json;

TEST_F(CheckpointTest, MilesMoeConversionChecksCleanAndIdentifiesTePyref) {
  const fs::path q = converted(true, "", "miles");
  EXPECT_NE(convert_out_.out.find("(miles, profile te-pyref): 24 weights quantized"), std::string::npos) << convert_out_.out;
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
                        "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.qkv_proj", "model.layers.1.input_layernorm"})
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
  EXPECT_NE(
      convert_out_.out.find("format miles quantizes none of the tensors of " + src() + " (it quantizes MoE expert linears only)"),
      std::string::npos)
      << convert_out_.out;
  EXPECT_EQ(stored("model.layers.0.mlp.gate_proj.weight").dtype, io::DType::BF16);
  EXPECT_FALSE(read_json(q / "model.safetensors.index.json")["weight_map"].contains("model.layers.0.mlp.gate_proj.weight_scale"));
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
  cases::ReferenceBackend ref;
  const auto q = checkpoint::quantize_for_format(ref, *checkpoint::find_format("miles"), smaller + ".weight",
                                                 source(smaller + ".weight"), "te-pyref", std::min(ga, ua));
  replace({{smaller + ".weight", q.data}, {smaller + ".weight_scale", q.scale}, {smaller + ".weight_scale_2", *q.global_scale}});
  const auto r = check();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(smaller + ": MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("separate amax (not shared with " + peer + ")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(peer + ": match"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("under te-pyref: 23 of 24 tensors match"), std::string::npos) << r.out;
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
    const io::Tensor slice{io::DType::BF16,
                           {64, kHidden},
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
  EXPECT_NE(c.err.find("model.layers.0.mlp.experts.down_proj.weight is a 3-D expert tensor"), std::string::npos) << c.err;
  EXPECT_FALSE(fs::exists(dir_ / "q"));
}

}  // namespace
}  // namespace nvfp4
