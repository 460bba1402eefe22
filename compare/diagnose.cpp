#include "compare/diagnose.h"

#include <algorithm>
#include <optional>

#include <xtensor/xview.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/experts.h"
#include "cases/reference_backend.h"
#include "cases/tensor_edit.h"
#include "compare/fault_catalogue.h"
#include "io/tensor_convert.h"
#include "reference/e2m1.h"
#include "reference/e4m3.h"
#include "reference/profiles.h"
#include "reference/scale_layout.h"

namespace nvfp4::compare {
namespace {

using cases::Case;
using cases::TensorMap;

constexpr std::int64_t kMaxSearchElements = 1 << 20;  // larger cases keep their classification only
constexpr std::int64_t kMaxPairElements = 4096;       // pairs of patterns only on small cases
constexpr std::size_t kMaxTies = 3;

// The candidate classes, in the order of docs/spec/faults.md's ranking.
enum class Class { kPattern, kKnob, kProfile, kPair };

struct Candidate {
  Explanation::Cause cause;
  Class cls = Class::kPattern;
  std::size_t changed = 0;           // bytes where the candidate differs from the reference's outputs
  std::size_t order = 0;             // position among the candidates tried
  std::optional<TensorMap> outputs;  // none for a detector
};

bool same_layout(const io::Tensor& a, const io::Tensor& b) { return a.dtype == b.dtype && a.shape == b.shape; }

// Equal under the comparison's rule (compare/diff.h: a NaN equals any NaN of its format).
bool same_tensor(const io::Tensor& a, const io::Tensor& b) {
  if (!same_layout(a, b)) return false;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    if (!same_element(a, b, std::size_t(i))) return false;
  return true;
}

// How a candidate's outputs relate to the actual ones, on the elements where actual differs from
// the expected outputs (a tensor of another shape or dtype differs everywhere).
struct Fit {
  bool reproduces = true, exact = true;
  std::size_t changed = 0;  // elements where the candidate differs from the expected outputs
};

Fit fit(const TensorMap& expected, const TensorMap& actual, const TensorMap& cand) {
  Fit f;
  std::vector<std::string> names;
  for (const TensorMap* m : {&expected, &actual, &cand})
    for (const auto& [n, t] : *m) names.push_back(n);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const std::string& n : names) {
    const auto e = expected.find(n), a = actual.find(n), c = cand.find(n);
    const bool has_e = e != expected.end(), has_a = a != actual.end(), has_c = c != cand.end();
    if (!has_e && !has_a) continue;  // an output only the candidate's profile writes (its exported scale)
    if (has_c && has_e && same_layout(c->second, e->second)) {
      for (std::int64_t i = 0; i < c->second.numel(); ++i) f.changed += !same_element(c->second, e->second, std::size_t(i));
    } else if (has_c || has_e) {
      f.changed += std::size_t((has_c ? c : e)->second.numel());
    }
    if (has_a != has_c) {
      f.reproduces = f.exact = false;
      continue;
    }
    if (!has_a || same_tensor(a->second, c->second)) continue;
    f.exact = false;
    if (!has_e || !same_layout(e->second, a->second) || !same_layout(c->second, a->second)) {
      f.reproduces = false;
      continue;
    }
    for (std::int64_t i = 0; i < a->second.numel() && f.reproduces; ++i) {
      const std::size_t k = std::size_t(i);
      if (!same_element(e->second, a->second, k) && !same_element(c->second, a->second, k)) f.reproduces = false;
    }
  }
  return f;
}

bool same_outputs(const TensorMap& a, const TensorMap& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
           return x.first == y.first && same_tensor(x.second, y.second);
         });
}

std::optional<TensorMap> run_or_none(const Variant& v, const Case& original) {
  try {
    return run_variant(v, original);
  } catch (const std::exception&) {
    return std::nullopt;  // the variant rejects this case (a parameter it changed, say): it does not reproduce it
  }
}

std::int64_t input_elements(const Case& c) {
  std::int64_t n = 0;
  for (const auto& [name, t] : c.inputs) n += t.numel();
  return n;
}

class Diagnosis {
 public:
  Diagnosis(const Case& c, const TensorMap& expected, const TensorMap& actual, const Explanation& x)
      : c_(c), expected_(expected), actual_(actual), x_(x) {}

