// BMM-style 3-D experts (Llama-4) converted to format A (docs/guides/checkpoints.md section 2.7) on tiny
// Hugging Face models generated here: the conversion checks clean, matches an independent
// recomputation, each known fault is named, and layouts where it does not apply are refused.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/reference_backend.h"
#include "checkpoint/weight_quantizer.h"
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
using test_support::write_json;

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
      for (std::int64_t j = 0; j < b; ++j)
        out.bytes[std::size_t((e * b + j) * a + i)] = t.bytes[std::size_t((e * a + i) * b + j)];
  return out;
}

// What a converter that quantizes each expert with its own amax writes: data [E, out, in/2], scales
// [E, out, in/16] (the quantized orientation) and weight_scale_2 [E].
checkpoint::QuantizedWeight per_expert_untransposed(const io::Tensor& w) {
  cases::ReferenceBackend ref;
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

  cases::ReferenceBackend ref;
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
    own_differs =
        own_differs ||
        checkpoint::quantize_weight(ref, "expert", slice, "modelopt", amax_of(slice), false).global_scale->bytes != ws2.bytes;
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

}  // namespace
}  // namespace nvfp4
