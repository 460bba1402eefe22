#include "fuzz/case_generator.h"

#include <stdexcept>

#include "cases/registry.h"
#include "fuzz/generators.h"
#include "fuzz/op_generators.h"
#include "reference/profiles.h"

namespace nvfp4::fuzz {

std::vector<std::string> all_operations() {
  std::vector<std::string> ops;
  for (const OperationSpec& op : operations()) ops.emplace_back(op.name);
  return ops;
}

rc::Gen<CaseRecord> case_record(const CaseSpace& space) {
  const std::vector<std::string> ops = space.ops.empty() ? all_operations() : space.ops;
  for (const std::string& op : ops)
    if (!find_generator(op)) throw std::logic_error("no case generator for operation " + op);
  std::vector<std::string> profiles = space.profiles;
  if (profiles.empty())
    for (const NamedProfile& p : all_profiles()) profiles.emplace_back(p.name);
  const std::size_t max_dim = space.max_dim;
  return rc::gen::exec([=] {
    CaseRecord r;
    r.c = make_case(*rc::gen::elementOf(ops));
    const std::string profile = *rc::gen::elementOf(profiles);
    if (r.c.params.has("profile")) r.c.params.set("profile", profile);
    const Shape s = *shape16(max_dim);
    Recipe recipe;
    recipe.dist = *rc::gen::element(Distribution::kRandn, Distribution::kTies, Distribution::kSpecials,
                                    Distribution::kBlockLogUniform, Distribution::kUniform, Distribution::kSrThresholds);
    recipe.dtype = *rc::gen::element(io::DType::BF16, io::DType::F32, io::DType::F16);
    recipe.seed = *seed();
    recipe.M = std::int64_t(s.M);
    recipe.K = std::int64_t(s.K);
    // Sparse data first, so that shrinking ends on one or two non-zero blocks.
    recipe.active_blocks = *rc::gen::oneOf(rc::gen::inRange<std::int64_t>(1, 9), rc::gen::just<std::int64_t>(-1));
    r.recipes["x"] = recipe;
    r.c.inputs["x"] = generate_tensor(recipe);
    find_generator(r.c.op)(r, profile);
    return r;
  });
}

}  // namespace nvfp4::fuzz