  std::vector<Candidate> run() {
    std::vector<const FaultPattern*> variants;
    for (const FaultPattern& p : fault_patterns()) {
      if (!p.applies(c_)) continue;
      if (p.detects) {
        if (p.detects(c_, x_)) add({{std::string(p.name), std::string(p.summary), true}, Class::kPattern, 0, 0, std::nullopt});
        continue;
      }
      variants.push_back(&p);
      Variant v{c_, {}, {}, {}};
      p.apply(v);
      try_candidate(v, {std::string(p.name), std::string(p.summary)}, Class::kPattern);
    }
    if (c_.params.has("profile")) knobs_and_profiles();
    if (found_.empty() && input_elements(c_) <= kMaxPairElements) pairs(variants);
    std::sort(found_.begin(), found_.end(), [](const Candidate& a, const Candidate& b) {
      if (a.cause.exact != b.cause.exact) return a.cause.exact;
      if (a.cls != b.cls) return a.cls < b.cls;
      if (a.changed != b.changed) return a.changed < b.changed;
      return a.order < b.order;
    });
    return std::move(found_);
  }

 private:
  void add(Candidate k) {
    k.order = found_.size();
    found_.push_back(std::move(k));
  }

  // Runs v; a candidate that reproduces the actual outputs is kept. Returns its outputs.
  std::optional<TensorMap> try_candidate(const Variant& v, Explanation::Cause cause, Class cls) {
    std::optional<TensorMap> out = run_or_none(v, c_);
    if (!out) return out;
    const Fit f = fit(expected_, actual_, *out);
    if (f.reproduces && f.changed > 0) {
      cause.exact = f.exact;
      add({std::move(cause), cls, f.changed, 0, out});
    }
    return out;
  }

  // The single-knob variants of the case's profile, then the other profiles: a profile is a cause
  // only when one of the knobs in which it differs matters on this case: putting that knob back to
  // the case profile's value changes the profile's outputs.
  void knobs_and_profiles() {
    const std::string& base_name = c_.params.text("profile");
    const Profile base = cases::case_profile(c_);
    for (const auto& [name, knobs] : single_knob_variants(base)) {
      Variant v{c_, {}, {}, {}};
      v.c.knobs = knobs;
      const std::size_t before = found_.size();
      try_candidate(v, {base_name + " with " + name, "the profile's " + name}, Class::kKnob);
      // A knob value that is also a catalogue pattern is named by the pattern alone.
      if (found_.size() > before && named_by_a_pattern(name)) found_.pop_back();
    }
    const auto base_values = knob_values(base);
    for (const NamedProfile& p : all_profiles()) {
      if (p.name == base_name) continue;
      Variant v{c_, {}, {}, {}};
      v.c.knobs = p.knobs;
      const std::size_t before = found_.size();
      try_candidate(v, {"profile " + std::string(p.name), std::string(p.reproduces)}, Class::kProfile);
      if (found_.size() > before && !knob_matters(p.knobs, base_values, *found_.back().outputs)) found_.pop_back();
    }
  }

  // Whether some knob in which `profile` differs from the case's changes its outputs when put back.
  bool knob_matters(const Profile& profile, const std::vector<std::pair<std::string_view, std::string_view>>& base_values,
                    const TensorMap& outputs) const {
    const auto values = knob_values(profile);
    for (const auto& [name, reverted] : single_knob_variants(profile)) {
      const auto r = knob_values(reverted);
      std::size_t k = 0;
      while (k < r.size() && r[k].second == values[k].second) ++k;
      if (k == r.size() || r[k].second != base_values[k].second) continue;  // not a knob put back
      Variant v{c_, {}, {}, {}};
      v.c.knobs = reverted;
      const std::optional<TensorMap> out = run_or_none(v, c_);
      if (!out || !same_outputs(*out, outputs)) return true;
    }
    return false;
  }

  // Whether a pattern found reproducing the case is this knob value (e4m3-overflow-nan is E4M3=TORCH).
  bool named_by_a_pattern(const std::string& knob) const {
    return std::any_of(found_.begin(), found_.end() - 1, [&](const Candidate& k) {
      const FaultPattern* p = k.cls == Class::kPattern ? find_fault_pattern(k.cause.name) : nullptr;
      return p && p->knob == knob;
    });
  }

