#include "fuzz/shrink_master_weights.h"

#include <algorithm>
#include <cstring>

#include "compare/compare.h"

namespace nvfp4::fuzz {
namespace {

struct Layout {
  std::vector<std::string> names;
  std::vector<std::int64_t> offsets;  // flat start of each weight, then the total
};

Layout layout_of(const cases::Case& c) {
  Layout l{{}, {0}};
  for (const auto& [name, t] : c.inputs) {
    l.names.push_back(name);
    l.offsets.push_back(l.offsets.back() + t.numel());
  }
  return l;
}

// Rows [0, m) and columns [0, k) of a 2-D tensor.
io::Tensor crop(const io::Tensor& t, std::int64_t m, std::int64_t k) {
  const std::size_t size = io::dtype_size(t.dtype);
  io::Tensor out{t.dtype, {m, k}, std::vector<std::uint8_t>(std::size_t(m * k) * size)};
  for (std::int64_t r = 0; r < m; ++r) std::memcpy(&out.bytes[r * k * size], &t.bytes[r * t.shape[1] * size], k * size);
  return out;
}

// Weight i cropped to m x k; a cut point inside it keeps its row and column when they survive,
// else it is clamped, keeping its parity where it can.
cases::Case cropped(const cases::Case& c, const Layout& l, std::size_t i, std::int64_t m, std::int64_t k) {
  cases::Case d = c;
  const io::Tensor& w = c.inputs.at(l.names[i]);
  const std::int64_t K = w.shape[1], before = w.numel(), after = m * k;
  d.inputs[l.names[i]] = crop(w, m, k);
  std::vector<std::int64_t> cuts = c.params.integers("cuts");
  for (std::int64_t& cut : cuts) {
    if (cut <= l.offsets[i]) continue;
    if (cut >= l.offsets[i + 1]) {
      cut -= before - after;
      continue;
    }
    const std::int64_t local = cut - l.offsets[i], r = local / K, col = local % K;
    std::int64_t mapped = r < m && col < k ? r * k + col : std::min(local, after);
    if (mapped % 2 != local % 2 && mapped > 0) --mapped;
    cut = l.offsets[i] + mapped;
  }
  std::sort(cuts.begin(), cuts.end());
  d.params.set("cuts", std::move(cuts));
  return d;
}

// Weight i removed; cut points inside it move to its start.
cases::Case without_weight(const cases::Case& c, const Layout& l, std::size_t i) {
  cases::Case d = c;
  d.inputs.erase(l.names[i]);
  std::vector<std::int64_t> cuts = c.params.integers("cuts");
  for (std::int64_t& cut : cuts) cut = std::max(l.offsets[i], cut - (l.offsets[i + 1] - l.offsets[i]));
  d.params.set("cuts", std::move(cuts));
  return d;
}

}  // namespace

void shrink_master_weights(cases::CaseRecord& r, const std::function<bool(const cases::Case&)>& fails) {
  if (r.c.op != "cast_master_weights") return;
  const auto accept = [&](cases::Case c) {
    bool still_fails = false;
    try {
      still_fails = fails(c);
    } catch (const std::exception&) {  // a candidate the backends reject is not a smaller failure
    }
    if (!still_fails) return false;
    for (auto it = r.recipes.begin(); it != r.recipes.end();)  // changed tensors are stored, not regenerated
      it = c.inputs.count(it->first) && c.inputs.at(it->first).bytes == r.c.inputs.at(it->first).bytes ? std::next(it)
                                                                                                       : r.recipes.erase(it);
    r.c = std::move(c);
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t i = 0; r.c.inputs.size() > 1 && i < r.c.inputs.size(); ++i)
      progress |= accept(without_weight(r.c, layout_of(r.c), i));
    for (std::size_t j = 0; j < r.c.params.integers("cuts").size(); ++j) {
      cases::Case d = r.c;
      std::vector<std::int64_t> cuts = r.c.params.integers("cuts");
      cuts.erase(cuts.begin() + std::ptrdiff_t(j));
      d.params.set("cuts", std::move(cuts));
      progress |= accept(std::move(d));
    }
    const Layout l = layout_of(r.c);
    for (std::size_t i = 0; i < l.names.size(); ++i) {
      const io::Tensor& w = r.c.inputs.at(l.names[i]);
      const std::int64_t M = w.shape[0], K = w.shape[1];
      for (const auto& [m, k] : {std::pair{std::int64_t(16), std::int64_t(16)},
                                 {std::int64_t(16), K},
                                 {M, std::int64_t(16)},
                                 {(M / 32) * 16, K},
                                 {M, (K / 32) * 16}}) {
        if (m < 16 || k < 16 || (m == M && k == K)) continue;
        if (accept(cropped(r.c, layout_of(r.c), i, m, k))) {
          progress = true;
          break;
        }
      }
    }
  }
}

}  // namespace nvfp4::fuzz
