#include "fuzz/case_generator.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/declaration.h"
#include "cases/registry.h"
#include "fuzz/generators.h"
#include "fuzz/op_generators.h"
#include "reference/profiles.h"

namespace nvfp4::fuzz {

std::vector<std::string> all_operations() {
  std::vector<std::string> ops;
  for (const cases::OperationSpec& op : cases::operations()) ops.emplace_back(op.name);
  return ops;
}

std::string outside_declarations(const CaseSpace& space, const cases::Case& c) {
  for (const cases::Declaration* d : space.declarations)
    if (d)
      if (std::string why = d->outside(c); !why.empty()) return why;
  return "";
}

namespace {

// The values every declaration of the space accepts for op's parameter or dtype, in `all`'s order.
template <class T, class Allowed>
std::vector<T> declared(const CaseSpace& space, std::vector<T> all, Allowed allowed) {
  for (const cases::Declaration* d : space.declarations) {
    if (!d) continue;
    std::vector<T> kept;
    for (const T& v : all)
      if (allowed(*d, v)) kept.push_back(v);
    all = std::move(kept);
  }
  return all;
}

// Per operation: the profiles and input dtypes to draw from.
struct OpDraws {
  std::string op;
  std::vector<std::string> profiles;
  std::vector<io::DType> dtypes;
};

std::vector<OpDraws> op_draws(const CaseSpace& space) {
  std::vector<std::string> ops = space.ops.empty() ? all_operations() : space.ops;
  ops = declared(space, ops, [](const cases::Declaration& d, const std::string& op) { return d.find(op) != nullptr; });
  if (ops.empty()) throw std::invalid_argument("no operation lies inside every backend's declaration");
  std::vector<std::string> all_names = space.profiles;
  if (all_names.empty())
    for (const NamedProfile& p : all_profiles()) all_names.emplace_back(p.name);
  std::vector<OpDraws> draws;
  for (const std::string& op : ops) {
    if (!find_generator(op)) throw std::logic_error("no case generator for operation " + op);
    OpDraws o{op, {}, {}};
    o.profiles = declared(space, all_names, [&](const cases::Declaration& d, const std::string& p) {
      const auto* a = d.allowed(op, "profile");
      return !a || std::find(a->begin(), a->end(), cases::ParamValue(p)) != a->end();
    });
    o.dtypes = declared(space, std::vector<io::DType>{io::DType::BF16, io::DType::F32, io::DType::F16},
                        [&](const cases::Declaration& d, io::DType t) {
                          const auto& ts = d.find(op)->dtypes;
                          return ts.empty() || std::find(ts.begin(), ts.end(), t) != ts.end();
                        });
    if (o.profiles.empty() || o.dtypes.empty())
      throw std::invalid_argument("operation " + op + ": no profile or input dtype lies inside every declaration");
    draws.push_back(std::move(o));
  }
  return draws;
}

// The values of `param` of `op` that every declaration of the space accepts; nullopt: any value.
std::optional<std::vector<cases::ParamValue>> accepted(const CaseSpace& space, const std::string& op,
                                                       const cases::ParamSpec& param) {
  std::optional<std::vector<cases::ParamValue>> values;
  for (const cases::Declaration* d : space.declarations) {
    const std::vector<cases::ParamValue>* a = d ? d->allowed(op, param.name) : nullptr;
    if (!a) continue;
    if (!values) {
      values = *a;
      continue;
    }
    std::erase_if(*values, [&](const cases::ParamValue& v) { return std::find(a->begin(), a->end(), v) == a->end(); });
  }
  return values;
}

std::string list(const std::vector<std::string>& items) { return fmt::format("[{}]", fmt::join(items, ", ")); }

}  // namespace

std::vector<std::string> describe_space(const CaseSpace& space) {
  std::vector<std::string> lines;
  for (const OpDraws& d : op_draws(space)) {
    const cases::OperationSpec& spec = *cases::find_operation(d.op);
    std::vector<std::string> terms;
    if (spec.param("profile")) terms.push_back("profile in " + list(d.profiles));
    for (const cases::ParamSpec& p : spec.params) {
      if (p.name == "profile") continue;
      const std::optional<std::vector<cases::ParamValue>> values = accepted(space, d.op, p);
      if (!values) continue;
      std::vector<std::string> shown;
      for (const cases::ParamValue& v : *values) shown.push_back(cases::param_to_json(v).dump());
      terms.push_back(shown.size() == 1 ? fmt::format("{} = {}", p.name, shown.front())
                                        : fmt::format("{} in {}", p.name, list(shown)));
    }
    for (const cases::TensorSpec& t : spec.inputs)
      if (cases::dtype_declarable(spec, t)) {
        std::vector<std::string> names;
        for (io::DType dt : d.dtypes)
          if (std::find(t.dtypes.begin(), t.dtypes.end(), dt) != t.dtypes.end()) names.emplace_back(io::dtype_name(dt));
        terms.push_back(fmt::format("{} dtype in {}", t.name, list(names)));
      }
    lines.push_back(
        fmt::format("{}: {}", d.op, terms.empty() ? "every parameter any value" : fmt::format("{}", fmt::join(terms, "; "))));
  }
  return lines;
}

rc::Gen<CasePlan> case_plan(const CaseSpace& space) {
  const std::vector<OpDraws> draws = op_draws(space);
  const std::size_t max_dim = space.max_dim;
  return rc::gen::exec([=] {
    CasePlan p;
    cases::CaseRecord& r = p.record;
    const OpDraws& d = *rc::gen::elementOf(draws);
    r.c = cases::make_case(d.op);
    const std::string profile = *rc::gen::elementOf(d.profiles);
    if (r.c.params.has("profile")) r.c.params.set("profile", profile);
    const Shape s = *shape16(max_dim);
    cases::Recipe recipe;
    recipe.dist = *rc::gen::element(cases::Distribution::kRandn, cases::Distribution::kTies, cases::Distribution::kSpecials,
                                    cases::Distribution::kBlockLogUniform, cases::Distribution::kUniform,
                                    cases::Distribution::kSrThresholds);
    recipe.dtype = *rc::gen::elementOf(d.dtypes);
    recipe.seed = *seed();
    recipe.M = std::int64_t(s.M);
    recipe.K = std::int64_t(s.K);
    // Sparse data first, so that shrinking ends on one or two non-zero blocks.
    recipe.active_blocks = *rc::gen::oneOf(rc::gen::inRange<std::int64_t>(1, 9), rc::gen::just<std::int64_t>(-1));
    r.recipes["x"] = recipe;
    find_generator(r.c.op)(p, profile);
    return p;
  });
}

rc::Gen<cases::CaseRecord> case_record(const CaseSpace& space) {
  return rc::gen::map(case_plan(space), [](const CasePlan& p) { return p.build(); });
}

}  // namespace nvfp4::fuzz
