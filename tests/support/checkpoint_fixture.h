// Tiny Hugging Face models (BF16, real names, two shards and an index) and the CheckpointTest
// fixture that converts and checks them, for the checkpoint tests (checkpoint_*_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/reference_backend.h"
#include "checkpoint/weight_quantizer.h"
#include "io/safetensors.h"
#include "tests/support/bf16_weights.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

namespace nvfp4::test_support {

inline constexpr std::int64_t kHidden = 64, kVocab = 64, kHeadDim = 16;

inline float amax_of(const io::Tensor& t) {
  float a = 0;
  for (std::size_t i = 0; i < t.bytes.size(); i += 2) {
    std::uint16_t h;
    std::memcpy(&h, t.bytes.data() + i, 2);
    a = std::max(a, std::fabs(bf16_to_float(h)));
  }
  return a;
}

inline void write_json(const std::filesystem::path& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(2); }
inline nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(std::ifstream(p)); }

using TensorSpecs = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;

// The norms and attention projections of the layer whose names start with `p`.
inline void push_attention(TensorSpecs& s, const std::string& p) {
  s.push_back({p + "input_layernorm.weight", {kHidden}});
  s.push_back({p + "self_attn.q_proj.weight", {4 * kHeadDim, kHidden}});
  s.push_back({p + "self_attn.k_proj.weight", {2 * kHeadDim, kHidden}});
  s.push_back({p + "self_attn.v_proj.weight", {2 * kHeadDim, kHidden}});
  s.push_back({p + "self_attn.o_proj.weight", {kHidden, 4 * kHeadDim}});
  s.push_back({p + "post_attention_layernorm.weight", {kHidden}});
}

// (name, shape) of a Llama-like (dense) or Qwen3-MoE-like model of two layers, in file order.
inline std::vector<std::pair<std::string, std::vector<std::int64_t>>> model_specs(bool moe) {
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
inline std::vector<std::pair<std::string, std::vector<std::int64_t>>> fused_moe_specs() {
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
inline std::vector<std::pair<std::string, std::vector<std::int64_t>>> llama4_specs(std::int64_t gate_up_in = kHidden) {
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
inline void write_model(const std::filesystem::path& dir,
                        const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& specs,
                        const std::string& model_type = "llama") {
  std::filesystem::create_directories(dir);
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

class CheckpointTest : public TempDirTest {
 protected:
  // A model of the kind asked for, converted to `format` (A unless told); returns the converted
  // directory.
  std::filesystem::path converted(bool moe, const std::string& extra = "", const std::string& format = "modelopt") {
    write_model(dir_ / "src", model_specs(moe));
    convert_out_ = run_cli(
        "convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format " + format + extra, dir_);
    EXPECT_EQ(convert_out_.exit_code, 0) << convert_out_.err;
    return dir_ / "q";
  }
  // The fused 3-D expert model converted to `format`.
  CliRun convert_fused(const std::string& format) {
    write_model(dir_ / "src", fused_moe_specs());
    return run_cli("convert-checkpoint --input " + src() + " --output " + (dir_ / "q").string() + " --format " + format, dir_);
  }
  // The Llama-4-style model (model_type llama4_text unless told) converted to `format`, into `out`.
  CliRun convert_llama4(const std::string& format = "modelopt", const std::string& extra = "",
                        const std::string& model_type = "llama4_text", const std::string& out = "q") {
    if (!std::filesystem::exists(dir_ / "src")) write_model(dir_ / "src", llama4_specs(), model_type);
    return run_cli("convert-checkpoint --input " + src() + " --output " + (dir_ / out).string() + " --format " + format + extra,
                   dir_);
  }
  std::string src() const { return (dir_ / "src").string(); }
  CliRun check(const std::string& extra = "") {
    return run_cli("check-checkpoint --source " + src() + " --quantized " + (dir_ / "q").string() + extra, dir_);
  }

  // The shard of `dir` holding `tensor`, read whole.
  static std::filesystem::path shard_of(const std::filesystem::path& dir, const std::string& tensor) {
    return dir / read_json(dir / "model.safetensors.index.json")["weight_map"][tensor].get<std::string>();
  }
  // Replaces tensors of the converted checkpoint (a fault injected after the fact).
  void replace(const std::map<std::string, io::Tensor>& tensors) {
    for (const auto& [name, t] : tensors) {
      const std::filesystem::path p = shard_of(dir_ / "q", name);
      io::File f = io::read_file(p);
      ASSERT_TRUE(f.tensors.count(name)) << name;
      f.tensors[name] = t;
      io::write_file_atomic(p, f);
    }
  }
  io::Tensor source(const std::string& name) { return io::read_file(shard_of(dir_ / "src", name)).tensors.at(name); }
  io::Tensor stored(const std::string& name) { return io::read_file(shard_of(dir_ / "q", name)).tensors.at(name); }
  checkpoint::QuantizedWeight quantize(const std::string& module, const std::string& profile, float amax, bool swizzled = false) {
    cases::ReferenceBackend ref;
    return checkpoint::quantize_weight(ref, module, source(module + ".weight"), profile, amax, swizzled);
  }

  CliRun convert_out_;
};

inline float f32_of(const io::Tensor& t) {
  float v;
  std::memcpy(&v, t.bytes.data(), 4);
  return v;
}

}  // namespace nvfp4::test_support
