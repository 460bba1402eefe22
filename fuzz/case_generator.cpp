#include "fuzz/case_generator.h"

#include "fuzz/generators.h"
#include "fuzz/reference_backend.h"
#include "io/tensor_convert.h"
#include "reference/layout.h"
#include "reference/profiles.h"

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

Recipe recipe_for(Shape s, Distribution d, std::uint64_t seed, io::DType dtype) {
  Recipe r;
  r.dist = d;
  r.seed = seed;
  r.M = std::int64_t(s.M);
  r.K = std::int64_t(s.K);
  r.dtype = dtype;
  return r;
}

// The quantized tensor a dequantize or transpose case starts from: the reference's output for
// the recipe's data under the case's profile.
TensorMap quantized(const CaseRecord& base, BlockShape block, bool row_scaled) {
  Case q;
  q.op = Operation::kQuantize;
  q.params = base.c.params;
  q.params.block = block;
  q.params.row_scaled = row_scaled;
  q.params.direction = Direction::kRowwise;
  q.inputs["x"] = base.c.inputs.at("x");
  return ReferenceBackend().run(q);
}

}  // namespace

std::vector<Operation> all_operations() {
  return {Operation::kQuantize,        Operation::kDequantize,      Operation::kAmaxGlobal,     Operation::kAmaxRows,
          Operation::kAmaxCols,        Operation::kAmaxBlocks1x16,  Operation::kAmaxBlocks16x1, Operation::kAmaxTiles16x16,
          Operation::kSwizzle,         Operation::kUnswizzle,       Operation::kTransposePacked, Operation::kTransposeScales2D};
}

rc::Gen<CaseRecord> case_record(const CaseSpace& space) {
  const std::vector<Operation> ops = space.ops.empty() ? all_operations() : space.ops;
  std::vector<std::string> profiles = space.profiles;
  if (profiles.empty())
    for (const NamedProfile& p : all_profiles()) profiles.emplace_back(p.name);
  const std::size_t max_dim = space.max_dim;
  return rc::gen::exec([=] {
    CaseRecord r;
    r.c.op = *rc::gen::elementOf(ops);
    r.c.params.profile = *rc::gen::elementOf(profiles);
    const Shape s = *shape16(max_dim);
    const Distribution dist = *rc::gen::element(Distribution::kRandn, Distribution::kTies, Distribution::kSpecials,
                                                Distribution::kBlockLogUniform, Distribution::kUniform);
    const io::DType dtype = *rc::gen::element(io::DType::BF16, io::DType::F32, io::DType::F16);
    Recipe recipe = recipe_for(s, dist, *seed(), dtype);
    // Sparse data first, so that shrinking ends on one or two non-zero blocks.
    recipe.active_blocks = *rc::gen::oneOf(rc::gen::inRange<std::int64_t>(1, 9), rc::gen::just<std::int64_t>(-1));
    r.recipes["x"] = recipe;
    r.c.inputs["x"] = generate_tensor(recipe);
    CaseParams& p = r.c.params;
    switch (r.c.op) {
      case Operation::kQuantize:
        p.block = *rc::gen::element(BlockShape::k1D, BlockShape::k2D);
        p.direction = *rc::gen::element(Direction::kBoth, Direction::kRowwise, Direction::kColumnwise);
        p.row_scaled = p.block == BlockShape::k1D && *rc::gen::weightedElement<bool>({{4, false}, {1, true}});
        if (!p.row_scaled) p.amax = *amax_override();
        p.scale_layout = *rc::gen::weightedElement<ScaleLayout>({{4, ScaleLayout::kCompact}, {1, ScaleLayout::kSwizzled}});
        break;
      case Operation::kDequantize: {
        const bool row_scaled = *rc::gen::weightedElement<bool>({{4, false}, {1, true}});
        TensorMap q = quantized(r, BlockShape::k1D, row_scaled);
        r.recipes.clear();
        r.c.inputs = {{"data", q.at("data")}, {"scale", q.at("scale")}, {"amax", q.at("amax")}};
        if (*rc::gen::weightedElement<bool>({{3, false}, {1, true}})) {  // raw bytes: every code, NaN scales
          const std::uint32_t sd = *seed();
          r.c.inputs["data"] = io::from_byte_matrix(fill_bytes(s.M, s.K / 2, sd));
          r.c.inputs["scale"] = io::from_byte_matrix(fill_bytes(scale_rows(s.M), scale_cols(s.K), sd + 1));
        }
        p.output_dtype = *rc::gen::element(io::DType::F32, io::DType::BF16, io::DType::F16);
        break;
      }
      case Operation::kSwizzle:
      case Operation::kUnswizzle:
        r.recipes.clear();
        r.c.inputs = {{"scale", io::from_byte_matrix(fill_bytes(scale_rows(s.M), scale_cols(s.K), *seed()))}};
        break;
      case Operation::kTransposePacked:
        r.recipes.clear();
        r.c.inputs = {{"data", io::from_byte_matrix(fill_bytes(s.M, s.K / 2, *seed()))}};
        break;
      case Operation::kTransposeScales2D: {
        const TensorMap q = quantized(r, BlockShape::k2D, false);
        r.recipes.clear();
        r.c.inputs = {{"scale", q.at("scale")}};
        p.M = std::int64_t(s.M);
        p.K = std::int64_t(s.K);
        break;
      }
      default:
        break;  // the amax operations read x
    }
    return r;
  });
}

}  // namespace nvfp4::fuzz
