#include "compare/explain.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/experts.h"
#include "cases/quantize_case.h"
#include "cases/reference_backend.h"
#include "compare/diagnose.h"
#include "compare/explain_master_weights.h"
#include "io/tensor_convert.h"
#include "reference/amax.h"
#include "reference/formulas.h"
#include "reference/hadamard.h"
#include "reference/half_float.h"
#include "reference/layout.h"
#include "reference/philox.h"
#include "reference/profiles.h"
#include "reference/scale_layout.h"

namespace nvfp4::compare {
namespace {

constexpr std::size_t kMaxListed = 4096, kMaxTraces = 4, kMaxRhtTraces = 16;

// One stored direction of a quantize output: its tensors and the matrix it quantizes.
struct Direction {
  std::string suffix;  // "" or "_t"
  FloatMatrix x;       // x, or x^T (rht(x) with the Hadamard transform)
  SrDirection sr_dir;  // the `dir` of its stochastic-rounding draws
};

// The smallest random byte that rounds x's scaled value up to its upper grid neighbour, 256 when
// none does. sr_e2m1 rounds up monotonically in r8, so a binary search finds it.
int sr_threshold(const Profile& p, const ElementEncoder& e, float x) {
  const std::uint8_t down = encode_element_sr(p, e, x, 0);
  if (encode_element_sr(p, e, x, 255) == down) return 256;
  int lo = 0, hi = 255;  // down at lo, up at hi
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (encode_element_sr(p, e, x, std::uint8_t(mid)) == down ? lo : hi) = mid;
  }
  return hi;
}

bool is_tie(float y) {
  static constexpr float kTies[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  return std::find(std::begin(kTies), std::end(kTies), abs_f(y)) != std::end(kTies);
}

// Codes of neighbouring grid points with the same sign.
bool neighbours(std::uint8_t a, std::uint8_t b) {
  return (a & 8) == (b & 8) && (a & 7) != (b & 7) && std::abs((a & 7) - (b & 7)) == 1;
}

std::uint8_t swap_nibbles(std::uint8_t b) { return std::uint8_t((b << 4) | (b >> 4)); }

ByteMatrix compact_scale(const io::Tensor& t, ScaleLayout layout) {
  const ByteMatrix m = io::to_byte_matrix(t, "explain", "scale");
  return layout == ScaleLayout::kSwizzled ? unswizzle_scales(m) : m;
}

class Explainer {
 public:
  Explainer(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual)
      : c_(c), expected_(expected), actual_(actual) {}

  // With `elements`, every data and scale byte of a quantize output is classified; without, each
  // differing tensor counts its differing bytes.
  Explanation run(bool elements) {
    for (const auto& [name, t] : expected_)
      if ((name == "amax" || name == "amax_t" || name == "global_scale") && actual_.count(name) &&
          actual_.at(name).bytes != t.bytes)
        add({name, 0, 0, 0, 0, 0, MismatchKind::kAmax});
    if (elements && c_.inputs.count("x")) {
      const FloatMatrix x = io::to_float_matrix(c_.inputs.at("x"), "explain", "x");
      if (expected_.count("data")) direction({"", x, SrDirection::kRowwise});
      if (expected_.count("data_t")) {
        const QuantizeOptions o = cases::quantize_options(c_);
        direction(
            {"_t", o.rht_mask ? rht(x, *o.rht_mask, o.profile.rht) : FloatMatrix(xt::transpose(x)), SrDirection::kColumnwise});
      }
    } else {
      for (const TensorDiff& d : diff_outputs(expected_, actual_)) {
        out_.total_mismatches += std::max<std::size_t>(1, d.mismatches);
        counts_[MismatchKind::kOther] += std::max<std::size_t>(1, d.mismatches);
      }
    }
    for (const auto& [k, n] : counts_) out_.kind_counts.emplace_back(k, n);
    return std::move(out_);
  }

 private:
  void add(ElementMismatch m) {
    ++out_.total_mismatches;
    ++counts_[m.kind];
    if (out_.mismatches.size() < kMaxListed) out_.mismatches.push_back(std::move(m));
  }

  void direction(const Direction& d) {
    const std::string data_name = "data" + d.suffix, scale_name = "scale" + d.suffix;
    if (!actual_.count(data_name) || !actual_.count(scale_name) || actual_.at(data_name).shape != expected_.at(data_name).shape ||
        actual_.at(scale_name).shape != expected_.at(scale_name).shape) {
      add({data_name, 0, 0, 0, 0, 0, MismatchKind::kOther});
      return;
    }
    const ByteMatrix ed = io::to_byte_matrix(expected_.at(data_name), "explain", data_name);
    const ByteMatrix ad = io::to_byte_matrix(actual_.at(data_name), "explain", data_name);
    const ByteMatrix es = compact_scale(expected_.at(scale_name), cases::quantize_options(c_).scale_layout);
    const ByteMatrix as = compact_scale(actual_.at(scale_name), cases::quantize_options(c_).scale_layout);
    const std::int64_t rows = ed.shape(0), blocks = ed.shape(1) / 8;
    Explanation::BlockMap map{data_name, rows, blocks, std::vector<std::uint8_t>(rows * blocks, 0)};
    for (std::int64_t r = 0; r < std::int64_t(es.shape(0)); ++r)
      for (std::int64_t j = 0; j < std::int64_t(es.shape(1)); ++j) {
        if (es(r, j) == as(r, j)) continue;
        if (r >= rows || j >= blocks) {
          add({scale_name, r, j, 0, es(r, j), as(r, j), MismatchKind::kPadding});
          continue;
        }
        const bool one_code =
            (es(r, j) & 0x80) == (as(r, j) & 0x80) && std::abs(int(es(r, j) & 0x7F) - int(as(r, j) & 0x7F)) == 1;
        add({scale_name, r, j, 0, es(r, j), as(r, j), one_code ? MismatchKind::kScaleOffByOneCode : MismatchKind::kScaleOther});
        map.mismatching[r * blocks + j] = 1;
      }
    // A byte-order bug shows in every differing byte at once, and at its byte position in every
    // row: there each byte with two different nibbles differs (else two neighbouring elements
    // that both rounded the other way, as stochastic rounding can, would pass for one).
    bool all_swapped = true;
    for (std::int64_t b = 0; b < blocks * 8; ++b) {
      bool position_differs = false, position_swapped = true;
      for (std::int64_t r = 0; r < rows; ++r) {
        all_swapped &= ed(r, b) == ad(r, b) || ad(r, b) == swap_nibbles(ed(r, b));
        position_differs |= ed(r, b) != ad(r, b);
        position_swapped &= ad(r, b) == swap_nibbles(ed(r, b));
      }
      all_swapped &= !position_differs || position_swapped;
    }
    for (std::int64_t r = 0; r < rows; ++r) {
      std::optional<BlockTrace> block;  // the reference's trace of the current block, once per block
      for (std::int64_t b = 0; b < blocks * 8; ++b) {
        if (ed(r, b) == ad(r, b)) continue;
        map.mismatching[r * blocks + b / 8] = 1;
        if (!block || block->block != b / 8) block = reference_block(d, r, b / 8);
        for (int half = 0; half < 2; ++half) {
          const std::uint8_t e = nibble_at(ed(r, b), half), a = nibble_at(ad(r, b), half);
          if (e == a) continue;
          const std::int64_t col = 2 * b + half;
          ElementMismatch m{
              data_name, r, col, bits_of(d.x(r, col)), e, a, element_kind(d, *block, ed, ad, r, b, col, e, a, all_swapped)};
          if (!block->sr.empty()) m.sr = block->sr[col % 16];
          add(std::move(m));
        }
      }
    }
    for (std::int64_t r = 0; r < rows && out_.traces.size() < kMaxTraces; ++r)
      for (std::int64_t j = 0; j < blocks && out_.traces.size() < kMaxTraces; ++j)
        if (map.mismatching[r * blocks + j]) out_.traces.push_back(trace(d, ad, r, j));
    out_.maps.push_back(std::move(map));
  }

  MismatchKind element_kind(const Direction& d, const BlockTrace& block, const ByteMatrix& ed, const ByteMatrix& ad,
                            std::int64_t r, std::int64_t b, std::int64_t col, std::uint8_t e, std::uint8_t a,
                            bool all_swapped) const {
    if (all_swapped) return MismatchKind::kNibbleOrder;  // every differing byte is its expected byte, swapped
    if (is_nan(d.x(r, col))) return MismatchKind::kNanEncoding;
    if ((e | a) == 0x8 && (e & a) == 0) return MismatchKind::kZeroSign;
    if (neighbours(e, a)) {
      if (!block.sr.empty()) return MismatchKind::kSrOtherNeighbour;
      return is_tie(block.scaled[col % 16]) ? MismatchKind::kTieFlipped : MismatchKind::kRoundingOther;
    }
    for (std::int64_t o = -8; o <= 8; ++o)  // a non-zero expected byte from nearby in the row
      if (o != 0 && b + o >= 0 && b + o < std::int64_t(ed.shape(1)) && ad(r, b) == ed(r, b + o) && ed(r, b + o) != 0)
        return MismatchKind::kMisplacedByte;
    return MismatchKind::kOther;
  }

  // The reference's intermediates for stored block (r, j) of a direction.
  BlockTrace reference_block(const Direction& d, std::int64_t r, std::int64_t j) const {
    BlockTrace t;
    t.direction = d.suffix.empty() ? "rowwise" : "columnwise";
    t.row = r;
    t.block = j;
    const FloatVector amax = io::to_float_vector(expected_.at("amax" + d.suffix), "explain", "amax");
    t.global_amax = amax.size() == 1 ? amax(0) : amax(r);
    const Profile& profile = cases::case_profile(c_);
    const GlobalScale gs = global_scale(profile.gs, t.global_amax);
    t.S = gs.S;
    t.Sd = gs.Sd;
    float A = 0.0f;
    const BlockShape shape = cases::quantize_options(c_).block;
    if (shape == BlockShape::k2D) {
      for (std::int64_t i = r / 16 * 16; i < r / 16 * 16 + 16; ++i)
        for (std::int64_t k = 16 * j; k < 16 * j + 16; ++k) A = amax_step(profile.amax, A, d.x(i, k));
    } else {
      for (std::int64_t k = 16 * j; k < 16 * j + 16; ++k) A = amax_step(profile.amax, A, d.x(r, k));
    }
    t.block_amax = A;
    const BlockEncoding enc = profile.cand == CandidateRule::NONE
                                  ? encode_block(profile, gs, t.global_amax, A)
                                  : chosen_candidate(profile, gs, t.global_amax, A, d.x, std::size_t(r), shape, std::size_t(j));
    t.precast = enc.precast;
    t.scale_byte = enc.scale_byte;
    t.encode_factor = enc.encoder.factor;
    const std::optional<StochasticRounding>& sr = cases::quantize_options(c_).stochastic;
    PhiloxCounter draw;  // §3.18.3: the block's one draw, at its stored index
    if (sr)
      draw = sr_draw(sr->seed, sr->offset, d.sr_dir, std::uint64_t(r) * std::uint64_t(d.x.shape(1) / 16) + std::uint64_t(j));
    for (std::int64_t k = 16 * j; k < 16 * j + 16; ++k) {
      const float x = d.x(r, k);
      t.inputs.push_back(x);
      t.scaled.push_back(scale_element(profile, enc.encoder, x));
      if (!sr) {
        t.expected_codes.push_back(encode_element(profile, enc.encoder, x));
        continue;
      }
      const std::uint8_t r8 = sr_byte(draw, unsigned(k % 16));
      t.expected_codes.push_back(encode_element_sr(profile, enc.encoder, x, r8));
      t.sr.push_back({r8, sr_threshold(profile, enc.encoder, x)});
    }
    return t;
  }

  BlockTrace trace(const Direction& d, const ByteMatrix& ad, std::int64_t r, std::int64_t j) const {
    BlockTrace t = reference_block(d, r, j);
    for (std::int64_t k = 16 * j; k < 16 * j + 16; ++k) t.actual_codes.push_back(nibble_at(ad(r, k / 2), k % 2));
    return t;
  }

  const cases::Case& c_;
  const cases::TensorMap& expected_;
  const cases::TensorMap& actual_;
  Explanation out_;
  std::map<MismatchKind, std::size_t> counts_;
};

}  // namespace

std::string_view mismatch_kind_name(MismatchKind k) {
  switch (k) {
    case MismatchKind::kScaleOffByOneCode:
      return "scale byte off by one code";
    case MismatchKind::kScaleOther:
      return "scale byte differs";
    case MismatchKind::kTieFlipped:
      return "element tie flipped";
    case MismatchKind::kRoundingOther:
      return "element rounded to the other neighbour";
    case MismatchKind::kZeroSign:
      return "sign of zero";
    case MismatchKind::kNanEncoding:
      return "NaN encoding";
    case MismatchKind::kNibbleOrder:
      return "nibble order";
    case MismatchKind::kMisplacedByte:
      return "misplaced byte";
    case MismatchKind::kPadding:
      return "padding";
    case MismatchKind::kAmax:
      return "amax / global scale";
    case MismatchKind::kShardByteShift:
      return "partial-cast byte index off by one (odd shard start)";
    case MismatchKind::kSharedByteNibble:
      return "shared byte lost a rank's nibble";
    case MismatchKind::kShiftOrSharedNibble:
      return "byte index off by one or shared byte lost a nibble (both fit)";
    case MismatchKind::kScaleRowPitch:
      return "scale rows at pitch K/16";
    case MismatchKind::kSrOtherNeighbour:
      return "stochastic rounding to the other neighbour";
    case MismatchKind::kRhtSingleRounding:
      return "rounded once to BF16 (binary32 step skipped)";
    case MismatchKind::kRhtOtherSum:
      return "the other RHT sum rule (exact / mma-sm90)";
    case MismatchKind::kRhtOneUlp:
      return "one BF16 ulp off";
    case MismatchKind::kOther:
      return "other";
  }
  return "other";
}

Explanation explain_quantize(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual) {
  const bool experts =
      c.params.has("experts") && c.params.flag("experts") && c.inputs.count("x") && c.inputs.at("x").shape.size() == 3;
  if (!experts) return Explainer(c, expected, actual).run(true);
  // Expert weights: the first expert whose outputs differ, explained as the 2-D case it is.
  for (std::int64_t e = 0; e < c.inputs.at("x").shape[0]; ++e) {
    const cases::TensorMap exp = cases::expert_outputs(expected, e), act = cases::expert_outputs(actual, e);
    const bool same = std::all_of(exp.begin(), exp.end(), [&](const auto& kv) {
      const auto it = act.find(kv.first);
      return it != act.end() && it->second.shape == kv.second.shape && it->second.bytes == kv.second.bytes;
    });
    if (same) continue;
    return explain_quantize(cases::expert_case(c, e), exp, act);  // diagnose() names the expert
  }
  // No expert's own slice differs (an extra output, say): the differing bytes, counted.
  return explain_bytes(c, expected, actual);
}

Explanation explain_bytes(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual) {
  return Explainer(c, expected, actual).run(false);
}

namespace {

std::uint16_t bf16_bits(float v) { return std::uint16_t(bits_of(v) >> 16); }

// Two finite BF16 values of the same sign one code apart.
bool one_bf16_ulp(float a, float b) {
  const std::uint16_t x = bf16_bits(a), y = bf16_bits(b);
  return std::isfinite(a) && std::isfinite(b) && (x & 0x8000) == (y & 0x8000) && std::abs(int(x) - int(y)) == 1;
}

}  // namespace

Explanation explain_rht(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual) {
  const io::Tensor& e_t = expected.at("x_t");
  if (!actual.count("x_t") || actual.at("x_t").dtype != e_t.dtype || actual.at("x_t").shape != e_t.shape)
    return explain_bytes(c, expected, actual);
  const FloatMatrix x = io::to_float_matrix(c.inputs.at("x"), "explain", "x");
  const FloatMatrix e = io::to_float_matrix(e_t, "explain", "x_t"), a = io::to_float_matrix(actual.at("x_t"), "explain", "x_t");
  const std::uint16_t mask = cases::rht_mask_param(c);
  const RhtSum rule = cases::rht_sum_param(c);
  const RhtSum other_rule = rule == RhtSum::EXACT ? RhtSum::MMA_SM90 : RhtSum::EXACT;
  const std::int64_t N = e.shape(0), M = e.shape(1);
  Explanation out;
  Explanation::BlockMap map{"x_t", N, M / 16, std::vector<std::uint8_t>(std::size_t(N * (M / 16)), 0)};
  std::map<MismatchKind, std::size_t> counts;
  std::array<float, 16> v;
  for (std::int64_t row = 0; row < N; ++row)
    for (std::int64_t col = 0; col < M; ++col) {
      if (bits_of(e(row, col)) == bits_of(a(row, col))) continue;
      const std::int64_t b = col / 16;
      for (std::int64_t k = 0; k < 16; ++k) v[k] = x(16 * b + k, row);
      const Rht16Sum sum = rht16_sum(v, mask, unsigned(col % 16));
      const float other = other_rule == RhtSum::MMA_SM90 ? sum.bf16_mma : sum.bf16;
      const MismatchKind kind = bits_of(a(row, col)) == bits_of(sum.bf16_single) ? MismatchKind::kRhtSingleRounding
                                : bits_of(a(row, col)) == bits_of(other)         ? MismatchKind::kRhtOtherSum
                                : one_bf16_ulp(a(row, col), e(row, col))         ? MismatchKind::kRhtOneUlp
                                                                                 : MismatchKind::kOther;
      ++counts[kind];
      ++out.total_mismatches;
      map.mismatching[std::size_t(row * (M / 16) + b)] = 1;
      if (out.rht_traces.size() < kMaxRhtTraces)
        out.rht_traces.push_back({"x_t", row, col, mask, std::vector<float>(v.begin(), v.end()), sum.exact, sum.binary32,
                                  e(row, col), a(row, col), sum.bf16_single});
    }
  out.maps.push_back(std::move(map));
  for (const auto& [k, n] : counts) out.kind_counts.emplace_back(k, n);
  if (counts.size() == 1 && counts.begin()->first == MismatchKind::kRhtSingleRounding)
    out.verdict = fmt::format(
        "every one of the {} mismatching outputs is the exact sum rounded once to BF16, without the "
        "binary32 rounding of §3.19",
        out.total_mismatches);
  else if (counts.size() == 1 && counts.begin()->first == MismatchKind::kRhtOtherSum)
    out.verdict =
        fmt::format("every one of the {} mismatching outputs is the {} sum of §3.19 (accumulation={})", out.total_mismatches,
                    other_rule == RhtSum::MMA_SM90 ? "tensor-core" : "exact", rht_sum_name(other_rule));
  return out;
}

namespace {

// The operations with an explanation of their own; the others get explain_bytes.
struct ExplainerRow {
  std::string_view op;
  Explanation (*explain)(const cases::Case&, const cases::TensorMap&, const cases::TensorMap&);
};
constexpr ExplainerRow kExplainers[] = {
    {"quantize", explain_quantize},
    {"rht", explain_rht},
    {"cast_master_weights", explain_master_weights},
};

}  // namespace

Explanation explain(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual) {
  // The operations' explanations read the actual outputs as laid out like the expected ones: when
  // a tensor is missing, extra, or of another dtype or shape, the differing tensors are counted
  // and the verdict names what differs.
  std::vector<std::string> schema;
  for (const TensorDiff& d : diff_outputs(expected, actual))
    if (!d.problem.empty()) schema.push_back(d.tensor + ": " + d.problem);
  Explanation x;
  if (!schema.empty()) {
    x = explain_bytes(c, expected, actual);
    x.verdict = fmt::format("the actual outputs are not laid out as the reference's ({})", fmt::join(schema, "; "));
  } else {
    const auto row =
        std::find_if(std::begin(kExplainers), std::end(kExplainers), [&](const ExplainerRow& r) { return r.op == c.op; });
    x = row != std::end(kExplainers) ? row->explain(c, expected, actual) : explain_bytes(c, expected, actual);
  }
  diagnose(c, expected, actual, x);
  return x;
}

Explanation explain_comparison(const cases::Case& c, const Comparison& cmp) {
  Explanation x;
  if (!cmp.expected.empty() && !cmp.actual.empty())
    x = explain(c, cmp.expected, cmp.actual);
  else
    x.verdict = cmp.problem;
  if (x.causes.empty() && !cmp.ulp.empty()) x.verdict = cmp.ulp.front().brief();  // judged by its distance to EXACT
  return x;
}

}  // namespace nvfp4::compare
