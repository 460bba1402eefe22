// How well a pack tells implementations apart (`vectors --stats`): for every pair of profiles, the
// vectors on which their outputs differ, and for every pattern of the fault catalogue
// (docs/spec/faults.md), the vectors whose outputs the fault changes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "vectors/generate.h"

namespace nvfp4::vectors {

// differing[i][j] (i < j): the vectors of profile i's sets whose outputs differ when profile j runs
// them (a rejection by one side counts as different).
struct ProfilePairs {
  std::vector<std::string> profiles;
  std::vector<std::vector<std::size_t>> differing;
};
ProfilePairs profile_pairs(const std::vector<VectorSet>& sets);

struct FaultReach {
  std::string pattern;
  std::size_t applicable = 0;  // vectors of its operations whose case it applies to
  std::size_t changed = 0;     // of those, the vectors whose outputs its variant changes
  bool detector = false;       // a detector (no variant): `changed` counts the vectors it can see
};
std::vector<FaultReach> fault_reach(const std::vector<VectorSet>& sets);

// Both tables as text.
std::string render_stats(const ProfilePairs& pairs, const std::vector<FaultReach>& faults);

}  // namespace nvfp4::vectors
