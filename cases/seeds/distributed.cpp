// The distributed family's seed cases (§3.15-§3.17, §5.1-§5.3, §6.16-§6.17): the master-weight
// cast across ranks with odd, mid-byte and empty shards, and its three steps alone.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>

#include "cases/seeds/families.h"
#include "cases/seeds/seed_builders.h"
#include "io/tensor_convert.h"
#include "reference/arith.h"
#include "reference/e2m1.h"
#include "reference/shard.h"

namespace nvfp4::cases::seeds {
namespace {

// W[r][c] = f4(c mod 16): element e of a 16-column-aligned row has code e mod 16 (§6.16).
io::Tensor code_ramp(std::int64_t M, std::int64_t K) {
  FloatMatrix w = xt::empty<float>({std::size_t(M), std::size_t(K)});
  for (std::size_t r = 0; r < w.shape(0); ++r)
    for (std::size_t c = 0; c < w.shape(1); ++c) w(r, c) = e2m1_decode(std::uint8_t(c % 16));
  return io::from_float_matrix(w, io::FloatType::F32);
}

void set_shard(Case& c, std::int64_t M, std::int64_t K, std::int64_t start) {
  c.params.set("M", M);
  c.params.set("K", K);
  c.params.set("shard_start", start);
}

CaseRecord master_weights_case(std::map<std::string, io::Tensor> weights, std::vector<std::int64_t> cuts, std::string note) {
  CaseRecord r = op_case("cast_master_weights", "te", std::move(weights), std::move(note));
  r.c.params.set("cuts", std::move(cuts));
  return r;
}

void add_master_weights(std::vector<CaseRecord>& out) {
  out.push_back(master_weights_case({{"w", code_ramp(16, 16)}}, {129},
                                    "NUMERICS.md §6.16: rank 1 starts at odd element 129 and shares byte 64 with rank 0 "
                                    "(PARTIAL_CAST_IDX_TE, ALLGATHER_BYTES)"));
  out.push_back(master_weights_case({{"w", code_ramp(16, 32)}}, {131, 131, 300},
                                    "NUMERICS.md §5.1: start 131 (s mod 4 = 3, two TE threads race on local byte 0), an "
                                    "empty rank, a cut mid-tile"));
  {
    FloatMatrix w = xt::zeros<float>({32, 32});  // §6.17's tile amaxes 6, 3, 1.5, 0.75
    w(0, 0) = 6.0f, w(0, 16) = 3.0f, w(16, 0) = 1.5f, w(16, 16) = -0.75f;
    out.push_back(master_weights_case({{"w", io::from_float_matrix(w, io::FloatType::F32)}}, {},
                                      "NUMERICS.md §6.17: width 32 (K/16 = 2, compact pitch 4; FUSED_SCALE_PITCH_TC)"));
  }
  {
    SplitMix64 rng(3170);
    Grid a(48, 80), b(16, 1040), c(32, 16);
    for (Grid* g : {&a, &b, &c}) fill_all(*g, rng, 0x40C00000);
    // Cuts at a weight boundary, one off it, mid-byte, mid-row, and an empty rank.
    out.push_back(master_weights_case({{"a", f32_tensor(a)}, {"b", f32_tensor(b)}, {"c", f32_tensor(c)}},
                                      {1, 3839, 3840, 3841, 3841, 9999, 20479},
                                      "NUMERICS.md §3.17: three weights (widths 80, 1040, 16 are not multiples of 64), "
                                      "8 ranks cut at, and one off, weight boundaries"));
  }
}

// The flow's three steps alone: a partial amax, the fused scale, partial casts.
void add_flow_steps(std::vector<CaseRecord>& out) {
  {
    CaseRecord r = op_case("amax_partial", "te", {}, "NUMERICS.md §3.4: a one-element shard at an odd start");
    set_shard(r.c, 32, 48, 1001);
    r.c.inputs["xs"] = io::from_bf16_values(FloatVector({-3.5f}));
    out.push_back(r);
  }
  for (const std::uint32_t g : {0x40C00000u, 0x7F800000u}) {  // g = 6 (§6.17), g = +inf (§5.5)
    CaseRecord r =
        op_case("fused_scale_2d", "te", {}, fmt::format("NUMERICS.md §6.17: T = [[6, 3], [1.5, 0.75]], g = 0x{:08X}", g));
    r.c.inputs["tile_amax"] = io::from_float_matrix(FloatMatrix({{6.0f, 3.0f}, {1.5f, 0.75f}}), io::FloatType::F32);
    r.c.inputs["amax"] = io::from_float_vector(FloatVector({float_of(g)}));
    out.push_back(r);
  }
  for (const auto& [start, length, whole] : {std::tuple{129, 127, false}, std::tuple{3, 1, true}, std::tuple{77, 0, false}}) {
    CaseRecord r = op_case("partial_cast_2d", "te", {},
                           fmt::format("NUMERICS.md §3.16: shard [{}, {}) into {}, the other nibbles of its boundary "
                                       "bytes kept",
                                       start, start + length, whole ? "the whole tensor" : "its local buffer"));
    set_shard(r.c, 16, 16, start);
    FloatVector xs = xt::empty<float>({std::size_t(length)});
    for (int i = 0; i < length; ++i) xs(i) = e2m1_decode(std::uint8_t((start + i) % 16));
    r.c.inputs["xs"] = io::from_bf16_values(xs);
    r.c.inputs["tile_scale"] = io::from_float_matrix(FloatMatrix({{448.0f}}), io::FloatType::F32);
    r.c.inputs["global_scale"] = io::from_float_vector(FloatVector({448.0f}));
    const Shard s{start, length};
    r.c.inputs["data"] = whole ? random_bytes(16, 8, 3160) : random_bytes(1, s.local_bytes(), 3161);
    if (!whole) r.c.inputs["data"].shape = {s.local_bytes()};
    out.push_back(r);
  }
}

}  // namespace

void add_distributed_seeds(std::vector<CaseRecord>& out) {
  add_master_weights(out);
  add_flow_steps(out);
}

}  // namespace nvfp4::cases::seeds
