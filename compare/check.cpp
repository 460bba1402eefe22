#include "compare/check.h"

#include <algorithm>
#include <cstring>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cases/operation.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/producer_tensors.h"
#include "io/tensor_convert.h"
#include "reference/arith.h"
#include "reference/error.h"
#include "reference/scale_layout.h"

namespace nvfp4::compare {
namespace {

using nlohmann::json;

constexpr const char* kRowwise[] = {"data", "scale", "amax"};
constexpr const char* kColumnwise[] = {"data_t", "scale_t", "amax_t"};
constexpr const char* kSuffixes[] = {"", "_t"};

bool given(const CheckRequest& req, const char* name) { return req.params.count(name) > 0; }

std::string joined(const std::vector<std::string>& names) { return fmt::format("{}", fmt::join(names, ", ")); }

std::vector<std::string> names_of(const cases::TensorMap& m) {
  std::vector<std::string> names;
  for (const auto& [name, t] : m) names.push_back(name);
  return names;
}

bool has_output(const cases::OperationSpec& op, std::string_view name) {
  return std::any_of(op.outputs.begin(), op.outputs.end(),
                     [&](const cases::TensorSpec& t) { return t.name == name || t.name == "*"; });
}

// A parameter's command-line text as the JSON that case files hold, so that the registry's own
// parser (param_from_json) checks it.
json param_json(const cases::ParamSpec& p, const std::string& text) {
  switch (p.type) {
    case cases::ParamType::kEnum:
      return text;
    case cases::ParamType::kF32Bits:
      return text == "null" || text == "none" ? json(nullptr) : json{{"bits", text}};
    case cases::ParamType::kIntList:
      if (!text.starts_with("[")) return param_json(p, "[" + text + "]");
      [[fallthrough]];
    default: {
      json j = json::parse(text, nullptr, false);
      return j.is_discarded() ? json(text) : j;
    }
  }
}

void set_param(const cases::OperationSpec& op, const std::string& name, const std::string& text, cases::Case& c) {
  const cases::ParamSpec* p = op.param(name);
  // An unknown name is stored as text so that validate_params names it with the known ones.
  c.params.set(name, p ? cases::param_from_json(op, *p, param_json(*p, text)) : cases::ParamValue(text));
  cases::validate_params(c);
}

// Every --map name must be one of the operation's tensors, unless its outputs have free names.
void check_renames(const cases::OperationSpec& op, const std::map<std::string, std::string>& renames) {
  for (const auto& [ours, theirs] : renames)
    if (!op.input(ours) && !has_output(op, ours)) {
      std::vector<std::string> inputs, outputs;
      for (const cases::TensorSpec& t : op.inputs) inputs.emplace_back(t.name);
      for (const cases::TensorSpec& t : op.outputs) outputs.emplace_back(t.name);
      fail("check", ErrorCode::E_UNSUPPORTED, "--map {}={}: {} has no tensor '{}' (inputs: {}; outputs: {})", ours, theirs,
           op.name, ours, joined(inputs), joined(outputs));
    }
}

// The case's inputs from X: each input of the operation under its name or its --map name; an
// operation of one input takes X's only tensor, whatever its name.
cases::TensorMap case_inputs(const cases::OperationSpec& op, const CheckRequest& req, std::vector<std::string>& notes) {
  if (op.any_inputs()) return req.inputs;
  std::map<std::string, std::string> renames;
  for (const auto& [ours, theirs] : req.renames)
    if (op.input(ours)) renames[ours] = theirs;
  const RenamedTensors x = rename_tensors(req.inputs, renames, "X");
  cases::TensorMap out;
  std::vector<std::string> used;
  for (const cases::TensorSpec& t : op.inputs) {
    const std::string name(t.name);
    if (x.tensors.count(name)) {
      out[name] = x.tensors.at(name);
      used.push_back(x.stored_name(name));
    } else if (op.inputs.size() == 1 && req.inputs.size() == 1) {
      out[name] = req.inputs.begin()->second;
      used.push_back(req.inputs.begin()->first);
      notes.push_back(fmt::format("input {}: X's only tensor, '{}'", name, used.back()));
    } else if (!t.optional) {
      fail("check", ErrorCode::E_UNSUPPORTED, "X holds no tensor '{}' (it holds: {}); name it with --map {}=NAME", name,
           joined(names_of(req.inputs)), name);
    }
  }
  std::vector<std::string> unread;
  for (const auto& [name, t] : req.inputs)
    if (std::find(used.begin(), used.end(), name) == used.end()) unread.push_back(name);
  if (!unread.empty()) notes.push_back(fmt::format("ignored in X (not inputs of {}): {}", op.name, joined(unread)));
  return out;
}

// Quantize parameters that THEIRS' tensor names and shapes determine: the direction (which copies
// it holds) and row_scaled (one amax per row of x, or per column for the columnwise copy).
void infer_from_names_and_shapes(const CheckRequest& req, const RenamedTensors& theirs, cases::Case& c,
                                 std::vector<std::string>& notes) {
  const auto held = [&](std::span<const char* const> names) {
    std::vector<std::string> found;
    for (const char* n : names)
      if (theirs.tensors.count(n)) found.emplace_back(n);
    return found;
  };
  const std::vector<std::string> row = held(kRowwise), col = held(kColumnwise);
  if (!given(req, "direction") && !(row.empty() && col.empty())) {
    const char* d = row.empty() ? "columnwise" : col.empty() ? "rowwise" : "both";
    c.params.set("direction", std::string(d));
    std::vector<std::string> all = row;
    all.insert(all.end(), col.begin(), col.end());
    notes.push_back(fmt::format("direction={} (inferred: THEIRS holds {})", d, joined(all)));
  }
  const io::Tensor& x = cases::case_input(c, "x");
  if (given(req, "row_scaled") || x.shape.size() != 2) return;
  const auto per_row = [&](const char* name, std::int64_t n) {
    const auto it = theirs.tensors.find(name);
    return n > 1 && it != theirs.tensors.end() && it->second.shape == std::vector<std::int64_t>{n};
  };
  if (per_row("amax", x.shape[0]) || per_row("amax_t", x.shape[1])) {
    c.params.set("row_scaled", true);
    notes.push_back("row_scaled=true (inferred: THEIRS' amax holds one value per row)");
  }
}

bool same_f32(std::uint32_t a, std::uint32_t b) { return a == b || (is_nan(float_of(a)) && is_nan(float_of(b))); }

std::uint32_t f32_bits(const io::Tensor& t) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, t.bytes.data(), 4);
  return bits;
}

