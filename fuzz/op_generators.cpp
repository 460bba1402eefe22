#include "fuzz/op_generators.h"

#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "fuzz/generators.h"
#include "io/tensor_convert.h"
#include "reference/amax.h"
#include "reference/fused_scale.h"
#include "reference/grouped_layout.h"
#include "reference/hadamard.h"
#include "reference/layout.h"
#include "reference/mma.h"
#include "reference/partition.h"
#include "reference/scale_layout.h"

#include <numeric>

#include <xtensor/xview.hpp>

namespace nvfp4::fuzz {
namespace {

// Global amax overrides the harness must cover (§3.5 special cases), then arbitrary bit patterns.
rc::Gen<std::optional<float>> amax_override() {
  static const std::vector<std::uint32_t> kSpecial = {0x00000000, 0x7F800000, 0x7FC00000, 0x00000001, 0x006CE3EE,
                                                      0x05280000, 0x05280001, 0x7F7FFFFF, 0x46A80000, 0x40C00000};
  return rc::gen::weightedOneOf<std::optional<float>>({
      {6, rc::gen::just(std::optional<float>())},
      {2, rc::gen::map(rc::gen::elementOf(kSpecial), [](std::uint32_t b) { return std::optional<float>(float_of(b)); })},
      {1, rc::gen::map(float_bits(), [](std::uint32_t b) { return std::optional<float>(float_of(b & 0x7FFFFFFFu)); })},
  });
}

// A u64 Philox seed or offset: arbitrary, or at the 2^32 and 2^64 boundaries where the counter's
// and key's words carry.
rc::Gen<std::uint64_t> counter_word() {
  static const std::vector<std::uint64_t> kEdges = {
      0, 1, 0xFFFFFFFFull, 0x100000000ull, 0x100000001ull, 0xFFFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFEull, 0x8000000000000000ull};
  return rc::gen::weightedOneOf<std::uint64_t>({{1, rc::gen::elementOf(kEdges)}, {2, rc::gen::arbitrary<std::uint64_t>()}});
}

// The transform's sign mask: TransformerEngine's, the plain Hadamard transform, or any 16 bits.
rc::Gen<std::uint64_t> rht_mask() {
  return rc::gen::weightedOneOf<std::uint64_t>(
      {{2, rc::gen::just<std::uint64_t>(kRhtDefaultMask)},
       {1, rc::gen::just<std::uint64_t>(0)},
       {2, rc::gen::map(rc::gen::arbitrary<std::uint16_t>(), [](std::uint16_t m) { return std::uint64_t(m); })}});
}

// The transform takes BF16: the case's x generated from its recipe as BF16.
void as_bf16_input(CasePlan& p) { p.record.recipes.at("x").dtype = io::DType::BF16; }

// The quantized tensor a dequantize or transpose case starts from: the reference's output for
// the recipe's data under the case's profile.
cases::TensorMap quantized(const cases::Recipe& x, const std::string& profile, BlockShape block, bool row_scaled) {
  cases::Case q = cases::make_case("quantize");
  q.params.set("profile", profile);
  cases::set_quantize_params(q, block, Direction::kRowwise, row_scaled);
  q.inputs["x"] = cases::generate_tensor(x);
  return cases::ReferenceBackend().run(q);
}

// Where a cut point falls, drawn independently of the weights' shapes so that RapidCheck can
// shrink the shapes while the cut keeps its kind and relative position.
struct CutSpec {
  enum Kind { kUniform, kOdd, kByte, kTile, kRow, kWeight } kind = kUniform;
  std::uint32_t weight = 0, position = 0;  // which weight; position in units of 2^-16 of its range
  int delta = 0;                           // -1, 0 or +1 element off a boundary
};

rc::Gen<CutSpec> cut_spec() {
  return rc::gen::exec([] {
    CutSpec c;
    c.kind = *rc::gen::weightedElement<CutSpec::Kind>({{2, CutSpec::kUniform},
                                                       {3, CutSpec::kOdd},
                                                       {1, CutSpec::kByte},
                                                       {1, CutSpec::kTile},
                                                       {1, CutSpec::kRow},
                                                       {1, CutSpec::kWeight}});
    c.weight = *rc::gen::inRange<std::uint32_t>(0, 4);
    c.position = *rc::gen::inRange<std::uint32_t>(0, 1u << 16);
    c.delta = *rc::gen::element(0, -1, 1);
    return c;
  });
}

// A flat cut point in [0, total] of the concatenation of weights with these shapes: uniform, odd,
// or at a byte, tile (16-column segment), row or weight boundary, or one element off one of those.
std::int64_t place_cut(const CutSpec& c, const std::vector<Shape>& shapes) {
  std::vector<std::int64_t> elements;
  for (const Shape& s : shapes) elements.push_back(std::int64_t(s.M * s.K));
  const std::vector<std::int64_t> offsets = weight_offsets(elements);
  const std::int64_t total = offsets.back();
  const auto scaled = [&](std::int64_t range) { return range * std::int64_t(c.position) >> 16; };  // in [0, range)
  const Shape& w = shapes[c.weight % shapes.size()];
  const std::int64_t start = offsets[c.weight % shapes.size()];
  std::int64_t cut = 0;
  switch (c.kind) {
    case CutSpec::kUniform:
      return scaled(total + 1);
    case CutSpec::kOdd:
      return std::min(total, 2 * scaled(total / 2) + 1);
    case CutSpec::kByte:
      cut = 2 * scaled(total / 2 + 1);
      break;
    case CutSpec::kTile:
      cut = start + scaled(std::int64_t(w.M * w.K / 16)) * 16;
      break;
    case CutSpec::kRow:
      cut = start + scaled(std::int64_t(w.M)) * std::int64_t(w.K);
      break;
    case CutSpec::kWeight:
      cut = start;
      break;
  }
  return std::clamp<std::int64_t>(cut + c.delta, 0, total);
}

// The BF16 values of a weight generated from a recipe (the flow rounds FP32 to BF16 first).
FloatMatrix bf16_weight(const cases::Recipe& r) {
  return io::to_float_matrix(io::from_float_matrix(cases::generate_values(r), io::FloatType::BF16), "generator", "w");
}

// Flat elements [s.start, s.end()) of w.
FloatVector shard_values(const FloatMatrix& w, const Shard& s) {
  FloatVector xs = xt::empty<float>({std::size_t(s.length)});
  std::copy_n(w.data() + s.start, s.length, xs.begin());
  return xs;
}

// A shard of one weight: two cut points of it, in order.
Shard shard_of(Shape s) {
  std::int64_t a = place_cut(*cut_spec(), {s}), b = place_cut(*cut_spec(), {s});
  if (a > b) std::swap(a, b);
  return Shard{a, b - a};
}

Shape shape_of_recipe(const cases::Recipe& x) { return Shape{std::size_t(x.M), std::size_t(x.K)}; }
Shape shape_of(const CasePlan& p) { return shape_of_recipe(p.record.recipes.at("x")); }

// The drawn x's recipe, taken out of the record: the generator builds other inputs from it.
cases::Recipe take_x(CasePlan& p) {
  const cases::Recipe x = p.record.recipes.at("x");
  p.record.recipes.clear();
  return x;
}

// ---- quantize family -------------------------------------------------------------------------

void quantize_case(CasePlan& p, std::string_view) {
  cases::CaseRecord& r = p.record;
  const BlockShape block = *rc::gen::element(BlockShape::k1D, BlockShape::k2D);
  const Direction direction = *rc::gen::element(Direction::kBoth, Direction::kRowwise, Direction::kColumnwise);
  const bool row_scaled = block == BlockShape::k1D && *rc::gen::weightedElement<bool>({{4, false}, {1, true}});
  if (!row_scaled) {
    const std::optional<float> amax = *amax_override();
    if (amax) r.c.params.set("amax", cases::F32Bits{bits_of(*amax)});
  }
  const ScaleLayout layout = *rc::gen::weightedElement<ScaleLayout>({{4, ScaleLayout::kCompact}, {1, ScaleLayout::kSwizzled}});
  cases::set_quantize_params(r.c, block, direction, row_scaled, layout);
  // One case in four each; inRange shrinks towards 0, so a shrunk failure drops SR and rht when
  // they play no part in it.
  if (*rc::gen::inRange(0, 4) == 3) {  // stochastic rounding (§3.18)
    r.c.params.set("rounding", std::string("stochastic"));
    r.c.params.set("seed", *counter_word());
    r.c.params.set("offset", *counter_word());
  }
  // TransformerEngine's wgrad recipe: the columnwise copy of rht(x); BF16 input, 1D, no override.
  if (block == BlockShape::k1D && direction != Direction::kRowwise && !r.c.params.f32("amax") && *rc::gen::inRange(0, 4) == 3) {
    as_bf16_input(p);
    r.c.params.set("rht", true);
    r.c.params.set("rht_mask", *rht_mask());
  }
  // MoE expert weights: x [M, K] seen as E experts [E, M/E, K], each quantized alone.
  const std::int64_t M = r.recipes.at("x").M;
  if (M % 32 == 0 && *rc::gen::inRange(0, 6) == 5) {
    const std::int64_t E = M % 48 == 0 ? 3 : 2;
    const cases::Recipe x = take_x(p);  // the case file stores the 3-D tensor itself
    p.then([x, E](cases::CaseRecord& r) {
      io::Tensor t = cases::generate_tensor(x);
      t.shape = {E, x.M / E, x.K};
      r.c.inputs["x"] = std::move(t);
    });
    r.c.params.set("experts", true);
  }
}

void dequantize_case(CasePlan& p, std::string_view profile) {
  const Shape s = shape_of(p);
  const cases::Recipe x = take_x(p);
  const bool row_scaled = *rc::gen::weightedElement<bool>({{4, false}, {1, true}});
  const bool raw = *rc::gen::weightedElement<bool>({{3, false}, {1, true}});  // raw bytes: every code, NaN scales
  const std::uint32_t sd = raw ? *seed() : 0;
  p.then([x, s, row_scaled, raw, sd, profile = std::string(profile)](cases::CaseRecord& r) {
    const cases::TensorMap q = quantized(x, profile, BlockShape::k1D, row_scaled);
    r.c.inputs = {{"data", q.at("data")}, {"scale", q.at("scale")}, {"amax", q.at("amax")}};
    if (!raw) return;
    r.c.inputs["data"] = io::from_byte_matrix(fill_bytes(s.M, s.K / 2, sd));
    r.c.inputs["scale"] = io::from_byte_matrix(fill_bytes(scale_rows(s.M), scale_cols(s.K), sd + 1));
  });
  p.record.c.params.set("output_dtype",
                        std::string(io::dtype_name(*rc::gen::element(io::DType::F32, io::DType::BF16, io::DType::F16))));
}

// The amax operations read the drawn x as it is.
void amax_case(CasePlan&, std::string_view) {}

// ---- the random Hadamard transform (§3.19) ----------------------------------------------------

void rht_case(CasePlan& p, std::string_view) {
  as_bf16_input(p);
  p.record.c.params.set("rht_mask", *rht_mask());
}

// ---- layouts -----------------------------------------------------------------------------------

void scale_bytes_case(CasePlan& p, std::string_view) {
  const Shape s = shape_of_recipe(take_x(p));
  const std::uint32_t sd = *seed();
  p.then([s, sd](cases::CaseRecord& r) {
    r.c.inputs = {{"scale", io::from_byte_matrix(fill_bytes(scale_rows(s.M), scale_cols(s.K), sd))}};
  });
}

void transpose_packed_case(CasePlan& p, std::string_view) {
  const Shape s = shape_of_recipe(take_x(p));
  const std::uint32_t sd = *seed();
  p.then([s, sd](cases::CaseRecord& r) { r.c.inputs = {{"data", io::from_byte_matrix(fill_bytes(s.M, s.K / 2, sd))}}; });
}

void transpose_scales_2d_case(CasePlan& p, std::string_view profile) {
  const cases::Recipe x = take_x(p);
  p.then([x, profile = std::string(profile)](cases::CaseRecord& r) {
    r.c.inputs = {{"scale", quantized(x, profile, BlockShape::k2D, false).at("scale")}};
  });
  p.record.c.params.set("M", x.M);
  p.record.c.params.set("K", x.K);
}

// ---- the distributed weight cast (TE's path: profile te, docs/NUMERICS.md §3.15-§3.17) --------

// Starts a distributed case: the weight's shape and recipe, no inputs yet.
std::pair<Shape, cases::Recipe> begin_distributed(CasePlan& p) {
  const cases::Recipe recipe = take_x(p);
  return {shape_of_recipe(recipe), recipe};
}

void set_weight_dims(cases::CaseRecord& r, Shape s) {
  r.c.params.set("M", std::int64_t(s.M));
  r.c.params.set("K", std::int64_t(s.K));
}

void amax_partial_case(CasePlan& p, std::string_view) {
  const auto [s, recipe] = begin_distributed(p);
  set_weight_dims(p.record, s);
  const Shard shard = shard_of(s);
  p.record.c.params.set("shard_start", shard.start);
  p.then([recipe, shard](cases::CaseRecord& r) {
    r.c.inputs["xs"] = io::from_bf16_values(shard_values(bf16_weight(recipe), shard));
  });
}

void fused_scale_case(CasePlan& p, std::string_view) {
  const auto [s, recipe] = begin_distributed(p);
  p.record.c.params.set("profile", std::string("te"));
  const std::optional<float> g = *amax_override();
  p.then([recipe, g](cases::CaseRecord& r) {
    const FloatMatrix w = bf16_weight(recipe);
    r.c.inputs["tile_amax"] = io::from_float_matrix(amax_tiles_16x16(w, AmaxRule::IGNORE), io::FloatType::F32);
    r.c.inputs["amax"] = io::from_float_vector(FloatVector({g ? *g : amax_global(w, AmaxRule::IGNORE)}));
  });
}

void partial_cast_case(CasePlan& p, std::string_view) {
  const auto [s, recipe] = begin_distributed(p);
  cases::CaseRecord& plan = p.record;
  plan.c.params.set("profile", std::string("te"));
  set_weight_dims(plan, s);
  const Shard shard = shard_of(s);
  const std::optional<float> g = *amax_override();
  plan.c.params.set("shard_start", shard.start);
  const std::uint32_t sd = *seed();
  const bool whole = *rc::gen::element(true, false);  // the whole prior tensor, or only the shard's bytes
  p.then([s, recipe, shard, g, sd, whole](cases::CaseRecord& r) {
    const FloatMatrix w = bf16_weight(recipe);
    const FusedScale f =
        fused_scale_2d(amax_tiles_16x16(w, AmaxRule::IGNORE), g ? *g : amax_global(w, AmaxRule::IGNORE), GlobalScaleRule::TE);
    r.c.inputs["xs"] = io::from_bf16_values(shard_values(w, shard));
    r.c.inputs["tile_scale"] = io::from_float_matrix(f.tile_scale, io::FloatType::F32);
    r.c.inputs["global_scale"] = io::from_float_vector(FloatVector({f.S}));
    const ByteMatrix prior = fill_bytes(s.M, s.K / 2, sd);  // the nibbles the shard must keep
    if (whole) {
      r.c.inputs["data"] = io::from_byte_matrix(prior);
    } else {
      const auto first = prior.begin() + shard.first_byte();
      r.c.inputs["data"] = io::from_byte_vector(std::vector<std::uint8_t>(first, first + shard.local_bytes()));
    }
  });
}

// The weights stay recipes (the case file stores them so); the plan builds them.
void cast_master_weights_case(CasePlan& p, std::string_view) {
  const auto [s, recipe] = begin_distributed(p);
  cases::CaseRecord& r = p.record;
  r.c.params.set("profile", std::string("te"));
  // One to four weights (the first of shape s); sparse data shrinks to one or two tiles.
  std::vector<Shape> shapes = {s};
  const int extra = *rc::gen::inRange(0, 4);
  for (int i = 0; i < extra; ++i) shapes.push_back(*shape16(64));
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    cases::Recipe w = recipe;
    w.M = std::int64_t(shapes[i].M);
    w.K = std::int64_t(shapes[i].K);
    w.dtype = io::DType::F32;
    w.seed = recipe.seed + i;
    r.recipes["w" + std::to_string(i)] = w;
  }
  // Mostly up to 4 ranks, some up to 16 and 64; shrinks towards one rank.
  const int cap = *rc::gen::weightedElement<int>({{6, 4}, {2, 16}, {1, kMaxRanks}});
  const int ranks = 1 + int(*rc::gen::inRange<std::uint32_t>(0, kMaxRanks) % std::uint32_t(cap));
  std::vector<std::int64_t> cuts;
  for (int i = 1; i < ranks; ++i) cuts.push_back(place_cut(*cut_spec(), shapes));
  std::sort(cuts.begin(), cuts.end());
  r.c.params.set("cuts", std::move(cuts));
}

// ---- GEMM (§3.20) ----------------------------------------------------------------------------

// An operand [rows, K]: quantized random data (realistic scales and codes), or raw bytes (every
// code; scale bytes over the whole E4M3 range, so that block contributions span 2^-20 ... 2^27;
// NaN scale bytes only when `nan`).
struct GemmOperandBytes {
  ByteMatrix data, scale;
  float amax = 1.0f;
};

GemmOperandBytes gemm_operand(std::size_t rows, std::size_t K, bool raw, bool nan, std::uint32_t sd) {
  GemmOperandBytes o;
  if (raw) {
    o.data = fill_bytes(rows, K / 2, sd);
    o.scale = xt::zeros<std::uint8_t>({std::size_t(scale_rows(std::int64_t(rows))), std::size_t(scale_cols(std::int64_t(K)))});
    const ByteMatrix bytes = fill_bytes(rows, K / 16, sd + 1);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t j = 0; j < K / 16; ++j) {
        const std::uint8_t b = bytes(r, j);
        o.scale(r, j) = (!nan && (b & 0x7F) == 0x7F) ? std::uint8_t(b - 1) : b;
      }
    o.amax = std::ldexp(1.0f + float(sd % 1024) / 1024.0f, int(sd % 40) - 20);
    return o;
  }
  const std::size_t padded = (rows + 15) / 16 * 16;
  cases::Case q = cases::make_case("quantize");
  q.inputs["x"] = io::from_float_matrix(fill_data(Shape{padded, K}, Dist(sd % 3), sd), io::FloatType::F32);
  const cases::TensorMap t = cases::ReferenceBackend().run(q);
  const ByteMatrix data = io::to_byte_matrix(t.at("data"), "gemm", "data");
  o.data = xt::view(data, xt::range(0, rows), xt::all());
  o.scale = io::to_byte_matrix(t.at("scale"), "gemm", "scale");
  xt::view(o.scale, xt::range(rows, o.scale.shape(0)), xt::all()) = 0;  // rows past the operand's are padding
  o.amax = io::to_float_vector(t.at("amax"), "gemm", "amax")(0);
  return o;
}

