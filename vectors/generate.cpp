#include "vectors/generate.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "io/tensor_convert.h"
#include "reference/error.h"
#include "reference/profiles.h"
#include "reference/shard.h"

namespace nvfp4::vectors {
namespace {

using cases::Case;
using cases::TensorMap;
using io::FloatType;

// One mode of an operation: the parameters and input dtype a vector runs under. Level 1 runs a
// `full` mode under every level-1 pattern and the others under "midpoints" only; level 2 runs
// every mode under every pattern at the level-1 shape, and adds 48 x 80 by the level-1 rule.
struct Mode {
  std::string_view name;
  bool full;
  FloatType dtype;  // of the float tensor the vector starts from (x, the weights, or what is quantized)
  void (*params)(Case& c);
};

struct Shape {
  std::int64_t M, K;
};
constexpr Shape kShape1 = {16, 32};  // two 16x16 tiles: both tile columns of the layout
constexpr Shape kShape2 = {48, 80};  // no multiple of 32, 64 or 128: scale padding in both layouts

// What one vector is built from.
struct Point {
  const Regime& regime;
  const Pattern& pattern;
  const Mode& mode;
  Shape shape;
  std::string_view profile;
  cases::SplitMix64& rng;
};

void set_f32(Case& c, const char* name, std::uint32_t bits) { c.params.set(name, cases::F32Bits{bits}); }
void set_profile(Case& c, std::string_view profile) {
  if (!profile.empty()) c.params.set("profile", std::string(profile));
}

// The point's x, as the tensor of its dtype.
io::Tensor x_tensor(const Point& p, Shape s, FloatType t) {
  return io::from_float_matrix(lay_out(p.regime, p.pattern, s.M, s.K, t, p.rng), t);
}

// The quantized rowwise operand of p's x (dequantize, gemm, the layouts), by the reference.
TensorMap quantized(const Point& p, std::string_view profile, FloatType t, bool row_scaled, ScaleLayout layout) {
  Case q = cases::make_case("quantize");
  set_profile(q, profile);
  cases::set_quantize_params(q, BlockShape::k1D, Direction::kRowwise, row_scaled, layout);
  if (p.regime.amax_bits && !row_scaled) set_f32(q, "amax", *p.regime.amax_bits);
  q.inputs["x"] = x_tensor(p, p.shape, t);
  return cases::ReferenceBackend().run(q);
}

// ---- the operations ----

void quantize_inputs(const Point& p, Case& c) {
  set_profile(c, p.profile);
  p.mode.params(c);
  // Row-scaled and RHT quantizations compute their amaxes: the regime's given amax does not apply.
  if (p.regime.amax_bits && !c.params.flag("row_scaled") && !c.params.flag("rht")) set_f32(c, "amax", *p.regime.amax_bits);
  if (!c.params.flag("experts")) {
    c.inputs["x"] = x_tensor(p, p.shape, p.mode.dtype);
    return;
  }
  // Two experts [2, M, K]: the rows 0..2M-1 of one layout, so each expert holds its own rotations.
  io::Tensor x = x_tensor(p, {2 * p.shape.M, p.shape.K}, p.mode.dtype);
  x.shape = {2, p.shape.M, p.shape.K};
  c.inputs["x"] = std::move(x);
}

template <BlockShape B, Direction D, bool RowScaled = false, ScaleLayout L = ScaleLayout::kCompact>
void quantize_mode(Case& c) {
  cases::set_quantize_params(c, B, D, RowScaled, L);
}
template <std::uint64_t Seed, std::uint64_t Offset>
void stochastic_mode(Case& c) {
  quantize_mode<BlockShape::k1D, Direction::kBoth>(c);
  c.params.set("rounding", std::string("stochastic"));
  c.params.set("seed", Seed);
  c.params.set("offset", Offset);
}
template <Direction D, std::uint64_t Mask>
void rht_mode(Case& c) {
  quantize_mode<BlockShape::k1D, D>(c);
  c.params.set("rht", true);
  c.params.set("rht_mask", Mask);
}

using BS = BlockShape;
using Dir = Direction;
constexpr auto kSwizzled = ScaleLayout::kSwizzled;
constexpr std::uint64_t kTeMask = 0xD7E8;

const Mode kQuantizeModes[] = {
    {"1d-both-f32", true, FloatType::F32, quantize_mode<BS::k1D, Dir::kBoth>},
    {"1d-both-bf16", true, FloatType::BF16, quantize_mode<BS::k1D, Dir::kBoth>},
    {"1d-both-f16", true, FloatType::F16, quantize_mode<BS::k1D, Dir::kBoth>},
    {"1d-rowwise", false, FloatType::BF16, quantize_mode<BS::k1D, Dir::kRowwise>},
    {"1d-columnwise", false, FloatType::BF16, quantize_mode<BS::k1D, Dir::kColumnwise>},
    {"2d-both-bf16", false, FloatType::BF16, quantize_mode<BS::k2D, Dir::kBoth>},
    {"2d-both-f32", false, FloatType::F32, quantize_mode<BS::k2D, Dir::kBoth>},
    {"row-scaled", false, FloatType::BF16, quantize_mode<BS::k1D, Dir::kBoth, true>},
    {"1d-both-swizzled", false, FloatType::BF16, quantize_mode<BS::k1D, Dir::kBoth, false, kSwizzled>},
    {"2d-rowwise-swizzled-f16", false, FloatType::F16, quantize_mode<BS::k2D, Dir::kRowwise, false, kSwizzled>},
    {"sr", false, FloatType::BF16, stochastic_mode<0, 0>},
    {"sr-carries", false, FloatType::F32, stochastic_mode<0xFFFFFFFFFFFFFFFFull, 0xFFFFFFFFull>},
    {"rht", false, FloatType::BF16, rht_mode<Dir::kBoth, kTeMask>},
    {"rht-plain-columnwise", false, FloatType::BF16, rht_mode<Dir::kColumnwise, 0>},
    {"experts", false, FloatType::BF16,
     [](Case& c) {
       quantize_mode<BS::k1D, Dir::kBoth>(c);
       c.params.set("experts", true);
     }},
};

void dequantize_inputs(const Point& p, Case& c) {
  set_profile(c, p.profile);
  p.mode.params(c);
  const bool row_scaled = p.mode.name == "row-scaled";
  TensorMap q = quantized(p, p.profile, p.mode.dtype, row_scaled, ScaleLayout::kCompact);
  c.inputs = {{"data", q.at("data")}, {"scale", q.at("scale")}, {"amax", q.at("amax")}};
}

template <const char* DType>
void output_dtype(Case& c) {
  c.params.set("output_dtype", std::string(DType));
}
constexpr char kF32[] = "F32", kBF16[] = "BF16", kF16[] = "F16";

const Mode kDequantizeModes[] = {
    {"f32", true, FloatType::BF16, output_dtype<kF32>},
    {"bf16", true, FloatType::BF16, output_dtype<kBF16>},
    {"f16", true, FloatType::BF16, output_dtype<kF16>},
    {"row-scaled", false, FloatType::BF16, output_dtype<kF32>},
};

// Two weights, [M, K] and [K, M], of the point's class; the cuts of the mode, all odd.
void master_weights_inputs(const Point& p, Case& c) {
  set_profile(c, p.profile);
  p.mode.params(c);
  c.inputs["w0"] = x_tensor(p, p.shape, p.mode.dtype);
  c.inputs["w1"] = x_tensor(p, {p.shape.K, p.shape.M}, p.mode.dtype);
}
template <std::int64_t... Cuts>
void cuts(Case& c) {
  c.params.set("cuts", std::vector<std::int64_t>{Cuts...});
}
const Mode kMasterWeightModes[] = {
    {"one-odd-cut", true, FloatType::F32, cuts<17>},                          // inside the first tile row
    {"odd-cuts-across-weights", false, FloatType::F32, cuts<255, 513, 769>},  // the second cut is in w1's first byte
};

// A shard [start, start + length) of the point's BF16 weight [M, K], cast into its owned nibbles
// of prior bytes drawn from the seed (every other nibble must survive): the tile scales and S
// from the reference's tile amaxes and fused scale of the whole weight (§3.15, §3.16).
struct ShardMode {
  std::string_view mode;
  std::int64_t start, length;
  bool whole;  // the destination: the whole tensor [M, K/2], or the shard-local bytes
};
constexpr ShardMode kShards[] = {
    {"odd-start-local", 17, 301, false}, {"odd-start-whole", 255, 257, true}, {"one-element-local", 33, 1, false}};

void partial_cast_inputs(const Point& p, Case& c) {
  const ShardMode& m =
      *std::find_if(std::begin(kShards), std::end(kShards), [&](const ShardMode& s) { return s.mode == p.mode.name; });
  set_profile(c, p.profile);
  c.params.set("M", p.shape.M);
  c.params.set("K", p.shape.K);
  c.params.set("shard_start", m.start);
  const io::Tensor w = x_tensor(p, p.shape, p.mode.dtype);
  Case tiles = cases::make_case("amax_tiles_16x16");
  set_profile(tiles, p.profile);
  tiles.inputs["x"] = w;
  Case fused = cases::make_case("fused_scale_2d");
  set_profile(fused, p.profile);
  fused.inputs["tile_amax"] = cases::ReferenceBackend().run(tiles).at("amax");
  if (p.regime.amax_bits) {
    fused.inputs["amax"] = io::from_float_vector(FloatVector({float_of(*p.regime.amax_bits)}));
  } else {
    Case global = cases::make_case("amax_global");
    set_profile(global, p.profile);
    global.inputs["x"] = w;
    fused.inputs["amax"] = cases::ReferenceBackend().run(global).at("amax");
  }
  const TensorMap scales = cases::ReferenceBackend().run(fused);
  c.inputs["tile_scale"] = scales.at("tile_scale");
  c.inputs["global_scale"] = scales.at("global_scale");
  const FloatMatrix values = io::to_float_matrix(w, "vectors", "x");
  FloatVector xs = xt::empty<float>({std::size_t(m.length)});
  for (std::int64_t i = 0; i < m.length; ++i) xs(std::size_t(i)) = values.data()[m.start + i];
  c.inputs["xs"] = io::from_bf16_values(xs);
  const Shard shard{m.start, m.length};
  const std::int64_t bytes = m.whole ? p.shape.M * p.shape.K / 2 : shard.local_bytes();
  std::vector<std::uint8_t> prior(static_cast<std::size_t>(bytes));
  for (std::uint8_t& b : prior) b = std::uint8_t(p.rng.next());
  io::Tensor data = io::from_byte_vector(prior);
  if (m.whole) data.shape = {p.shape.M, p.shape.K / 2};
  c.inputs["data"] = std::move(data);
}
// A: the point's x quantized under te; B: a seeded grid operand of the same shape.
void gemm_inputs(const Point& p, Case& c) {
  p.mode.params(c);
  const bool row_scaled = c.params.flag("row_scaled");
  const ScaleLayout layout = c.params.text("scale_layout") == "swizzled" ? ScaleLayout::kSwizzled : ScaleLayout::kCompact;
  const TensorMap a = quantized(p, "te", p.mode.dtype, row_scaled, layout);
  const Regime& seeded = *std::find_if(regimes().begin(), regimes().end(), [](const Regime& r) { return r.name == "seeded"; });
  const Point q{seeded, patterns(Level::k1)[0], p.mode, p.shape, p.profile, p.rng};
  const TensorMap b = quantized(q, "te", p.mode.dtype, row_scaled, layout);
  for (const char* n : {"data", "scale", "amax"}) {
    c.inputs[std::string("a_") + n] = a.at(n);
    c.inputs[std::string("b_") + n] = b.at(n);
  }
  const auto M = std::size_t(p.shape.M);
  if (c.params.f32("beta")) {  // C: the grid pattern scaled to 1, [M, N = M]
    FloatMatrix cm = lay_out(seeded, patterns(Level::k1)[0], p.shape.M, p.shape.M, FloatType::F32, p.rng);
    c.inputs["c"] = io::from_float_matrix(cm, FloatType::F32);
  }
  if (c.params.flag("with_bias")) {
    FloatVector bias = xt::empty<float>({M});
    for (std::size_t n = 0; n < M; ++n) bias(n) = float(int(n % 7) - 3) * 0.375f;
    c.inputs["bias"] = io::from_float_vector(bias);
  }
}
const Mode kGemmModes[] = {
    {"f32", true, FloatType::BF16, [](Case&) {}},
    {"bf16-swizzled", false, FloatType::BF16,
     [](Case& c) {
       c.params.set("output_dtype", std::string("BF16"));
       c.params.set("scale_layout", std::string("swizzled"));
     }},
    {"f16-beta-bias", false, FloatType::BF16,
     [](Case& c) {
       c.params.set("output_dtype", std::string("F16"));
       set_f32(c, "beta", 0x3F000000);  // 0.5
       c.params.set("with_bias", true);
     }},
    {"row-scaled", false, FloatType::BF16, [](Case& c) { c.params.set("row_scaled", true); }},
    {"mma-sm100", false, FloatType::BF16, [](Case& c) { c.params.set("accumulation", std::string("mma-sm100")); }},
    {"mma-sm120-beta", false, FloatType::BF16,
     [](Case& c) {
       c.params.set("accumulation", std::string("mma-sm120"));
       set_f32(c, "beta", 0x3F000000);  // 0.5
     }},
};

void rht_inputs(const Point& p, Case& c) {
  p.mode.params(c);
  c.inputs["x"] = x_tensor(p, p.shape, p.mode.dtype);
}
template <std::uint64_t Mask>
void mask(Case& c) {
  c.params.set("rht_mask", Mask);
}
const Mode kRhtModes[] = {
    {"te-mask", true, FloatType::BF16, mask<kTeMask>},
    {"plain", false, FloatType::BF16, mask<0>},
    {"all-signs", false, FloatType::BF16, mask<0xFFFF>},
};

// The compact scales of the point's x quantized under te (swizzle), or their swizzled form (unswizzle).
template <ScaleLayout L>
void layout_inputs(const Point& p, Case& c) {
  c.inputs["scale"] = quantized(p, "te", p.mode.dtype, false, L).at("scale");
}
const Mode kLayoutModes[] = {{"te-scales", true, FloatType::F32, [](Case&) {}}};

struct OpVectors {
  std::string_view op;
  std::span<const Mode> modes;
  void (*inputs)(const Point& p, Case& c);
  std::string_view only_profile = {};  // the one profile the operation defines, or "" for all
};

// partial_cast_2d's modes are its shards (kShards): their parameters are set from the shard.
const Mode kPartialCastModes[] = {
    {"odd-start-local", true, FloatType::BF16, [](Case&) {}},
    {"odd-start-whole", false, FloatType::BF16, [](Case&) {}},
    {"one-element-local", false, FloatType::BF16, [](Case&) {}},
};

const OpVectors kOps[] = {
    {"quantize", kQuantizeModes, quantize_inputs},
    {"dequantize", kDequantizeModes, dequantize_inputs},
    {"partial_cast_2d", kPartialCastModes, partial_cast_inputs, "te"},
    {"cast_master_weights", kMasterWeightModes, master_weights_inputs, "te"},  // TE's kernels only (§3.15-§3.17)
    {"gemm", kGemmModes, gemm_inputs},
    {"rht", kRhtModes, rht_inputs},
    {"swizzle", kLayoutModes, layout_inputs<ScaleLayout::kCompact>},
    {"unswizzle", kLayoutModes, layout_inputs<ScaleLayout::kSwizzled>},
};

bool has_profile(std::string_view op) { return cases::operation(op).param("profile") != nullptr; }

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (const char ch : s) h = (h ^ std::uint8_t(ch)) * 0x100000001B3ull;
  return h;
}

// The vectors of one operation under one profile. Vector n draws from a generator of (seed,
// operation, n) alone, so every profile's file holds the same inputs where they do not depend on
// the profile (quantize, cast_master_weights).
VectorSet generate_set(const OpVectors& op, std::string_view profile, const Selection& s) {
  VectorSet set{std::string(op.op), std::string(profile), {}};
  std::size_t n = 0;
  const auto add = [&](const Regime& r, const Pattern& pt, const Mode& m, Shape shape) {
    cases::SplitMix64 rng(s.seed ^ fnv1a(op.op) ^ (0x9E3779B97F4A7C15ull * (n + 1)));
    Vector v{fmt::format("v{:04d}", n++), std::string(r.name),     std::string(pt.name),
             std::string(m.name),         cases::make_case(op.op), {}};
    op.inputs(Point{r, pt, m, shape, profile, rng}, v.c);
    cases::validate_case(v.c);
    v.expected = cases::ReferenceBackend().run(v.c);
    set.vectors.push_back(std::move(v));
  };
  // A full mode, and at level 2 every mode at the first shape, runs under every pattern of the
  // level; the others under "midpoints", the ties.
  const std::span<const Pattern> level_patterns = patterns(s.level);
  const std::vector<Shape> shapes = s.level == Level::k1 ? std::vector{kShape1} : std::vector{kShape1, kShape2};
  for (const Regime& r : regimes())
    for (const Shape shape : shapes)
      for (const Mode& m : op.modes) {
        if (m.full || (s.level == Level::k2 && shape.M == kShape1.M))
          for (const Pattern& pt : level_patterns) add(r, pt, m, shape);
        else
          add(r, level_patterns[1], m, shape);
      }
  return set;
}

}  // namespace

