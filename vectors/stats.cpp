#include "vectors/stats.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cases/reference_backend.h"
#include "compare/compare.h"
#include "compare/fault_catalogue.h"
#include "reference/profiles.h"

namespace nvfp4::vectors {
namespace {

bool same_inputs(const cases::TensorMap& a, const cases::TensorMap& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.first == y.first && x.second.dtype == y.second.dtype && x.second.shape == y.second.shape &&
           x.second.bytes == y.second.bytes;
  });
}

bool same_outputs(const cases::TensorMap& a, const cases::TensorMap& b) {
  cases::Outcome x, y;
  x.outputs = a;
  y.outputs = b;
  return compare::compare_outcomes("a", std::move(x), "b", std::move(y)).agree;
}

// The outputs of c under another profile, or nullopt when the reference rejects it there.
std::optional<cases::TensorMap> run_as(cases::Case c, const std::string& profile) {
  c.params.set("profile", profile);
  try {
    return cases::ReferenceBackend().run(c);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace

ProfilePairs profile_pairs(const std::vector<VectorSet>& sets) {
  ProfilePairs out;
  for (const NamedProfile& p : all_profiles())
    if (std::any_of(sets.begin(), sets.end(), [&](const VectorSet& s) { return s.profile == p.name; }))
      out.profiles.emplace_back(p.name);
  const std::size_t n = out.profiles.size();
  out.differing.assign(n, std::vector<std::size_t>(n, 0));
  std::map<std::pair<std::string, std::string>, const VectorSet*> by_key;
  for (const VectorSet& s : sets) by_key[{s.op, s.profile}] = &s;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j)
      for (const VectorSet& s : sets) {
        if (s.profile != out.profiles[i]) continue;
        const auto other = by_key.find({s.op, out.profiles[j]});
        for (std::size_t k = 0; k < s.vectors.size(); ++k) {
          const Vector& v = s.vectors[k];
          // Where profile j's file holds the same inputs (quantize), its expected outputs are the run.
          const Vector* w =
              other != by_key.end() && other->second->vectors.size() == s.vectors.size() ? &other->second->vectors[k] : nullptr;
          std::optional<cases::TensorMap> theirs;
          if (w && same_inputs(w->c.inputs, v.c.inputs))
            theirs = w->expected;
          else
            theirs = run_as(v.c, out.profiles[j]);
          if (!theirs || !same_outputs(v.expected, *theirs)) ++out.differing[i][j];
        }
      }
  return out;
}

std::vector<FaultReach> fault_reach(const std::vector<VectorSet>& sets) {
  std::vector<FaultReach> out;
  for (const compare::FaultPattern& p : compare::fault_patterns()) {
    FaultReach r{std::string(p.name), 0, 0, !p.apply};
    for (const VectorSet& s : sets)
      for (const Vector& v : s.vectors) {
        if (!p.applies(v.c)) continue;
        ++r.applicable;
        if (!p.apply) {
          ++r.changed;
          continue;
        }
        compare::Variant variant{v.c, {}, {}, {}};
        p.apply(variant);
        try {
          if (!same_outputs(v.expected, compare::run_variant(variant, v.c))) ++r.changed;
        } catch (const Error&) {
          // The variant is not defined on this case (the reference rejects it): no change to count.
        }
      }
    out.push_back(std::move(r));
  }
  return out;
}

std::string render_stats(const ProfilePairs& pairs, const std::vector<FaultReach>& faults) {
  std::string s = "vectors on which two profiles' outputs differ (row profile's vectors, run under the column's):\n";
  std::size_t width = 8;
  for (const std::string& p : pairs.profiles) width = std::max(width, p.size() + 1);
  s += fmt::format("{:<{}}", "", width);
  for (std::size_t j = 1; j < pairs.profiles.size(); ++j) s += fmt::format("{:>{}}", pairs.profiles[j], width);
  s += "\n";
  for (std::size_t i = 0; i + 1 < pairs.profiles.size(); ++i) {
    s += fmt::format("{:<{}}", pairs.profiles[i], width);
    for (std::size_t j = 1; j < pairs.profiles.size(); ++j)
      s += j > i ? fmt::format("{:>{}}", pairs.differing[i][j], width) : fmt::format("{:>{}}", "", width);
    s += "\n";
  }
  s += "\nvectors each fault-catalogue pattern changes (of the vectors it applies to):\n";
  for (const FaultReach& f : faults)
    s += fmt::format("{:<28} {:>7} of {:>7}{}\n", f.pattern, f.changed, f.applicable,
                     f.detector ? "  (a detector: the vectors it can see)" : "");
  return s;
}

}  // namespace nvfp4::vectors
