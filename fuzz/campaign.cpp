#include "fuzz/campaign.h"

#include <algorithm>
#include <chrono>

#include <rapidcheck.h>

#include "cases/corpus.h"
#include "cases/registry.h"
#include "fuzz/shrink_master_weights.h"

namespace nvfp4::fuzz {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The RapidCheck seed of a round: a pure function of (seed, shards, round).
std::uint64_t round_seed(std::uint64_t seed, int shards, std::uint64_t round) {
  SplitMix64 mix(seed * 0x100000001B3ull ^ (std::uint64_t(shards) << 48) ^ round);
  return mix.next();
}

// Greedy data shrinking after RapidCheck's structural shrinking: zeroes the 16-element blocks of
// every floating-point input (x, a shard's xs, each master weight) one at a time, keeping each
// change that still fails, so the saved case holds only the blocks that matter. A changed input
// is then stored as a tensor, no longer as its recipe.
void zero_irrelevant_blocks(CaseRecord& r, Backend& expected, Backend& actual, const CompareMode& mode) {
  for (auto& [name, tensor] : r.c.inputs) {
    if (tensor.dtype != io::DType::F32 && tensor.dtype != io::DType::BF16 && tensor.dtype != io::DType::F16) continue;
    std::vector<std::uint8_t>& bytes = tensor.bytes;
    const std::size_t block_bytes = 16 * io::dtype_size(tensor.dtype);
    bool changed = false;
    for (std::size_t off = 0; off + block_bytes <= bytes.size(); off += block_bytes) {
      const std::vector<std::uint8_t> saved(bytes.begin() + off, bytes.begin() + off + block_bytes);
      if (std::all_of(saved.begin(), saved.end(), [](std::uint8_t b) { return b == 0; })) continue;
      std::fill(bytes.begin() + off, bytes.begin() + off + block_bytes, 0);
      if (compare_backends(r.c, expected, actual, mode).agree)
        std::copy(saved.begin(), saved.end(), bytes.begin() + off);
      else
        changed = true;
    }
    if (changed) r.recipes.erase(name);
  }
}

// How a saved case was compared when found, for its origin: replayed bit for bit, a case found
// beyond a ULP bound still differs, but only `replay --compare ulp --max-ulp N` checks the bound.
std::string compare_origin(const CompareMode& mode) {
  if (!mode.ulp) return "";
  return mode.max_ulp ? " compare=ulp max-ulp=" + std::to_string(*mode.max_ulp) : " compare=ulp";
}

// The cases of one round: RapidCheck's draws for this seed, generated without running them, so
// that they can run on both backends as one batch. A rerun of the round with the same seed draws
// the same cases.
std::vector<CaseRecord> round_cases(const rc::Gen<CaseRecord>& gen, const CaseSpace& space,
                                    const rc::detail::TestParams& params) {
  std::vector<CaseRecord> cases;
  const auto collect = [&] {
    CaseRecord r = *gen;
    if (const std::string why = outside_declarations(space, r.c); !why.empty()) RC_DISCARD(why);
    cases.push_back(std::move(r));
  };
  rc::detail::TestMetadata metadata;
  metadata.id = metadata.description = "campaign round";
  const rc::detail::TestResult r = rc::detail::checkTestable(collect, metadata, params);
  if (r.template is<rc::detail::FailureResult>())
    throw std::logic_error("the case generator failed (a harness bug): " + r.template get<rc::detail::FailureResult>().description);
  if (r.template is<rc::detail::GaveUpResult>())
    throw std::invalid_argument("the case generator gave up: too few generated cases lie inside the backends' declarations (" +
                                r.template get<rc::detail::GaveUpResult>().description + ")");
  return cases;
}

}  // namespace

std::vector<CaseRecord> sample_cases(const CaseSpace& space, std::size_t n, std::uint64_t seed) {
  rc::detail::TestParams params;
  params.seed = seed;
  params.maxSuccess = int(n);
  params.maxSize = 100;
  params.maxDiscardRatio = 100;
  return round_cases(case_record(space), space, params);
}