std::string VectorSet::file_name() const { return profile.empty() ? op + ".safetensors" : op + "-" + profile + ".safetensors"; }

std::vector<std::string_view> vector_operations() {
  std::vector<std::string_view> out;
  for (const OpVectors& o : kOps) out.push_back(o.op);
  return out;
}

std::vector<std::string_view> operation_modes(std::string_view op) {
  std::vector<std::string_view> out;
  for (const OpVectors& o : kOps)
    if (o.op == op)
      for (const Mode& m : o.modes) out.push_back(m.name);
  return out;
}

std::vector<VectorSet> generate(const Selection& s) {
  for (const std::string& op : s.ops)
    if (std::none_of(std::begin(kOps), std::end(kOps), [&](const OpVectors& o) { return o.op == op; }))
      fail("vectors", ErrorCode::E_UNSUPPORTED, "no vectors of operation {}; packs cover {}", op,
           fmt::join(vector_operations(), ", "));
  for (const std::string& p : s.profiles)
    if (!find_profile(p)) fail("vectors", ErrorCode::E_UNSUPPORTED, "unknown profile {}; known: {}", p, profile_names(", "));
  const auto wanted = [](const std::vector<std::string>& list, std::string_view v) {
    return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
  };
  std::vector<VectorSet> out;
  for (const OpVectors& op : kOps) {
    if (!wanted(s.ops, op.op)) continue;
    if (!has_profile(op.op)) {
      out.push_back(generate_set(op, "", s));
      continue;
    }
    for (const NamedProfile& p : all_profiles())
      if (wanted(s.profiles, p.name) && (op.only_profile.empty() || op.only_profile == p.name))
        out.push_back(generate_set(op, p.name, s));
  }
  return out;
}

}  // namespace nvfp4::vectors