void set_gemm_operand(cases::CaseRecord& r, const std::string& side, const GemmOperandBytes& o, bool swizzled,
                      std::optional<FloatVector> row_amax) {
  r.c.inputs[side + "_data"] = io::from_byte_matrix(o.data);
  r.c.inputs[side + "_scale"] = io::from_byte_matrix(swizzled ? swizzle_scales(o.scale) : o.scale);
  r.c.inputs[side + "_amax"] = io::from_float_vector(row_amax ? *row_amax : FloatVector({o.amax}));
}

// Positive per-row amaxes (row scaling), or one.
FloatVector row_amaxes(std::size_t rows, std::uint32_t sd) {
  std::mt19937 rng(sd);
  std::uniform_int_distribution<int> e(-10, 10);
  FloatVector v = xt::zeros<float>({rows});
  for (float& x : v) x = std::ldexp(1.0f + float(rng() % 8388608u) / 8388608.0f, e(rng));
  return v;
}

// Cancellation: B's rows copy A's with the second half of the blocks negated, so that whole
// block sums cancel exactly and small remainders (where the halves differ) decide the result.
void cancel_blocks(const GemmOperandBytes& a, GemmOperandBytes& b, std::size_t m, std::size_t n, std::size_t K) {
  b.scale = xt::zeros<std::uint8_t>(b.scale.shape());
  for (std::size_t row = 0; row < n; ++row)
    for (std::size_t k = 0; k < K / 2; ++k) {
      const std::uint8_t byte = a.data(row % m, k);
      b.data(row, k) = k >= K / 4 ? std::uint8_t(byte ^ 0x88) : byte;
      if (k % 8 == 0) b.scale(row, k / 8) = a.scale(row % m, k / 8);
    }
  if (K >= 48) b.data(0, 0) ^= 0x01;  // one block differs: its remainder survives
}

