#include "compare/explain_master_weights.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cases/distributed_case.h"
#include "io/tensor_convert.h"
#include "reference/e2m1.h"
#include "reference/layout.h"
#include "reference/transpose.h"

namespace nvfp4::compare {
namespace {

constexpr std::size_t kMaxListed = 4096;

MismatchKind most_frequent(const std::map<MismatchKind, std::size_t>& kinds) {
  MismatchKind most = MismatchKind::kOther;
  std::size_t n = 0;
  for (const auto& [k, count] : kinds)
    if (count > n) most = k, n = count;
  return most;
}

class MasterWeightsExplainer {
 public:
  MasterWeightsExplainer(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual)
      : c_(c), expected_(expected), actual_(actual), in_(cases::master_weights_input(c)) {}

  Explanation run() {
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < in_.weights.size(); ++i) {
      weight(in_.names[i], in_.weights[i], offset);
      offset += std::int64_t(in_.weights[i].size());
    }
    for (const auto& [k, n] : counts_) out_.kind_counts.emplace_back(k, n);
    verdict();
    return std::move(out_);
  }

 private:
  void add(ElementMismatch m, bool consequence = false) {
    ++out_.total_mismatches;
    ++counts_[m.kind];
    if (!consequence) ++cause_counts_[m.kind];
    if (out_.mismatches.size() < kMaxListed) out_.mismatches.push_back(std::move(m));
  }

  // The rank owning flat element e of the concatenation.
  std::size_t owner(std::int64_t e) const {
    std::size_t rho = 0;
    while (rho + 1 < in_.ranks.size() && in_.ranks[rho].end <= e) ++rho;
    return rho;
  }

  bool same_shape(const std::string& name) const {
    return expected_.count(name) && actual_.count(name) && expected_.at(name).shape == actual_.at(name).shape;
  }

  void weight(const std::string& name, const FloatMatrix& w, std::int64_t offset) {
    if (!same_shape(name + ".amax") || expected_.at(name + ".amax").bytes != actual_.at(name + ".amax").bytes)
      add({name + ".amax", 0, 0, 0, 0, 0, MismatchKind::kAmax});
    for (const char* t : {".data", ".scale", ".data_t", ".scale_t"})
      if (!same_shape(name + t)) {
        add({name + t, 0, 0, 0, 0, 0, MismatchKind::kOther});
        return;
      }
    const ByteMatrix ed = io::to_byte_matrix(expected_.at(name + ".data"), "explain", "data");
    const ByteMatrix ad = io::to_byte_matrix(actual_.at(name + ".data"), "explain", "data");
    const MismatchKind data_kind = data(name, w, offset, ed, ad);
    const MismatchKind scale_kind = scale(name, w);
    // The columnwise copy is made by transposes: where it is the transpose of the actual rowwise
    // copy, its mismatches are consequences of the rowwise ones.
    const ByteMatrix edt = io::to_byte_matrix(expected_.at(name + ".data_t"), "explain", "data_t");
    const ByteMatrix adt = io::to_byte_matrix(actual_.at(name + ".data_t"), "explain", "data_t");
    const bool data_t_follows = ad.shape(0) % 2 == 0 && adt == transpose_packed(ad);
    for (std::size_t k = 0; k < edt.shape(0); ++k)
      for (std::size_t j = 0; j < edt.shape(1); ++j)
        for (int half = 0; half < 2; ++half)
          if (nibble_at(edt(k, j), half) != nibble_at(adt(k, j), half))
            add({name + ".data_t", std::int64_t(k), std::int64_t(2 * j + half), 0, nibble_at(edt(k, j), half),
                 nibble_at(adt(k, j), half), data_t_follows ? data_kind : MismatchKind::kOther},
                data_t_follows);
    const ByteMatrix est = io::to_byte_matrix(expected_.at(name + ".scale_t"), "explain", "scale_t");
    const ByteMatrix ast = io::to_byte_matrix(actual_.at(name + ".scale_t"), "explain", "scale_t");
    const ByteMatrix as = io::to_byte_matrix(actual_.at(name + ".scale"), "explain", "scale");
    const bool scale_t_follows = ast == transpose_scales_2d(as, w.shape(0), w.shape(1));
    for (std::size_t r = 0; r < est.shape(0); ++r)
      for (std::size_t j = 0; j < est.shape(1); ++j)
        if (est(r, j) != ast(r, j))
          add({name + ".scale_t", std::int64_t(r), std::int64_t(j), 0, est(r, j), ast(r, j),
               scale_t_follows ? scale_kind : MismatchKind::kOther},
              scale_t_follows);
  }

