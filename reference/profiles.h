// The named numerics profiles (NUMERICS.md §4.3). Adding a profile is one row in profiles.cpp.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/profile.h"

namespace nvfp4 {

struct NamedProfile {
  std::string_view name;
  Profile knobs;
  std::string_view reproduces;  // what upstream code the profile emulates
  std::string_view unverified;  // which attributions are UNVERIFIED upstream ("" when none)
};

std::span<const NamedProfile> all_profiles();
const NamedProfile* find_profile(std::string_view name);  // nullptr when unknown
const NamedProfile& default_profile();                    // "te"
std::string profile_names(std::string_view separator);    // "te, te-2.13, ..."

// (knob, value) pairs of a profile, in the order of NUMERICS.md §4.3, for listings and docs.
std::vector<std::pair<std::string_view, std::string_view>> knob_values(const Profile& p);

// Every profile that differs from p in exactly one knob, named "KNOB=VALUE": the formula
// variants a mismatch explanation tries.
std::vector<std::pair<std::string, Profile>> single_knob_variants(const Profile& p);

}  // namespace nvfp4