  void pairs(const std::vector<const FaultPattern*>& variants) {
    for (std::size_t i = 0; i < variants.size(); ++i)
      for (std::size_t j = i + 1; j < variants.size(); ++j) {
        Variant v{c_, {}, {}, {}};
        variants[i]->apply(v);
        variants[j]->apply(v);
        try_candidate(v,
                      {fmt::format("{} + {}", variants[i]->name, variants[j]->name),
                       fmt::format("{}; and {}", variants[i]->summary, variants[j]->summary)},
                      Class::kPair);
      }
  }

  const Case& c_;
  const TensorMap& expected_;
  const TensorMap& actual_;
  const Explanation& x_;
  std::vector<Candidate> found_;
};

// ---- ties ----

std::string e4m3_hex(std::uint8_t b) { return fmt::format("0x{:02X}", b); }

// The pre-cast scale t of a block whose scale byte differs, when it lies halfway between two E4M3 values.
std::optional<std::string> scale_tie(const BlockTrace& t) {
  const float a = abs_f(t.precast);
  const std::uint8_t m = t.scale_byte & 0x7F;
  for (int lo = std::max(0, m - 1); lo <= m && lo + 1 <= 0x7E; ++lo)
    if (a == 0.5f * (e4m3_decode(std::uint8_t(lo)) + e4m3_decode(std::uint8_t(lo + 1))))
      return fmt::format(
          "the pre-cast scale {} of {} block ({}, {}) lies exactly halfway between E4M3 {} and {}; the expected side "
          "rounds to even ({})",
          t.precast, t.direction, t.row, t.block, e4m3_hex(std::uint8_t(lo)), e4m3_hex(std::uint8_t(lo + 1)),
          e4m3_hex(t.scale_byte));
  return std::nullopt;
}

std::vector<std::string> ties(const Explanation& x) {
  std::vector<std::string> out;
  const auto traced = [&](const ElementMismatch& m) -> const BlockTrace* {
    const std::string dir = m.tensor.ends_with("_t") ? "columnwise" : "rowwise";
    const std::int64_t block = m.tensor.starts_with("scale") ? m.col : m.col / 16;
    for (const BlockTrace& t : x.traces)
      if (t.direction == dir && t.row == m.row && t.block == block) return &t;
    return nullptr;
  };
  for (const ElementMismatch& m : x.mismatches) {
    if (out.size() == kMaxTies) break;
    const BlockTrace* t = traced(m);
    if (!t) continue;
    if (m.kind == MismatchKind::kScaleOffByOneCode) {
      if (auto s = scale_tie(*t); s && std::find(out.begin(), out.end(), *s) == out.end()) out.push_back(*s);
    } else if (m.kind == MismatchKind::kTieFlipped) {
      const float y = t->scaled[std::size_t(m.col % 16)];
      out.push_back(
          fmt::format("element ({}, {}) of {}: y = {} lies exactly halfway between two E2M1 values; the expected side "
                      "rounds to even (0x{:X}), the actual gives 0x{:X}",
                      m.row, m.col, m.tensor, y, m.expected, m.actual));
    }
  }
  return out;
}

std::string verdict_of(const Explanation& x, std::string_view note = {}) {
  std::string v;
  if (x.causes.empty()) {
    v = "no catalogue pattern, profile or single-knob variant reproduces the actual outputs";
  } else {
    std::vector<std::string> first, others;
    for (std::size_t i = 0; i < x.causes.size(); ++i)
      (i < std::max<std::size_t>(x.tied, 1) ? first : others).push_back(x.causes[i].name);
    const Explanation::Cause& c = x.causes.front();
    if (first.size() == 1)
      v = fmt::format("{}: {} (reproduces {})", c.name, c.summary, c.exact ? "every output byte" : "every differing byte");
    else
      v = fmt::format("{}: each reproduces every output byte, and this case cannot tell them apart", fmt::join(first, " or "));
    if (!note.empty()) v += fmt::format(" ({})", note);
    if (!others.empty()) v += fmt::format("; also reproduced by {}", fmt::join(others, ", "));
  }
  if (!x.detail.empty()) v += ". " + x.detail;
  for (const std::string& t : x.ties) v += ". " + t;
  return v;
}