// EXACT half the time, else one of the modelled MMA instructions (§3.20.6).
std::string accumulation() {
  std::vector<std::string> mma;
  for (const MmaModel& m : mma_models()) mma.emplace_back(m.name);
  return *rc::gen::weightedOneOf<std::string>({{1, rc::gen::just(std::string("exact"))}, {1, rc::gen::elementOf(mma)}});
}

void gemm_case(CasePlan& p, std::string_view) {
  const Shape s = shape_of_recipe(take_x(p));
  cases::CaseRecord& plan = p.record;
  // M and N: the recipe's, or any size (not multiples of 16, 64 or 128); K: the recipe's, one
  // block, or long (up to 64k with small M and N).
  const std::size_t M =
      *rc::gen::weightedOneOf<std::size_t>({{2, rc::gen::just(s.M)}, {1, rc::gen::inRange<std::size_t>(1, 131)}});
  const std::size_t N =
      *rc::gen::weightedOneOf<std::size_t>({{2, rc::gen::just(s.K)}, {1, rc::gen::inRange<std::size_t>(1, 131)}});
  const bool long_k = *rc::gen::weightedElement<bool>({{12, false}, {1, true}});
  const std::size_t K =
      long_k ? 16 * *rc::gen::elementOf(std::vector<std::size_t>{256, 1024, 4096})
             : *rc::gen::weightedOneOf<std::size_t>({{3, rc::gen::just(s.K)}, {1, rc::gen::just<std::size_t>(16)}});
  const std::size_t m = long_k ? std::min<std::size_t>(M, 8) : M, n = long_k ? std::min<std::size_t>(N, 8) : N;
  const bool raw = *rc::gen::weightedElement<bool>({{2, false}, {1, true}});
  const bool nan = raw && *rc::gen::weightedElement<bool>({{5, false}, {1, true}});
  const bool swizzled = *rc::gen::element(false, true);
  const std::uint32_t sd = *seed();
  const bool cancel = *rc::gen::weightedElement<bool>({{4, false}, {1, true}}) && K >= 32;
  const bool row_scaled = *rc::gen::weightedElement<bool>({{5, false}, {1, true}});
  plan.c.params.set("row_scaled", row_scaled);
  const bool row_amax_a = row_scaled && *rc::gen::element(false, true);
  const bool row_amax_b = row_scaled && *rc::gen::element(false, true);
  plan.c.params.set("scale_layout", std::string(swizzled ? "swizzled" : "compact"));
  const io::DType out = *rc::gen::element(io::DType::F32, io::DType::BF16, io::DType::F16);
  plan.c.params.set("output_dtype", std::string(io::dtype_name(out)));
  plan.c.params.set("accumulation", accumulation());
  int beta = 0;  // 0: no C; 1: beta * C random; 2: C = D itself with beta = -1
  float bv = 0.0f;
  cases::Params before_c;  // the parameters of the GEMM whose D becomes C (beta = 2)
  if (row_scaled) {
    if (*rc::gen::element(false, true)) plan.c.params.set("accumulate", true);
  } else {
    if (*rc::gen::weightedElement<bool>({{4, false}, {1, true}}))
      plan.c.params.set("alpha", cases::F32Bits{*rc::gen::weightedOneOf<std::uint32_t>(
                                     {{3, rc::gen::elementOf(std::vector<std::uint32_t>{0x3F800000, 0x34149B93, 0x7F800000,
                                                                                        0x00000000, 0x00800000, 0xBF800000})},
                                      {1, float_bits()}})});
    beta = *rc::gen::weightedElement<int>({{4, 0}, {1, 1}, {1, 2}});
    if (beta) {
      bv = float_of(*rc::gen::weightedOneOf<std::uint32_t>(
          {{2, rc::gen::elementOf(std::vector<std::uint32_t>{0x3F800000, 0xBF800000, 0x00000000, 0x40000000})},
           {1, finite_float_bits()}}));
      before_c = plan.c.params;
      if (beta == 2) bv = -1.0f;
      plan.c.params.set("beta", cases::F32Bits{bits_of(bv)});
    }
  }
  const bool bias = *rc::gen::weightedElement<bool>({{4, false}, {1, true}});
  if (bias) plan.c.params.set("with_bias", true);
  p.then([=](cases::CaseRecord& r) {
    GemmOperandBytes a = gemm_operand(m, K, raw, nan, sd), b = gemm_operand(n, K, raw, nan, sd + 7);
    if (cancel) cancel_blocks(a, b, m, n, K);
    std::optional<FloatVector> ra, rb;
    if (row_amax_a) ra = row_amaxes(m, sd + 11);
    if (row_amax_b) rb = row_amaxes(n, sd + 13);
    set_gemm_operand(r, "a", a, swizzled, ra);
    set_gemm_operand(r, "b", b, swizzled, rb);
    if (r.c.params.flag("accumulate"))
      r.c.inputs["c"] = io::from_float_matrix(fill_data(Shape{m, n}, Dist::kRandn, sd + 17), io::float_type_of(out, "gemm"));
    if (beta) {
      FloatMatrix cm = fill_data(Shape{m, n}, Dist(sd % 3), sd + 19);
      if (beta == 2) {
        cases::Case d = r.c;
        d.params = before_c;
        d.params.set("output_dtype", std::string("F32"));
        cm = io::to_float_matrix(cases::ReferenceBackend().run(d).at("d"), "gemm", "d");
      }
      r.c.inputs["c"] = io::from_float_matrix(cm, io::FloatType::F32);
    }
    if (bias) r.c.inputs["bias"] = io::from_float_vector(xt::view(fill_data(Shape{1, n}, Dist::kRandn, sd + 23), 0, xt::all()));
  });
}