CampaignResult run_campaign(const CampaignOptions& o, Backend& expected, Backend& actual) {
  CampaignResult result;
  result.ulp.bound = o.compare.max_ulp;
  const auto t0 = Clock::now();
  CaseSpace space = o.space;
  space.declarations.push_back(expected.declaration());
  space.declarations.push_back(actual.declaration());
  const rc::Gen<CaseRecord> gen = case_record(space);
  auto done = [&] {
    return (o.seconds && since(t0) >= *o.seconds) || (o.cases && result.cases >= *o.cases) ||
           result.failures.size() >= o.max_failures;
  };
  for (std::uint64_t round = std::uint64_t(o.shard); !done(); round += std::uint64_t(o.shards)) {
    rc::detail::TestParams params;
    params.seed = round_seed(o.seed, o.shards, round);
    params.maxSuccess = o.cases_per_round;
    params.maxSize = 100;
    params.maxDiscardRatio = 100;  // cases outside a declaration are discarded
    const std::vector<CaseRecord> batch = round_cases(gen, space, params);
    std::vector<Case> cases;
    for (const CaseRecord& r : batch) cases.push_back(r.c);
    std::vector<Outcome> e = expected.run_many(cases), a = actual.run_many(cases);
    std::optional<std::size_t> first_failure;  // index in the batch
    for (std::size_t i = 0; i < batch.size(); ++i) {
      OperationStats& s = result.per_operation[batch[i].c.op];
      ++s.cases;
      s.seconds += e[i].seconds + a[i].seconds;
      const Comparison cmp = compare_outcomes(expected.name(), std::move(e[i]), actual.name(), std::move(a[i]),
                                              compare_mode_for(o.compare, batch[i].c.op));
      for (const UlpReport& u : cmp.ulp) result.ulp.add(u, case_label(batch[i].c));
      if (!first_failure && !cmp.agree) first_failure = i;
    }
    const std::size_t cases_before = result.cases;
    result.cases += batch.size();
    if (o.on_progress) o.on_progress({result.cases, result.failures.size(), since(t0)});
    if (!first_failure) continue;

    // Shrinking: the round again, one case at a time. RapidCheck draws the same cases, stops at the
    // first that fails and shrinks it, ending on the smallest case that still fails.
    std::optional<CaseRecord> last_failing;
    const auto property = [&] {
      const CaseRecord r = *gen;
      if (const std::string why = outside_declarations(space, r.c); !why.empty()) RC_DISCARD(why);
      const Comparison cmp = compare_backends(r.c, expected, actual, o.compare);
      if (!cmp.agree) {
        last_failing = r;
        RC_FAIL(cmp.problem);
      }
    };
    rc::detail::TestMetadata metadata;
    metadata.id = metadata.description = "campaign round";
    rc::detail::checkTestable(property, metadata, params);
    CampaignFailure f;
    // A backend that fails only sometimes (in a batch, not alone) leaves the batch's case unshrunk.
    f.shrunk = last_failing ? *last_failing : batch[*first_failure];
    f.shrunk.origin = "fuzz campaign seed=" + std::to_string(o.seed) + " shard=" + std::to_string(o.shard) + "/" +
                      std::to_string(o.shards) + " round=" + std::to_string(round) + compare_origin(o.compare) +
                      (last_failing ? "" : " (failed in a batch, not when rerun alone: not shrunk)");
    if (last_failing) {
      shrink_master_weights(f.shrunk, expected, actual);
      zero_irrelevant_blocks(f.shrunk, expected, actual, o.compare);
    }
    f.comparison = compare_backends(f.shrunk.c, expected, actual, o.compare);
    f.shrunk.found = std::string(verdict_name(f.comparison.verdict));
    f.cases_to_detection = cases_before + *first_failure + 1;
    if (!o.corpus.empty()) f.saved = save_case(o.corpus, f.shrunk);
    ++result.per_operation[f.shrunk.c.op].failures;
    result.failures.push_back(std::move(f));
  }
  result.seconds = since(t0);
  return result;
}

}  // namespace nvfp4::fuzz