// The amax override THEIRS implies: its one global amax (amax and amax_t, F32 [1], equal) where
// that is not the amax the reference computes from x. A producer given an amax (delayed scaling,
// calibration, one amax over shards) stores the amax it quantized with.
std::optional<std::uint32_t> their_amax(const cases::TensorMap& reference, const RenamedTensors& theirs) {
  std::optional<std::uint32_t> bits;
  bool differs = false;
  for (const char* name : {"amax", "amax_t"}) {
    const auto ref = reference.find(name), t = theirs.tensors.find(name);
    if (ref == reference.end() || t == theirs.tensors.end()) continue;
    const std::vector<std::int64_t> one{1};
    if (t->second.dtype != io::DType::F32 || t->second.shape != one || ref->second.shape != one) return std::nullopt;
    const std::uint32_t b = f32_bits(t->second);
    if (bits && !same_f32(*bits, b)) return std::nullopt;
    bits = b;
    differs |= !same_f32(b, f32_bits(ref->second));
  }
  return differs ? bits : std::nullopt;
}

// The compact scale matrix of a quantize copy without its padding: [rows of data, K/16].
std::vector<std::int64_t> unpadded_scale_shape(const cases::TensorMap& reference, const std::string& suffix) {
  const io::Tensor& data = reference.at("data" + suffix);
  return {data.shape.at(0), data.shape.at(1) / 8};
}

// Whether THEIRS' scales are swizzled, for a reference computed with compact scales. A scale
// stored without padding is compact; a padded one is in the layout whose reference bytes more of
// its bytes equal (compact on a tie), since the shape alone does not tell.
bool infer_swizzled(const cases::TensorMap& reference, const RenamedTensors& theirs, std::vector<std::string>& notes) {
  std::size_t bytes = 0, compact = 0, swizzled = 0;
  for (const std::string suffix : kSuffixes) {
    const auto ref = reference.find("scale" + suffix), t = theirs.tensors.find("scale" + suffix);
    if (ref == reference.end() || t == theirs.tensors.end() || io::dtype_size(t->second.dtype) != 1) continue;
    if (t->second.shape == unpadded_scale_shape(reference, suffix) && t->second.shape != ref->second.shape) {
      notes.push_back(fmt::format("scale_layout=compact (inferred: their {} is stored without padding)", theirs.label(t->first)));
      return false;
    }
    if (t->second.shape != ref->second.shape) continue;
    const ByteMatrix c = io::to_byte_matrix(ref->second, "check", t->first), s = swizzle_scales(c);
    for (std::size_t i = 0; i < c.size(); ++i) {
      compact += t->second.bytes[i] == c.data()[i];
      swizzled += t->second.bytes[i] == s.data()[i];
    }
    bytes += c.size();
  }
  if (bytes == 0) return false;
  const bool swizzle = swizzled > compact;
  notes.push_back(
      fmt::format("scale_layout={} (inferred: their scale bytes equal the reference's at {} of {} positions "
                  "in the swizzled layout, at {} in the compact one)",
                  swizzle ? "swizzled" : "compact", swizzled, bytes, compact));
  return swizzle;
}