// ---- grouped (MoE) layouts and GEMMs (§2.4.3, §3.20.5) ---------------------------------------

// 1 to 4 group extents, multiples of 16, empty groups included; `min_total` at least in all.
std::vector<std::int64_t> group_sizes(std::int64_t max_blocks, std::int64_t min_total) {
  const int G = *rc::gen::inRange(1, 5);
  std::vector<std::int64_t> sizes;
  for (int g = 0; g < G; ++g) sizes.push_back(16 * std::int64_t(*rc::gen::inRange<std::int64_t>(0, max_blocks + 1)));
  if (std::accumulate(sizes.begin(), sizes.end(), std::int64_t(0)) < min_total) sizes.back() += min_total;
  return sizes;
}

void grouped_layout_case(CasePlan& p, bool swizzle) {
  take_x(p);
  const bool inner = *rc::gen::element(false, true);
  const std::vector<std::int64_t> sizes = group_sizes(inner ? 12 : 20, 0);
  const std::int64_t total = std::accumulate(sizes.begin(), sizes.end(), std::int64_t(0));
  const std::int64_t other = inner ? 128 * *rc::gen::inRange<std::int64_t>(1, 3) : 4 * *rc::gen::inRange<std::int64_t>(1, 4);
  const std::int64_t rows = inner ? other : scale_rows(total), cols = inner ? scale_cols(total) : other;
  const std::uint32_t sd = *seed();
  p.record.c.params.set("axis", std::string(inner ? "inner" : "outer"));
  p.record.c.params.set("group_sizes", sizes);
  if (!swizzle) p.record.c.params.set("extent", other);
  p.then([=](cases::CaseRecord& r) {
    const ByteMatrix compact = fill_bytes(std::size_t(rows), std::size_t(cols), sd);
    r.c.inputs["scale"] =
        swizzle ? io::from_byte_matrix(compact)
                : io::from_byte_vector(grouped_swizzle(compact, inner ? GroupAxis::kInner : GroupAxis::kOuter, sizes));
  });
}

