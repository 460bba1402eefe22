#include "cases/seeds/seed_builders.h"

#include <stdexcept>

#include <fmt/format.h>

#include "cases/quantize_case.h"
#include "cases/registry.h"

namespace nvfp4::cases::seeds {
namespace {

constexpr const char* kOrigin = "seed corpus";

}  // namespace

io::Tensor f32_tensor(const Grid& g) { return io::make_tensor_from<std::uint32_t>(io::DType::F32, {g.M, g.K}, g.bits); }

io::Tensor bf16_tensor(const Grid& g) {
  std::vector<std::uint16_t> h(g.bits.size());
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (g.bits[i] & 0xFFFFu) throw std::logic_error(fmt::format("seed corpus: 0x{:08X} is not BF16-exact", g.bits[i]));
    h[i] = std::uint16_t(g.bits[i] >> 16);
  }
  return io::make_tensor_from<std::uint16_t>(io::DType::BF16, {g.M, g.K}, h);
}

std::uint32_t below(SplitMix64& rng, std::uint32_t limit_bits, int spread) {
  const int e = int((limit_bits >> 23) & 0xFF) - 1 - int(rng.below(std::uint64_t(spread) + 1));
  if (e <= 0) return 0;
  const std::uint32_t mant = std::uint32_t(rng.below(128)) << 16;
  const std::uint32_t sign = (rng.next() & 1) ? 0x80000000u : 0u;
  return sign | (std::uint32_t(e) << 23) | mant;
}

void fill(Grid& g, SplitMix64& rng, std::uint32_t limit_bits, std::int64_t r0, std::int64_t r1, std::int64_t c0,
          std::int64_t c1) {
  for (std::int64_t r = r0; r < r1; ++r)
    for (std::int64_t c = c0; c < c1; ++c)
      if (g.at(r, c) == 0) g.at(r, c) = below(rng, limit_bits);
}
void fill_all(Grid& g, SplitMix64& rng, std::uint32_t limit_bits) { fill(g, rng, limit_bits, 0, g.M, 0, g.K); }

io::Tensor random_bytes(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<std::uint8_t> b(std::size_t(rows * cols));
  for (auto& v : b) v = std::uint8_t(rng.next() >> 56);
  return io::make_tensor(io::DType::U8, {rows, cols}, b);
}

Recipe recipe(Distribution d, std::uint64_t seed, std::int64_t M, std::int64_t K, io::DType dtype) {
  Recipe r;
  r.dist = d;
  r.seed = seed;
  r.M = M;
  r.K = K;
  r.dtype = dtype;
  return r;
}

CaseRecord quantize_case(const Quant& q, io::Tensor x, std::string note) {
  CaseRecord r;
  r.c = make_case("quantize");
  r.c.params.set("profile", q.profile);
  set_quantize_params(r.c, q.block, q.direction, q.row_scaled, q.layout);
  r.c.params.set("amax", F32Bits{q.amax_bits});
  r.c.inputs["x"] = std::move(x);
  r.origin = kOrigin;
  r.note = std::move(note);
  return r;
}

CaseRecord quantize_recipe_case(const Quant& q, const Recipe& rec, std::string note) {
  CaseRecord r = quantize_case(q, generate_tensor(rec), std::move(note));
  r.recipes["x"] = rec;
  return r;
}

CaseRecord op_case(std::string_view op, const std::string& profile, std::map<std::string, io::Tensor> inputs, std::string note) {
  CaseRecord r;
  r.c = make_case(op);
  if (r.c.params.has("profile")) r.c.params.set("profile", profile);
  r.c.inputs = std::move(inputs);
  r.origin = kOrigin;
  r.note = std::move(note);
  return r;
}

}  // namespace nvfp4::cases::seeds