ErrorCode shape_code(const std::string& name) {
  if (name.starts_with("scale")) return ErrorCode::E_SCALE_SHAPE;
  if (name.starts_with("amax") || name == "global_scale") return ErrorCode::E_AMAX_SHAPE;
  return ErrorCode::E_DATA_SHAPE;
}

// expected/actual: the reference's outputs that THEIRS holds, and THEIRS' tensors as them.
void collect(const cases::OperationSpec& op, const CheckRequest& req, const RenamedTensors& theirs, CheckResult& r) {
  const bool compact_scales = op.name == "quantize" && r.c.params.text("scale_layout") == "compact";
  std::vector<std::string> absent;
  for (const auto& [name, ref] : r.reference) {
    const auto it = theirs.tensors.find(name);
    if (it == theirs.tensors.end()) {
      absent.push_back(name);
      continue;
    }
    std::optional<std::vector<std::int64_t>> unpadded;
    if (compact_scales && name.starts_with("scale")) unpadded = unpadded_scale_shape(r.reference, name.substr(5));
    r.expected[name] = ref;
    r.actual[name] = as_reference_tensor(it->second, ref, theirs.label(name), unpadded, shape_code(name), r.notes);
    if (theirs.stored.count(name)) r.stored_names[name] = theirs.stored.at(name);
  }
  if (r.expected.empty())
    fail("check", ErrorCode::E_UNSUPPORTED,
         "THEIRS holds none of the reference's outputs ({}); it holds: {}; name them with --map, e.g. --map {}=NAME",
         joined(absent), req.theirs.empty() ? "no tensors" : joined(names_of(req.theirs)), absent.front());
  std::vector<std::string> ignored;
  for (const auto& [name, t] : req.theirs)
    if (std::none_of(r.expected.begin(), r.expected.end(), [&](const auto& e) { return theirs.stored_name(e.first) == name; }))
      ignored.push_back(name);
  for (const auto& [ours, stored] : r.stored_names) r.notes.push_back(fmt::format("{}: THEIRS' '{}'", ours, stored));
  if (!absent.empty()) r.notes.push_back(fmt::format("not in THEIRS, not compared: {}", joined(absent)));
  if (!ignored.empty())
    r.notes.push_back(fmt::format("ignored in THEIRS (not outputs of {} under these parameters): {}", op.name, joined(ignored)));
}

ByteMatrix compact_scale(const io::Tensor& t, bool swizzled) {
  const ByteMatrix m = io::to_byte_matrix(t, "check", "scale");
  return swizzled ? unswizzle_scales(m) : m;
}

// Quantize blocks (see BlockCount) of every compared copy.
BlockCount quantize_blocks(const CheckResult& r) {
  BlockCount n;
  const bool swizzled = r.c.params.text("scale_layout") == "swizzled";
  for (const std::string suffix : kSuffixes) {
    const std::string data = "data" + suffix, scale = "scale" + suffix;
    const bool d = r.actual.count(data), s = r.actual.count(scale);
    if (!d && !s) continue;
    const ByteMatrix ed = io::to_byte_matrix(r.reference.at(data), "check", data);
    const ByteMatrix ad = d ? io::to_byte_matrix(r.actual.at(data), "check", data) : ed;
    const ByteMatrix es = compact_scale(r.reference.at(scale), swizzled);
    const ByteMatrix as = s ? compact_scale(r.actual.at(scale), swizzled) : es;
    for (std::size_t row = 0; row < ed.shape(0); ++row)
      for (std::size_t j = 0; j < ed.shape(1) / 8; ++j) {
        bool same = es(row, j) == as(row, j);
        for (std::size_t k = 8 * j; k < 8 * j + 8; ++k) same &= ed(row, k) == ad(row, k);
        ++n.total;
        n.matching += same;
      }
  }
  return n;
}