// ---- a large quantize case, by the band of its first mismatching block ----

// Rows (or, columnwise, columns of x) [first, first + 16) of a quantize case run alone: their
// quantization is the tensor's when they keep its global amax (an override), so the band's
// outputs are slices of the tensor's.
struct Band {
  Case c;
  TensorMap expected, actual;
  std::string where;  // "rows 16..31" or "columns 16..31 (the columnwise copy)"
};

io::Tensor scale_rows_slice(const io::Tensor& t, std::int64_t first, bool swizzled) {
  ByteMatrix s = io::to_byte_matrix(t, "diagnose", "scale");
  if (swizzled) s = unswizzle_scales(s);
  ByteMatrix band = xt::zeros<std::uint8_t>({std::size_t(128), s.shape(1)});
  for (std::size_t r = 0; r < 16; ++r)
    for (std::size_t j = 0; j < s.shape(1); ++j) band(r, j) = s(std::size_t(first) + r, j);
  return io::from_byte_matrix(swizzled ? swizzle_scales(band) : band);
}

std::optional<Band> first_band(const Case& c, const TensorMap& expected, const TensorMap& actual, const Explanation& x) {
  // Stochastic rounding draws by block index and rht transforms whole columns: no band of those.
  if (c.op != "quantize" || c.params.flag("rht") || c.params.text("rounding") != "nearest" || c.inputs.at("x").shape.size() != 2)
    return std::nullopt;
  for (const Explanation::BlockMap& m : x.maps) {
    const auto hit = std::find(m.mismatching.begin(), m.mismatching.end(), 1);
    if (hit == m.mismatching.end() || m.blocks == 0 || m.rows <= 16) continue;
    const std::string suffix = m.tensor == "data_t" ? "_t" : "";
    const std::int64_t first = (hit - m.mismatching.begin()) / m.blocks / 16 * 16;
    for (const char* n : {"data", "scale", "amax"})
      if (!actual.count(n + suffix) || !same_layout(actual.at(n + suffix), expected.at(n + suffix))) return std::nullopt;
    Band b;
    const bool columnwise = !suffix.empty(), swizzled = c.params.text("scale_layout") == "swizzled";
    const io::Tensor& x_in = c.inputs.at("x");
    b.c = cases::with_input(
        c, "x",
        columnwise ? cases::transposed(cases::row_slice(cases::transposed(x_in), first, 16)) : cases::row_slice(x_in, first, 16));
    b.c.params.set("direction", std::string(columnwise ? "columnwise" : "rowwise"));
    const bool row_scaled = c.params.flag("row_scaled");
    // The tensor's amax, which the band alone would not have (a row-scaled band has its rows' own):
    // the band's reference outputs are then slices of the tensor's.
    const FloatVector g = io::to_float_vector(expected.at("amax" + suffix), "diagnose", "amax");
    if (!row_scaled && !c.params.f32("amax")) b.c.params.set("amax", cases::F32Bits{bits_of(g(0))});
    b.expected = cases::ReferenceBackend().run(b.c);
    b.actual["data" + suffix] = cases::row_slice(actual.at("data" + suffix), first, 16);
    b.actual["scale" + suffix] = scale_rows_slice(actual.at("scale" + suffix), first, swizzled);
    const FloatVector a = io::to_float_vector(actual.at("amax" + suffix), "diagnose", "amax");
    b.actual["amax" + suffix] = io::from_float_vector(row_scaled ? FloatVector(xt::view(a, xt::range(first, first + 16))) : a);
    if (actual.count("global_scale")) b.actual["global_scale"] = actual.at("global_scale");
    b.where = columnwise ? fmt::format("columns {}..{} of x (the columnwise copy)", first, first + 15)
                         : fmt::format("rows {}..{}", first, first + 15);
    return b;
  }
  return std::nullopt;
}

}  // namespace