  // Classifies the rowwise data bytes; returns the most frequent kind (kOther if none). A byte
  // can fit both patterns (e.g. a shared byte whose shifted-in nibble is 0); the pattern that
  // fits every mismatching byte wins, as the simpler explanation, and when every byte fits both
  // (a shrunk case can keep a single such byte) the kind says so instead of choosing.
  MismatchKind data(const std::string& name, const FloatMatrix& w, std::int64_t offset, const ByteMatrix& ed,
                    const ByteMatrix& ad) {
    const std::int64_t K = std::int64_t(w.shape(1)), bytes = std::int64_t(ed.size());
    Explanation::BlockMap map{name + ".data", std::int64_t(w.shape(0)), K / 16, std::vector<std::uint8_t>(w.size() / 16, 0)};
    struct Wrong {
      std::int64_t byte;
      bool shifted, nibble_lost;
    };
    std::vector<Wrong> wrong;
    for (std::int64_t b = 0; b < bytes; ++b) {
      const std::uint8_t e = ed.data()[b], a = ad.data()[b];
      if (e == a) continue;
      map.mismatching[std::size_t(b / 8)] = 1;
      const std::int64_t global_byte = offset / 2 + b;
      const std::size_t lo = owner(2 * global_byte), hi = owner(2 * global_byte + 1);
      // §5.1: in a rank whose shard of this weight starts at an odd element, pair (2m, 2m+1)
      // landed at byte m - 1, and the shard's last byte was never written. Shards are per weight:
      // a rank that goes on into the next weight starts there at an even element.
      auto shifted = [&](int half) {
        const RankRange& r = in_.ranks[half ? hi : lo];
        const std::int64_t begin = std::max(r.begin, offset), end = std::min(r.end, offset + std::int64_t(w.size()));
        if (begin % 2 == 0) return false;
        const bool last = global_byte == ((end + 1) >> 1) - 1;
        return (b + 1 < bytes && nibble_at(a, half) == nibble_at(ed.data()[b + 1], half)) || (last && nibble_at(a, half) == 0);
      };
      const bool lo_differs = nibble_at(e, 0) != nibble_at(a, 0), hi_differs = nibble_at(e, 1) != nibble_at(a, 1);
      // §5.3: a shared byte copied whole from one rank carries the other rank's nibble as that
      // rank's zero-initialised buffer held it.
      const bool nibble_lost = lo != hi && lo_differs != hi_differs && nibble_at(a, lo_differs ? 0 : 1) == 0;
      wrong.push_back({b, (!lo_differs || shifted(0)) && (!hi_differs || shifted(1)), nibble_lost});
    }
    const bool all_lost = std::all_of(wrong.begin(), wrong.end(), [](const Wrong& x) { return x.nibble_lost; });
    const bool all_both = std::all_of(wrong.begin(), wrong.end(), [](const Wrong& x) { return x.nibble_lost && x.shifted; });
    std::map<MismatchKind, std::size_t> kinds;
    for (const Wrong& x : wrong) {
      MismatchKind kind = MismatchKind::kOther;
      if (all_both)
        kind = MismatchKind::kShiftOrSharedNibble;
      else if (x.nibble_lost && (all_lost || !x.shifted))
        kind = MismatchKind::kSharedByteNibble;
      else if (x.shifted)
        kind = MismatchKind::kShardByteShift;
      ++kinds[kind];
      const std::uint8_t e = ed.data()[x.byte], a = ad.data()[x.byte];
      for (int half = 0; half < 2; ++half) {
        if (nibble_at(e, half) == nibble_at(a, half)) continue;
        const std::int64_t element = 2 * x.byte + half;
        add({name + ".data", element / K, element % K, bits_of(w.data()[element]), nibble_at(e, half), nibble_at(a, half), kind});
      }
    }
    out_.maps.push_back(std::move(map));
    return most_frequent(kinds);
  }