void grouped_swizzle_case(CasePlan& p, std::string_view) { grouped_layout_case(p, true); }
void grouped_unswizzle_case(CasePlan& p, std::string_view) { grouped_layout_case(p, false); }

io::Tensor stacked(const std::vector<io::Tensor>& parts) {
  io::Tensor t{parts[0].dtype, parts[0].shape, {}};
  t.shape.insert(t.shape.begin(), std::int64_t(parts.size()));
  for (const io::Tensor& p : parts) t.bytes.insert(t.bytes.end(), p.bytes.begin(), p.bytes.end());
  return t;
}

void grouped_gemm_case(CasePlan& p, std::string_view) {
  take_x(p);
  cases::CaseRecord& plan = p.record;
  const bool k_grouped = *rc::gen::element(false, true);
  const std::vector<std::int64_t> sizes = group_sizes(k_grouped ? 6 : 4, 16);
  const std::int64_t total = std::accumulate(sizes.begin(), sizes.end(), std::int64_t(0)), G = std::int64_t(sizes.size());
  const bool raw = *rc::gen::weightedElement<bool>({{2, false}, {1, true}});
  const bool swizzled = *rc::gen::element(false, true);
  const bool row_scaled = !k_grouped && *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  const std::uint32_t sd = *seed();
  const std::size_t N = *rc::gen::inRange<std::size_t>(1, 40);
  plan.c.params.set("grouping", std::string(k_grouped ? "k" : "m"));
  plan.c.params.set("group_sizes", sizes);
  plan.c.params.set("scale_layout", std::string(swizzled ? "swizzled" : "compact"));
  plan.c.params.set("row_scaled", row_scaled);
  plan.c.params.set("accumulation", accumulation());
  plan.c.params.set("output_dtype",
                    std::string(io::dtype_name(*rc::gen::element(io::DType::F32, io::DType::BF16, io::DType::F16))));
  const GroupAxis axis = k_grouped ? GroupAxis::kInner : GroupAxis::kOuter;
  auto grouped_scales = [=](const ByteMatrix& compact) {
    return swizzled ? io::from_byte_vector(grouped_swizzle(compact, axis, sizes)) : io::from_byte_matrix(compact);
  };
  auto amaxes = [](std::size_t n, std::uint32_t s) { return io::from_float_vector(row_amaxes(n, s)); };
  if (k_grouped) {
    const std::size_t M = *rc::gen::inRange<std::size_t>(1, 40);
    p.then([=](cases::CaseRecord& r) {
      const GemmOperandBytes a = gemm_operand(M, std::size_t(total), raw, false, sd),
                             b = gemm_operand(N, std::size_t(total), raw, false, sd + 3);
      r.c.inputs["a_data"] = io::from_byte_matrix(a.data);
      r.c.inputs["a_scale"] = grouped_scales(a.scale);
      r.c.inputs["b_data"] = io::from_byte_matrix(b.data);
      r.c.inputs["b_scale"] = grouped_scales(b.scale);
      r.c.inputs["a_amax"] = amaxes(std::size_t(G), sd + 5);
      r.c.inputs["b_amax"] = amaxes(std::size_t(G), sd + 7);
    });
    return;
  }
  const std::size_t K = 16 * *rc::gen::inRange<std::size_t>(1, 8);
  const bool per_row_b = row_scaled && *rc::gen::element(false, true);  // B's amax per group and row
  p.then([=](cases::CaseRecord& r) {
    const GemmOperandBytes a = gemm_operand(std::size_t(total), K, raw, false, sd);
    r.c.inputs["a_data"] = io::from_byte_matrix(a.data);
    r.c.inputs["a_scale"] = grouped_scales(a.scale);
    r.c.inputs["a_amax"] = amaxes(std::size_t(row_scaled ? total : G), sd + 5);
    std::vector<io::Tensor> data, scale;
    for (std::int64_t g = 0; g < G; ++g) {
      const GemmOperandBytes b = gemm_operand(N, K, raw, false, sd + 11 + std::uint32_t(g));
      data.push_back(io::from_byte_matrix(b.data));
      scale.push_back(io::from_byte_matrix(swizzled ? swizzle_scales(b.scale) : b.scale));
    }
    r.c.inputs["b_data"] = stacked(data);
    r.c.inputs["b_scale"] = stacked(scale);
    r.c.inputs["b_amax"] = amaxes(std::size_t(per_row_b ? G * std::int64_t(N) : G), sd + 7);
  });
}

