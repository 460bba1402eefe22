// `nvfp4-verify gemm` as a user runs it: files from `quantize` in, d out; the registry's gemm is
// what it computes; bad operands get one error line, exit 2 and no output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "io/safetensors.h"
#include "io/tensor_convert.h"
#include "reference/scale_layout.h"
#include "tests/support/cli_runner.h"
#include "tests/support/temp_dir.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using test_support::run_cli;

class GemmCli : public test_support::TempDirTest {
 protected:
  // A fresh random [rows, K] F32 tensor, quantized by the CLI into `name`.
  std::string quantized(const std::string& name, std::int64_t rows, std::int64_t K, const std::string& extra = "") {
    std::mt19937 rng(std::random_device{}());
    std::normal_distribution<float> normal;
    FloatMatrix x = xt::zeros<float>({std::size_t(rows), std::size_t(K)});
    for (float& v : x) v = normal(rng);
    io::File f;
    f.tensors["x"] = io::from_float_matrix(x, io::FloatType::F32);
    const std::string in = (dir_ / (name + "_x.safetensors")).string(), out = (dir_ / (name + ".safetensors")).string();
    io::write_file_atomic(in, f);
    const auto r = run_cli("quantize --input " + in + " --output " + out + " " + extra, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }
};

TEST_F(GemmCli, WritesTheRegistrysExactProductOfTwoQuantizedFiles) {
  const std::string qa = quantized("a", 48, 96), qb = quantized("b", 32, 96, "--scale-layout swizzled");
  const std::string d = (dir_ / "d.safetensors").string();
  const auto r = run_cli("gemm --a " + qa + " --b " + qb + " --output " + d + " --out-dtype bf16", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const io::File out = io::read_file(d);
  const io::Tensor& got = out.tensors.at("d");
  EXPECT_EQ(got.dtype, io::DType::BF16);
  EXPECT_EQ(got.shape, (std::vector<std::int64_t>{48, 32}));
  // The same product through the registry's gemm, B's scales unswizzled.
  const io::File fa = io::read_file(qa), fb = io::read_file(qb);
  cases::Case c = cases::make_case("gemm");
  for (const char* t : {"data", "scale", "amax"}) {
    c.inputs[std::string("a_") + t] = fa.tensors.at(t);
    c.inputs[std::string("b_") + t] = fb.tensors.at(t);
  }
  c.inputs["b_scale"] = io::from_byte_matrix(unswizzle_scales(io::to_byte_matrix(fb.tensors.at("scale"), "gemm", "b_scale")));
  c.params.set("output_dtype", std::string("BF16"));
  const cases::TensorMap expected = cases::ReferenceBackend().run(c);
  EXPECT_EQ(got.bytes, expected.at("d").bytes);
}

TEST_F(GemmCli, OperandsOfDifferentKAreRejectedWithE_GEMM_KAndNoFile) {
  const std::string qa = quantized("a", 16, 64), qb = quantized("b", 16, 32);
  const fs::path d = dir_ / "d.safetensors";
  const auto r = run_cli("gemm --a " + qa + " --b " + qb + " --output " + d.string(), dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gemm: E_GEMM_K: A has K=64 and B has K=32"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(d));
}

TEST_F(GemmCli, AlphaBetaCAndBiasEnterTheProduct) {
  const std::string qa = quantized("a", 16, 32), qb = quantized("b", 16, 32);
  const fs::path d = dir_ / "d.safetensors", cfile = dir_ / "c.safetensors", bias = dir_ / "bias.safetensors";
  io::File cf, bf;
  cf.tensors["c"] = io::from_float_matrix(xt::ones<float>({16, 16}), io::FloatType::F32);
  bf.tensors["bias"] = io::from_float_vector(xt::ones<float>({16}));
  io::write_file_atomic(cfile.string(), cf);
  io::write_file_atomic(bias.string(), bf);
  // alpha = 0: d = RN(beta * C) + bias = 2 + 1 everywhere.
  const auto r = run_cli("gemm --a " + qa + " --b " + qb + " --output " + d.string() + " --alpha 0 --beta 2 --c " +
                             cfile.string() + " --bias " + bias.string(),
                         dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const FloatMatrix got = io::to_float_matrix(io::read_file(d.string()).tensors.at("d"), "t", "d");
  for (float v : got) EXPECT_EQ(v, 3.0f);
  const auto bad = run_cli("gemm --a " + qa + " --b " + qb + " --output " + d.string() + "x --beta 2", dir_);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--beta needs --c"), std::string::npos) << bad.err;
}

TEST_F(GemmCli, QuantizeExpertsStacksEachExpertQuantizedAlone) {
  std::mt19937 rng(std::random_device{}());
  std::normal_distribution<float> normal;
  std::vector<float> x(3 * 32 * 64);
  for (float& v : x) v = normal(rng);
  x[32 * 64 + 5] *= 100.0f;  // expert 1 gets its own, larger amax
  io::File f, one;
  f.tensors["x"] = io::make_tensor_from<float>(io::DType::F32, {3, 32, 64}, x);
  one.tensors["x"] = io::make_tensor_from<float>(io::DType::F32, {32, 64}, std::span<const float>(x).subspan(32 * 64, 32 * 64));
  const std::string in = (dir_ / "e.safetensors").string(), in1 = (dir_ / "e1.safetensors").string();
  io::write_file_atomic(in, f);
  io::write_file_atomic(in1, one);
  const std::string out = (dir_ / "qe.safetensors").string(), out1 = (dir_ / "qe1.safetensors").string();
  ASSERT_EQ(run_cli("quantize --experts --direction both --input " + in + " --output " + out, dir_).exit_code, 0);
  ASSERT_EQ(run_cli("quantize --direction both --input " + in1 + " --output " + out1, dir_).exit_code, 0);
  const io::File all = io::read_file(out), alone = io::read_file(out1);
  for (const auto& [name, t] : alone.tensors) {
    SCOPED_TRACE(name);
    const io::Tensor& stacked = all.tensors.at(name);
    ASSERT_EQ(stacked.shape.size(), t.shape.size() + 1);
    EXPECT_EQ(stacked.shape[0], 3);
    const std::size_t n = t.bytes.size();
    EXPECT_TRUE(std::equal(t.bytes.begin(), t.bytes.end(), stacked.bytes.begin() + std::ptrdiff_t(n)));
  }
  EXPECT_EQ(run_cli("quantize --input " + in + " --output " + out + "x", dir_).exit_code, 2) << "3-D without --experts";
}

}  // namespace
}  // namespace nvfp4
