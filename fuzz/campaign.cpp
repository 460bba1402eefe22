#include "fuzz/campaign.h"

#include <algorithm>
#include <chrono>

#include <rapidcheck.h>

#include "cases/corpus.h"
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
void zero_irrelevant_blocks(CaseRecord& r, Backend& expected, Backend& actual) {
  for (auto& [name, tensor] : r.c.inputs) {
    if (tensor.dtype != io::DType::F32 && tensor.dtype != io::DType::BF16 && tensor.dtype != io::DType::F16) continue;
    std::vector<std::uint8_t>& bytes = tensor.bytes;
    const std::size_t block_bytes = 16 * io::dtype_size(tensor.dtype);
    bool changed = false;
    for (std::size_t off = 0; off + block_bytes <= bytes.size(); off += block_bytes) {
      const std::vector<std::uint8_t> saved(bytes.begin() + off, bytes.begin() + off + block_bytes);
      if (std::all_of(saved.begin(), saved.end(), [](std::uint8_t b) { return b == 0; })) continue;
      std::fill(bytes.begin() + off, bytes.begin() + off + block_bytes, 0);
      if (compare_backends(r.c, expected, actual).agree)
        std::copy(saved.begin(), saved.end(), bytes.begin() + off);
      else
        changed = true;
    }
    if (changed) r.recipes.erase(name);
  }
}

}  // namespace

CampaignResult run_campaign(const CampaignOptions& o, Backend& expected, Backend& actual) {
  CampaignResult result;
  const auto t0 = Clock::now();
  const rc::Gen<CaseRecord> gen = case_record(o.space);
  auto done = [&] {
    return (o.seconds && since(t0) >= *o.seconds) || (o.cases && result.cases >= *o.cases) ||
           result.failures.size() >= o.max_failures;
  };
  for (std::uint64_t round = std::uint64_t(o.shard); !done(); round += std::uint64_t(o.shards)) {
    std::optional<CaseRecord> last_failing;  // RapidCheck's shrinking ends on the minimal failing case
    std::optional<std::size_t> first_failure;
    const auto property = [&] {
      const CaseRecord r = *gen;
      const auto start = Clock::now();
      const Comparison cmp = compare_backends(r.c, expected, actual);
      OperationStats& s = result.per_operation[r.c.op];
      if (!last_failing) {  // shrinking re-runs are not new cases
        ++result.cases;
        ++s.cases;
        s.seconds += since(start);
        if (o.on_progress) o.on_progress({result.cases, result.failures.size(), since(t0)});
      }
      if (!cmp.agree) {
        if (!first_failure) first_failure = result.cases;
        last_failing = r;
        RC_FAIL(cmp.problem);
      }
    };
    rc::detail::TestParams params;
    params.seed = round_seed(o.seed, o.shards, round);
    params.maxSuccess = o.cases_per_round;
    params.maxSize = 100;
    rc::detail::TestMetadata metadata;
    metadata.id = metadata.description = "campaign round";
    const rc::detail::TestResult r = rc::detail::checkTestable(property, metadata, params);
    if (r.template is<rc::detail::FailureResult>() && !last_failing)
      throw std::logic_error("campaign round " + std::to_string(round) + ": the case generator failed (a harness bug): " +
                             r.template get<rc::detail::FailureResult>().description);
    if (!r.template is<rc::detail::FailureResult>() || !last_failing) continue;
    CampaignFailure f;
    f.shrunk = *last_failing;
    f.shrunk.origin = "fuzz campaign seed=" + std::to_string(o.seed) + " shard=" + std::to_string(o.shard) + "/" +
                      std::to_string(o.shards) + " round=" + std::to_string(round);
    shrink_master_weights(f.shrunk, expected, actual);
    zero_irrelevant_blocks(f.shrunk, expected, actual);
    f.comparison = compare_backends(f.shrunk.c, expected, actual);
    f.cases_to_detection = *first_failure;
    if (!o.corpus.empty()) f.saved = save_case(o.corpus, f.shrunk);
    ++result.per_operation[f.shrunk.c.op].failures;
    result.failures.push_back(std::move(f));
  }
  result.seconds = since(t0);
  return result;
}

}  // namespace nvfp4::fuzz
