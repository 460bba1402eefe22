// Cases as files: a safetensors file whose tensors are the case's inputs and whose __metadata__
// holds the case description as JSON (key "nvfp4_case"), so a user can open it from Python.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cases/case.h"
#include "cases/operation.h"
#include "cases/recipe.h"

namespace nvfp4::cases {

// Format 2 stores exactly the operation's parameters; format 1 (read, never written) stored every
// operation's fields side by side, and its foreign fields are ignored when read.
constexpr int kCaseFormatVersion = 2;

struct CaseRecord {
  Case c;
  std::map<std::string, Recipe> recipes;  // inputs that a recipe generates (tensor stored too)
  std::string origin;                     // who made it: "seed corpus", "fuzz campaign seed=.. shard=..", "regression #.."
  std::string note;                       // free text: what the case exercises, the upstream bug it reproduces
  // The verdict with which a campaign saved it ("mismatch", "crash", ...; compare/compare.h), so
  // that replay can tell whether it still fails the same way; "" for seed and regression cases.
  std::string found;
};

// The description JSON (operation, parameters, recipes, origin, note, format version).
nlohmann::json describe_case(const CaseRecord& r);
io::File case_to_file(const CaseRecord& r);
// The parameters of operation `op` from their JSON object (the registry's encoding, as case files
// store them), the others at their defaults. Throws io::FormatError naming an unknown parameter
// or a value of the wrong type or set.
Params params_from_json(const OperationSpec& op, const nlohmann::json& params);

// Reads a case; an input whose tensor is absent is regenerated from its recipe. Throws
// io::FormatError (with `origin` in the message) on a missing/invalid description.
CaseRecord case_from_file(const io::File& f, std::string_view origin);

}  // namespace nvfp4::cases
