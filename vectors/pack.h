// A vector pack (docs/vectors.md): a directory with one safetensors file per operation and profile
// (each vector's inputs "<id>.in.<name>" and expected outputs "<id>.out.<name>", its parameters
// and classes in the "nvfp4_vectors" metadata) and manifest.json (the specification and generator
// versions, the seed, the profiles' knobs, what each vector exercises, and each file's SHA-256).
// The same selection gives the same bytes on any machine.
#pragma once

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/corpus_replay.h"
#include "io/safetensors.h"
#include "vectors/generate.h"

namespace nvfp4::vectors {

constexpr int kPackFormatVersion = 1;
constexpr const char* kMetadataKey = "nvfp4_vectors";

// The file of one set, as written.
io::File set_to_file(const VectorSet& set);
// The manifest of the sets' files (`hashes`: each file's SHA-256, in the order of `sets`).
nlohmann::json manifest(const Selection& s, const std::vector<VectorSet>& sets, const std::vector<std::string>& hashes);

// Writes the pack into dir (created, or replaced whole: io::AtomicDirectory). Returns the manifest.
nlohmann::json write_pack(const std::filesystem::path& dir, const Selection& s, const std::vector<VectorSet>& sets);

// The SHA-256 of each set's file, as write_pack would write it, without writing.
std::vector<std::string> set_hashes(const std::vector<VectorSet>& sets);

// The SHA-256 of each file of the selection's pack, as JSON (corpora/vectors/level-1.json): what
// the gate regenerates and compares instead of keeping the pack's files.
nlohmann::json hashes_json(const Selection& s, const std::vector<VectorSet>& sets);
// A hashes file as written (corpora/vectors/level-1.json). Throws io::FormatError.
nlohmann::json read_hashes(const std::filesystem::path& file);
// How two such JSON documents differ, one line each (a file missing from either, a different
// hash or generator); empty when equal.
std::vector<std::string> hash_differences(const nlohmann::json& committed, const nlohmann::json& regenerated);

struct Pack {
  nlohmann::json manifest;
  std::vector<VectorSet> sets;
};

// Reads a pack: the manifest, each file against its SHA-256, the vectors back as cases with their
// expected outputs. Throws io::FormatError naming the file and what is wrong.
Pack read_pack(const std::filesystem::path& dir);

// The sets' vectors as cases to replay, named WHERE/FILE#ID; with stored_outputs, each carries its
// expected outputs, which then stand for the first backend (`vectors --check`), else both run (the gate).
std::vector<compare::ReplaySource> replay_sources(const std::filesystem::path& where, const std::vector<VectorSet>& sets,
                                                  bool stored_outputs);

}  // namespace nvfp4::vectors