constexpr GeneratorRow kGenerators[] = {
    {"quantize", quantize_case},
    {"dequantize", dequantize_case},
    {"amax_global", amax_case},
    {"amax_rows", amax_case},
    {"amax_cols", amax_case},
    {"amax_blocks_1x16", amax_case},
    {"amax_blocks_16x1", amax_case},
    {"amax_tiles_16x16", amax_case},
    {"swizzle", scale_bytes_case},
    {"unswizzle", scale_bytes_case},
    {"transpose_packed", transpose_packed_case},
    {"transpose_scales_2d", transpose_scales_2d_case},
    {"amax_partial", amax_partial_case},
    {"fused_scale_2d", fused_scale_case},
    {"partial_cast_2d", partial_cast_case},
    {"cast_master_weights", cast_master_weights_case},
    {"rht", rht_case},
    {"gemm", gemm_case},
    {"grouped_swizzle", grouped_swizzle_case},
    {"grouped_unswizzle", grouped_unswizzle_case},
    {"grouped_gemm", grouped_gemm_case},
};

}  // namespace

std::span<const GeneratorRow> op_generators() { return kGenerators; }

OpGenerator find_generator(std::string_view op) {
  for (const GeneratorRow& g : kGenerators)
    if (g.op == op) return g.generate;
  return nullptr;
}

}  // namespace nvfp4::fuzz
