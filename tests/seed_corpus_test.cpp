// The seed corpus's family table (cases/seeds/seed_corpus.h): every operation family of the
// registry has its row, each row builds cases of its own family's operations only, and every
// profile an operation allows has a seed case of that operation or a stated reason for none.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "cases/registry.h"
#include "cases/seeds/seed_corpus.h"

namespace nvfp4 {
namespace {

TEST(SeedCorpus, EveryRegistryFamilyHasOneRowAndEveryRowAFamily) {
  std::set<std::string> families, rows;
  for (const cases::OperationSpec& op : cases::operations()) families.emplace(op.family);
  for (const cases::SeedFamily& f : cases::seed_families()) EXPECT_TRUE(rows.emplace(f.family).second) << f.family << " twice";
  EXPECT_EQ(rows, families);
}

TEST(SeedCorpus, EachFamilyBuildsCasesOfItsOwnOperationsOnly) {
  for (const cases::SeedFamily& f : cases::seed_families()) {
    std::vector<cases::CaseRecord> cases;
    f.add(cases);
    EXPECT_FALSE(cases.empty()) << f.family;
    for (const cases::CaseRecord& r : cases) EXPECT_EQ(cases::operation(r.c.op).family, f.family) << r.note;
  }
}

bool listed(const cases::SeedFamily& f, std::string_view op, std::string_view profile) {
  for (const cases::UnseededProfiles& u : f.unseeded)
    if ((u.op == "*" || u.op == op) && std::find(u.profiles.begin(), u.profiles.end(), profile) != u.profiles.end()) return true;
  return false;
}

TEST(SeedCorpus, EveryAllowedProfileIsSeededOrListedWithAReasonNeverBoth) {
  std::map<std::string, std::set<std::string>> seeded;  // op -> profiles of its seed cases
  for (const cases::CaseRecord& r : cases::seed_corpus())
    if (r.c.params.has("profile")) seeded[r.c.op].insert(r.c.params.text("profile"));
  std::size_t checked = 0;
  for (const cases::SeedFamily& f : cases::seed_families()) {
    for (const cases::UnseededProfiles& u : f.unseeded) {
      EXPECT_FALSE(u.why.empty()) << f.family;
      EXPECT_TRUE(u.op == "*" || (cases::find_operation(u.op) && cases::find_operation(u.op)->family == f.family)) << u.op;
    }
    for (const cases::OperationSpec& op : cases::operations()) {
      const cases::ParamSpec* profile = op.param("profile");
      if (op.family != f.family || !profile) continue;
      for (const cases::UnseededProfiles& u : f.unseeded)
        for (std::string_view p : u.profiles)
          EXPECT_NE(std::find(profile->allowed.begin(), profile->allowed.end(), p), profile->allowed.end())
              << f.family << " lists '" << p << "', which " << op.name << " does not allow";
      for (const std::string& p : profile->allowed) {
        const bool has_case = seeded[std::string(op.name)].count(p) > 0;
        EXPECT_NE(has_case, listed(f, op.name, p))
            << op.name << " under " << p
            << (has_case ? ": has a seed case, yet is listed as unseeded"
                         : ": no seed case and no stated reason (cases/seeds/seed_corpus.cpp)");
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100u);
}

}  // namespace
}  // namespace nvfp4
