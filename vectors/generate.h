// Conformance vectors: the systematic cases of docs/vectors.md, each a regime and a pattern
// (vectors/classes.h) under one mode of an operation, with the reference's outputs. The same
// selection gives the same vectors, bit for bit, on any machine: the inputs come from integer
// arithmetic and single roundings only, and the seed drives SplitMix64.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cases/case.h"
#include "vectors/classes.h"

namespace nvfp4::vectors {

// Bumped when any vector of any level changes for the same seed (a new class, a new mode).
constexpr int kGeneratorVersion = 3;
// The seed of the packs the gate replays and whose hashes corpora/vectors/ keeps.
constexpr std::uint64_t kDefaultSeed = 1;

struct Vector {
  std::string id;  // "v0000": unique in its file, in generation order
  std::string regime, pattern, mode;
  cases::Case c;  // the operation, its parameters and inputs
  cases::TensorMap expected;
};

// The vectors of one operation under one profile ("" for an operation without one): one file.
struct VectorSet {
  std::string op, profile;
  std::vector<Vector> vectors;
  std::string file_name() const;  // "quantize-te.safetensors", "rht.safetensors"
};

struct Selection {
  Level level = Level::k1;
  std::uint64_t seed = kDefaultSeed;
  std::vector<std::string> ops, profiles;  // empty: all
};

// The operations packs cover, in pack order, and each one's modes (docs/vectors.md's tables).
std::vector<std::string_view> vector_operations();
std::vector<std::string_view> operation_modes(std::string_view op);

// Every set of the selection, in pack order (operations, then profiles in the profile table's
// order). Throws nvfp4::Error (E_UNSUPPORTED) for an operation no pack covers or an unknown profile.
std::vector<VectorSet> generate(const Selection& s);

}  // namespace nvfp4::vectors
