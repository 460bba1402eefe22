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

// Whether a profile has been run against its peer's own code under the gate (docs/peers.md is
// generated from this table, reference/profile_proofs.cpp): `peer` names the code and release
// ("" when not proven), `record` the functions, device, declared space and result, or the reason
// it has not been run.
struct ProfileProof {
  std::string_view profile;
  std::string_view peer;
  std::string_view record;
  bool proven() const { return !peer.empty(); }
};

std::span<const ProfileProof> profile_proofs();               // one row per profile, in profile order
const ProfileProof& proof_of(std::string_view profile_name);  // every profile has a row (a test checks)
std::string proof_line(const ProfileProof& p);                // "proven against X" or "not proven: why"

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