BlockCount element_blocks(const CheckResult& r) {
  BlockCount n;
  for (const auto& [name, t] : r.expected) n.total += std::size_t(t.numel());
  n.matching = n.total;
  for (const TensorDiff& d : r.diffs) n.matching -= d.mismatches;
  return n;
}

// a ranks before b (identify_profile's order).
bool better(const CheckResult& a, const CheckResult& b) {
  const auto lhs = a.blocks.matching * b.blocks.total, rhs = b.blocks.matching * a.blocks.total;
  if (lhs != rhs) return lhs > rhs;
  if (a.match() != b.match()) return a.match();
  return a.expected.size() > b.expected.size();
}

}  // namespace

std::string BlockCount::percent() const {
  const std::size_t permille = total ? matching * 1000 / total : 1000;
  return fmt::format("{}.{}%", permille / 10, permille % 10);
}

CheckResult check_outputs(const CheckRequest& req) {
  const cases::OperationSpec& op = cases::operation(req.op);
  check_renames(op, req.renames);
  CheckResult r;
  r.c = cases::make_case(op.name);
  for (const auto& [name, text] : req.params) set_param(op, name, text, r.c);
  r.c.inputs = case_inputs(op, req, r.notes);
  std::map<std::string, std::string> output_renames;
  for (const auto& [ours, theirs] : req.renames)
    if (!op.input(ours)) output_renames[ours] = theirs;
  const RenamedTensors theirs = rename_tensors(req.theirs, output_renames, "THEIRS");

  const bool quantize = op.name == "quantize";
  if (quantize) infer_from_names_and_shapes(req, theirs, r.c, r.notes);
  cases::ReferenceBackend reference;
  r.reference = reference.run(r.c);
  // An amax override is defined neither for row-scaled quantization nor with rht.
  if (quantize && !given(req, "amax") && !r.c.params.flag("row_scaled") && !r.c.params.flag("rht"))
    if (const std::optional<std::uint32_t> bits = their_amax(r.reference, theirs)) {
      const std::uint32_t own = f32_bits(r.reference.count("amax") ? r.reference.at("amax") : r.reference.at("amax_t"));
      r.c.params.set("amax", cases::F32Bits{*bits});
      r.notes.push_back(
          fmt::format("amax=0x{:08X} (inferred: THEIRS' amax, not x's own 0x{:08X}; --param amax=null compares "
                      "with x's own)",
                      *bits, own));
      r.reference = reference.run(r.c);
    }
  if (quantize && !given(req, "scale_layout") && infer_swizzled(r.reference, theirs, r.notes)) {
    r.c.params.set("scale_layout", std::string("swizzled"));
    r.reference = reference.run(r.c);
  }
  collect(op, req, theirs, r);
  r.diffs = diff_outputs(r.expected, r.actual);
  if (quantize) r.blocks = quantize_blocks(r);
  if (r.blocks.total == 0) r.blocks = element_blocks(r);
  return r;
}

Explanation explain_check(const CheckResult& r) {
  cases::TensorMap actual = r.reference;  // what THEIRS does not hold cannot differ
  for (const auto& [name, t] : r.actual) actual[name] = t;
  return explain(r.c, r.reference, actual);
}

std::vector<ProfileMatch> identify_profile(const CheckRequest& req) {
  const cases::ParamSpec* profile = cases::operation(req.op).param("profile");
  if (!profile) fail("check", ErrorCode::E_UNSUPPORTED, "--identify: {} has no profile parameter", req.op);
  if (given(req, "profile")) fail("check", ErrorCode::E_UNSUPPORTED, "--identify tries every profile: give none");
  std::vector<ProfileMatch> out;
  std::optional<Error> first_rejection;
  for (const std::string& name : profile->allowed) {
    CheckRequest one = req;
    one.params["profile"] = name;
    try {
      out.push_back({name, check_outputs(one), ""});
    } catch (const Error& e) {
      if (!first_rejection) first_rejection = e;
      out.push_back({name, std::nullopt, e.what()});
    }
  }
  if (std::none_of(out.begin(), out.end(), [](const ProfileMatch& m) { return m.result.has_value(); })) throw *first_rejection;
  std::stable_sort(out.begin(), out.end(), [](const ProfileMatch& a, const ProfileMatch& b) {
    if (a.result && b.result) return better(*a.result, *b.result);
    return a.result.has_value() && !b.result.has_value();
  });
  return out;
}

}  // namespace nvfp4::compare