void diagnose(const Case& c, const TensorMap& expected, const TensorMap& actual, Explanation& x) {
  const bool experts = c.op == "quantize" && c.params.has("experts") && c.params.flag("experts") && c.inputs.count("x") &&
                       c.inputs.at("x").shape.size() == 3;
  if (experts) {  // the first expert whose outputs differ, diagnosed as the 2-D case it is
    for (std::int64_t e = 0; e < c.inputs.at("x").shape[0]; ++e) {
      const TensorMap exp = cases::expert_outputs(expected, e), act = cases::expert_outputs(actual, e);
      if (std::equal(exp.begin(), exp.end(), act.begin(), act.end(),
                     [](const auto& a, const auto& b) { return a.first == b.first && same_tensor(a.second, b.second); }))
        continue;
      diagnose(cases::expert_case(c, e), exp, act, x);
      x.verdict = fmt::format("expert {}: {}", e, x.verdict);
      return;
    }
  }
  x.detail = x.verdict;
  if (!experts && input_elements(c) <= kMaxSearchElements) {
    const std::vector<Candidate> found = Diagnosis(c, expected, actual, x).run();
    for (const Candidate& k : found) {
      const Candidate& top = found.front();
      // Alike whatever their class: a pattern and a knob with the same outputs are one verdict
      // this case cannot split (the ranking still puts the pattern first).
      const bool alike = k.cause.exact && top.cause.exact && k.outputs && top.outputs && same_outputs(*k.outputs, *top.outputs);
      if (&k != &top && !alike) break;
      ++x.tied;
    }
    for (const Candidate& k : found) x.causes.push_back(k.cause);
    x.searched = true;
    x.ties = ties(x);
    x.verdict = verdict_of(x);
  } else if (std::optional<Band> b = first_band(c, expected, actual, x)) {
    // Too large to search whole: the first mismatching band, run alone with the tensor's amax.
    const Explanation band = explain(b->c, b->expected, b->actual);
    x.causes = band.causes;
    x.tied = band.tied;
    x.searched = band.searched;
    x.ties = band.ties;
    x.verdict = fmt::format("in {}, run alone with the tensor's amax: {}", b->where, band.verdict);
  } else if (x.detail.empty()) {
    x.verdict = "the case is too large to search the catalogue (more than 2^20 input elements); shrink it first";
  }
}

void confirm_with_found(Explanation& shrunk, const Explanation& found) {
  if (shrunk.causes.empty() || !found.searched) return;
  const auto reproduces_found = [&](const Explanation::Cause& c) {
    return std::any_of(found.causes.begin(), found.causes.end(), [&](const auto& k) { return k.name == c.name && k.exact; });
  };
  const std::size_t tied = std::max<std::size_t>(shrunk.tied, 1);
  const auto tied_end = shrunk.causes.begin() + std::ptrdiff_t(tied);
  const auto kept = std::stable_partition(shrunk.causes.begin(), tied_end, reproduces_found);
  const std::size_t n = std::size_t(kept - shrunk.causes.begin());
  if (n == tied) return;  // every leading cause reproduces the case as found too
  if (n > 0) {
    shrunk.tied = n;
    shrunk.verdict =
        verdict_of(shrunk, "the case as found, before shrinking, tells it apart from the others tied on the shrunk case");
    return;
  }
  // No leading cause of the shrunk case reproduces the case as found: the few elements left
  // agreed with it by coincidence. The case as found names the cause, or none does.
  const std::string ruled_out = shrunk.causes.front().name;
  shrunk.causes.clear();
  for (const Explanation::Cause& c : found.causes)
    if (c.exact) shrunk.causes.push_back(c);
  shrunk.tied = shrunk.causes.empty() ? 0 : std::min(std::max<std::size_t>(found.tied, 1), shrunk.causes.size());
  const std::string note = fmt::format(
      "named on the case as found, before shrinking: the shrunk case is also "
      "reproduced by {}, which the case as found rules out",
      ruled_out);
  if (shrunk.causes.empty()) {
    shrunk.verdict = fmt::format(
        "no catalogue pattern, profile or single-knob variant reproduces the case as found, before "
        "shrinking ({} reproduces the shrunk case only: too few elements are left to tell)",
        ruled_out);
    if (!shrunk.detail.empty()) shrunk.verdict += ". " + shrunk.detail;
  } else {
    shrunk.verdict = verdict_of(shrunk, note);
  }
}

}  // namespace nvfp4::compare