  // §5.2: the bytes of a scale matrix written at pitch tc = K/16 into a buffer of pitch
  // roundup(tc, 4): flat byte f holds logical entry (f div tc, f mod tc).
  MismatchKind scale(const std::string& name, const FloatMatrix& w) {
    const ByteMatrix es = io::to_byte_matrix(expected_.at(name + ".scale"), "explain", "scale");
    const ByteMatrix as = io::to_byte_matrix(actual_.at(name + ".scale"), "explain", "scale");
    const std::int64_t tc = std::int64_t(w.shape(1)) / 16, pitch = std::int64_t(es.shape(1));
    const std::int64_t rows = std::int64_t(es.shape(0)), written = rows * tc;
    std::map<MismatchKind, std::size_t> kinds;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < pitch; ++j) {
        if (es(r, j) == as(r, j)) continue;
        const std::int64_t f = r * pitch + j;
        MismatchKind kind = MismatchKind::kScaleOther;
        if (tc > 0 && f < written && as(r, j) == es(f / tc, f % tc))
          kind = MismatchKind::kScaleRowPitch;
        else if (tc > 0 && tc != pitch && f >= written)
          kind = MismatchKind::kScaleRowPitch;  // never written at pitch tc
        else if (r >= std::int64_t(w.shape(0)) || j >= tc)
          kind = MismatchKind::kPadding;
        else if ((es(r, j) & 0x80) == (as(r, j) & 0x80) && std::abs(int(es(r, j) & 0x7F) - int(as(r, j) & 0x7F)) == 1)
          kind = MismatchKind::kScaleOffByOneCode;
        ++kinds[kind];
        add({name + ".scale", r, j, 0, es(r, j), as(r, j), kind});
      }
    return most_frequent(kinds);
  }

  // Names the upstream bug when every mismatch that is not a consequence of another has its pattern.
  void verdict() {
    std::size_t causes = 0;
    for (const auto& [k, n] : cause_counts_) causes += n, out_.root_kinds.push_back(k);
    if (causes == 0) return;
    std::string odd_ranks;
    for (std::size_t rho = 0; rho < in_.ranks.size(); ++rho)
      if (in_.ranks[rho].begin % 2 && in_.ranks[rho].begin < in_.ranks[rho].end)
        odd_ranks += fmt::format("{}rank {} at element {}", odd_ranks.empty() ? "" : ", ", rho, in_.ranks[rho].begin);
    const auto all = [&](MismatchKind k) { return cause_counts_.size() == 1 && cause_counts_.count(k); };
    if (all(MismatchKind::kShardByteShift))
      out_.verdict = fmt::format(
          "actual matches the partial-cast byte-index bug on {}/{} mismatching nibbles: ranks that start at an odd "
          "element ({}) wrote each element pair one byte low and never wrote their last byte. This is TE "
          "nvfp4_2d_partial_cast_kernel's b = (ref_idx - s) >> 1 (NUMERICS.md §5.1, variant PARTIAL_CAST_IDX_TE); "
          "the correct index is b = (e >> 1) - (s >> 1)",
          causes, causes, odd_ranks);
    else if (all(MismatchKind::kSharedByteNibble))
      out_.verdict = fmt::format(
          "actual matches a byte-granular all-gather on {}/{} mismatching nibbles: a byte shared by two ranks kept "
          "only one rank's nibble (NUMERICS.md §5.3, variant ALLGATHER_BYTES); each nibble must come from the rank "
          "that owns its element",
          causes, causes);
    else if (all(MismatchKind::kShiftOrSharedNibble))
      out_.verdict = fmt::format(
          "actual matches both the partial-cast byte-index bug (NUMERICS.md §5.1, variant PARTIAL_CAST_IDX_TE) and a "
          "byte-granular all-gather (§5.3, variant ALLGATHER_BYTES) on {}/{} mismatching nibbles: every mismatching "
          "byte fits both patterns ({}); a case with more mismatching bytes tells them apart",
          causes, causes, odd_ranks);
    else if (all(MismatchKind::kScaleRowPitch))
      out_.verdict = fmt::format(
          "actual matches the fused-scale row-pitch bug on {}/{} mismatching scale bytes: the expanded rowwise "
          "scales were written at pitch K/16 instead of the compact pitch roundup(K/16, 4), which differs when "
          "K mod 64 != 0. This is TE nvfp4_fused_scale_kernel (NUMERICS.md §5.2, variant FUSED_SCALE_PITCH_TC)",
          causes, causes);
    else {
      std::string kinds;
      for (const auto& [k, n] : cause_counts_)
        kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, mismatch_kind_name(k));
      out_.verdict = fmt::format("no known upstream bug explains all {} mismatches ({})", causes, kinds);
    }
  }

  const cases::Case& c_;
  const cases::TensorMap& expected_;
  const cases::TensorMap& actual_;
  const cases::MasterWeightsInput in_;
  Explanation out_;
  std::map<MismatchKind, std::size_t> counts_, cause_counts_;
};

}  // namespace

Explanation explain_master_weights(const cases::Case& c, const cases::TensorMap& expected, const cases::TensorMap& actual) {
  return MasterWeightsExplainer(c, expected, actual).run();
}

}  // namespace nvfp4::compare
