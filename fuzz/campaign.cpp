#include "fuzz/campaign.h"

#include <algorithm>
#include <chrono>
#include <latch>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <rapidcheck.h>

#include "cases/corpus.h"
#include "cases/registry.h"
#include "compare/diagnose.h"
#include "fuzz/shrink_master_weights.h"

namespace nvfp4::fuzz {
namespace {

using Clock = std::chrono::steady_clock;

// RapidCheck keeps its generation state in globals: every draw and every shrink holds this lock.
std::mutex& rapidcheck_mutex() {
  static std::mutex m;
  return m;
}

// A listener that prints nothing. RapidCheck's global one prints progress and, at exit after a
// failure, an RC_PARAMS line that reproduces nothing of a campaign (its saved case and `replay`
// do); its global configuration prints "Using configuration" when loaded and lets RC_PARAMS
// replace a round's draws. Rounds run with this listener and no reproductions, so that neither
// global is ever loaded: the CLI's output is the campaign's own, whatever RC_PARAMS says.
class SilentListener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// One RapidCheck run of a round's property (its draws, or its shrinking), holding the lock.
template <typename Property>
rc::detail::TestResult check_round(const Property& property, const rc::detail::TestParams& params) {
  SilentListener listener;
  const std::unordered_map<std::string, rc::detail::Reproduce> no_reproductions;
  rc::detail::TestMetadata metadata;
  metadata.id = metadata.description = "campaign round";
  const std::lock_guard lock(rapidcheck_mutex());
  return rc::detail::checkTestable(property, metadata, params, listener, no_reproductions);
}

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The RapidCheck seed of a round: a pure function of (seed, round), so that shard K of N runs the
// very rounds K, K + N, ... of the one-process campaign. The fixed 1 << 48 is part of every
// campaign's cases (the gate's included): changing it changes them all.
std::uint64_t round_seed(std::uint64_t seed, std::uint64_t round) {
  cases::SplitMix64 mix(seed * 0x100000001B3ull ^ (std::uint64_t(1) << 48) ^ round);
  return mix.next();
}

// Reruns of a failing case while it is shrunk, within the campaign's time limit: none past it (a
// worker's wait is cut off there), so that a worker hanging on every case cannot make shrinking
// outlast the campaign. It keeps the comparison of the last case that still failed: the shrunk
// case's, when shrinking keeps each such case.
class ShrinkRuns {
 public:
  ShrinkRuns(cases::Backend& expected, cases::Backend& actual, const compare::CompareMode& mode)
      : expected_(expected), actual_(actual), mode_(mode) {}

  // Whether c still fails; false for every case once shrinking has stopped.
  bool fails(const cases::Case& c) {
    if (!stopped_.empty()) return false;
    std::vector<cases::Outcome> e = expected_.run_many({&c, 1}), a = actual_.run_many({&c, 1});
    if (e.front().cut_off || a.front().cut_off) {
      stopped_ = "shrinking stopped by the time limit";
      return false;
    }
    compare::Comparison cmp = compare::compare_outcomes(expected_.name(), std::move(e.front()), actual_.name(),
                                                        std::move(a.front()), compare::compare_mode_for(mode_, c.op));
    // Each rerun of a hang waits out the backend's timeout: a few bound the campaign's run.
    if (cmp.verdict == compare::Verdict::kTimeout && ++timeouts_ == kMaxTimeouts) {
      stopped_ = fmt::format("shrinking stopped after {} reruns that timed out", kMaxTimeouts);
      return false;
    }
    if (cmp.agree) return false;
    last_failure_ = std::move(cmp);
    return true;
  }

  const std::string& stopped() const { return stopped_; }  // why shrinking stopped early; "" when it did not
  const std::optional<compare::Comparison>& last_failure() const { return last_failure_; }

 private:
  cases::Backend& expected_;
  cases::Backend& actual_;
  const compare::CompareMode& mode_;
  static constexpr int kMaxTimeouts = 4;
  int timeouts_ = 0;
  std::string stopped_;
  std::optional<compare::Comparison> last_failure_;
};

// Greedy data shrinking after RapidCheck's structural shrinking: zeroes the 16-element blocks of
// every floating-point input (x, a shard's xs, each master weight) one at a time, keeping each
// change that still fails, so the saved case holds only the blocks that matter. Rowwise blocks
// (1x16) go first, then columnwise ones (16x1, where the rows come in sixteens): a columnwise
// failure, and above all one of the Hadamard transform, which mixes 16 rows, needs a column
// block and one element of each of 16 row blocks. A changed input is then stored as a tensor,
// no longer as its recipe.
void zero_irrelevant_blocks(cases::CaseRecord& r, ShrinkRuns& runs) {
  for (auto& [name, tensor] : r.c.inputs) {
    if (tensor.dtype != io::DType::F32 && tensor.dtype != io::DType::BF16 && tensor.dtype != io::DType::F16) continue;
    std::vector<std::uint8_t>& bytes = tensor.bytes;
    const std::size_t size = io::dtype_size(tensor.dtype), n = bytes.size() / size;
    bool changed = false;
    // Elements first, first + step, ..., 16 of them, zeroed if the case still fails without them.
    const auto try_zeroing = [&](std::size_t first, std::size_t step) {
      std::vector<std::uint8_t> saved(16 * size);
      for (std::size_t i = 0; i < 16; ++i)
        std::copy_n(bytes.begin() + std::ptrdiff_t((first + i * step) * size), size, saved.begin() + std::ptrdiff_t(i * size));
      if (std::all_of(saved.begin(), saved.end(), [](std::uint8_t b) { return b == 0; })) return;
      for (std::size_t i = 0; i < 16; ++i) std::fill_n(bytes.begin() + std::ptrdiff_t((first + i * step) * size), size, 0);
      if (runs.fails(r.c)) {
        changed = true;
        return;
      }
      for (std::size_t i = 0; i < 16; ++i)
        std::copy_n(saved.begin() + std::ptrdiff_t(i * size), size, bytes.begin() + std::ptrdiff_t((first + i * step) * size));
    };
    for (std::size_t first = 0; first + 16 <= n && runs.stopped().empty(); first += 16) try_zeroing(first, 1);
    const std::size_t K = tensor.shape.size() >= 2 ? std::size_t(tensor.shape.back()) : 0, rows = K ? n / K : 0;
    if (K && rows % 16 == 0)
      for (std::size_t r0 = 0; r0 < rows && runs.stopped().empty(); r0 += 16)
        for (std::size_t k = 0; k < K; ++k) try_zeroing(r0 * K + k, K);
    if (changed) r.recipes.erase(name);
  }
}

// How a saved case was compared when found, for its origin: replayed bit for bit, a case found
// beyond a ULP bound still differs, but only `replay --compare ulp --max-ulp N` checks the bound.
std::string compare_origin(const compare::CompareMode& mode) {
  if (!mode.ulp) return "";
  return mode.max_ulp ? " compare=ulp max-ulp=" + std::to_string(*mode.max_ulp) : " compare=ulp";
}

// The cases of one round: RapidCheck's draws for this seed, generated without running them, so
// that they can run on both backends as one batch. A rerun of the round with the same seed draws
// the same cases. Only the draws hold RapidCheck's lock; the plans are built after it, on the
// calling job's thread, unless a declaration must see a built case to discard it.
std::vector<cases::CaseRecord> round_cases(const CaseSpace& space, const rc::Gen<CasePlan>& gen,
                                           const rc::detail::TestParams& params) {
  const bool discards =
      std::any_of(space.declarations.begin(), space.declarations.end(), [](const cases::Declaration* d) { return d != nullptr; });
  std::vector<CasePlan> plans;
  std::vector<cases::CaseRecord> cases;
  const auto collect = [&] {
    CasePlan p = *gen;
    if (!discards) return plans.push_back(std::move(p));
    cases::CaseRecord r = p.build();
    if (const std::string why = outside_declarations(space, r.c); !why.empty()) RC_DISCARD(why);
    cases.push_back(std::move(r));
  };
  const rc::detail::TestResult r = check_round(collect, params);
  if (r.template is<rc::detail::FailureResult>())
    throw std::logic_error("the case generator failed (a harness bug): " +
                           r.template get<rc::detail::FailureResult>().description);
  if (r.template is<rc::detail::GaveUpResult>())
    throw std::invalid_argument("the case generator gave up: too few generated cases lie inside the backends' declarations (" +
                                r.template get<rc::detail::GaveUpResult>().description + ")");
  for (const CasePlan& p : plans) cases.push_back(p.build());
  return cases;
}

// One round of rapidcheck parameters: a pure function of (seed, round).
rc::detail::TestParams round_params(const CampaignOptions& o, std::uint64_t round) {
  rc::detail::TestParams params;
  params.seed = round_seed(o.seed, round);
  params.maxSuccess = o.cases_per_round;
  params.maxSize = 100;
  params.maxDiscardRatio = 100;  // cases outside a declaration are discarded
  return params;
}

// What one round found, before it is merged into the campaign's result in round order.
struct RoundResult {
  std::size_t cases = 0;
  bool cut_off = false;  // the time limit ended it: `cases` counts the cases before that
  std::map<std::string, OperationStats> per_operation;
  std::vector<std::pair<compare::UlpReport, std::string>> ulp;  // each case's ULP reports, in case order
  std::optional<CampaignFailure> failure;                       // shrunk, not saved yet; cases_to_detection within the round
};

RoundResult run_round(const CampaignOptions& o, const CaseSpace& space, std::uint64_t round, cases::Backend& expected,
                      cases::Backend& actual) {
  RoundResult res;
  const rc::detail::TestParams params = round_params(o, round);
  std::vector<cases::CaseRecord> batch = round_cases(space, case_plan(space), params);
  std::vector<cases::Case> cases;  // moved out of the batch (the tensors are not copied); back on a failure
  for (cases::CaseRecord& r : batch) cases.push_back(std::move(r.c));
  std::vector<cases::Outcome> e = expected.run_many(cases), a = actual.run_many(cases);
  // The round ends at the first case the time limit cut off or a backend skipped: the cases before
  // it count.
  std::size_t ran = 0;
  while (ran < cases.size() && !e[ran].cut_off && !a[ran].cut_off && !e[ran].skipped && !a[ran].skipped) ++ran;
  res.cut_off = ran < cases.size() && (e[ran].cut_off || a[ran].cut_off);
  std::optional<std::size_t> first_failure;          // index in the batch
  std::optional<compare::Comparison> batch_failure;  // its comparison
  for (std::size_t i = 0; i < ran; ++i) {
    OperationStats& s = res.per_operation[cases[i].op];
    ++s.cases;
    s.seconds += e[i].seconds + a[i].seconds;
    compare::Comparison cmp = compare::compare_outcomes(expected.name(), std::move(e[i]), actual.name(), std::move(a[i]),
                                                        compare::compare_mode_for(o.compare, cases[i].op));
    for (const compare::UlpReport& u : cmp.ulp) res.ulp.emplace_back(u, cases::case_label(cases[i]));
    if (!first_failure && !cmp.agree) first_failure = i, batch_failure = std::move(cmp);
  }
  res.cases = ran;
  if (!first_failure) return res;

  // Shrinking: the round again, one case at a time. RapidCheck draws the same cases, stops at the
  // first that fails and shrinks it, ending on the smallest case that still fails.
  ShrinkRuns runs(expected, actual, o.compare);
  const rc::Gen<cases::CaseRecord> gen = case_record(space);
  std::optional<cases::CaseRecord> last_failing;
  const auto property = [&] {
    const cases::CaseRecord r = *gen;
    if (const std::string why = outside_declarations(space, r.c); !why.empty()) RC_DISCARD(why);
    if (runs.fails(r.c)) {
      last_failing = r;
      RC_FAIL(runs.last_failure()->problem);
    }
  };
  check_round(property, params);
  CampaignFailure f;
  // A backend that fails only sometimes (in a batch, not alone) leaves the batch's case unshrunk.
  if (!last_failing) batch[*first_failure].c = std::move(cases[*first_failure]);
  f.shrunk = last_failing ? *last_failing : batch[*first_failure];
  if (last_failing) {
    shrink_master_weights(f.shrunk, [&](const cases::Case& c) { return runs.fails(c); });
    zero_irrelevant_blocks(f.shrunk, runs);
  }
  f.shrink_stopped = runs.stopped();
  // Seed and round reproduce the case; the shard is left out, so that a shard saves the very file
  // the one-process campaign saves.
  f.shrunk.origin =
      "fuzz campaign seed=" + std::to_string(o.seed) + " round=" + std::to_string(round) + compare_origin(o.compare);
  if (!f.shrink_stopped.empty())
    f.shrunk.origin += " (" + f.shrink_stopped + (last_failing ? ": the smallest failing case found so far)" : ": not shrunk)");
  else if (!last_failing)
    f.shrunk.origin += " (failed in a batch, not when rerun alone: not shrunk)";
  // The comparison of the saved case: the last rerun that failed, which is the shrunk case's.
  f.comparison = last_failing ? *runs.last_failure() : std::move(*batch_failure);
  f.shrunk.found = std::string(compare::verdict_name(f.comparison.verdict));
  f.explanation = compare::explain_comparison(f.shrunk.c, f.comparison);
  // Shrinking can lose what tells causes apart; the case as found may still have it.
  if (last_failing && !f.explanation.causes.empty() && batch_failure)
    compare::confirm_with_found(f.explanation, compare::explain_comparison(cases[*first_failure], *batch_failure));
  f.cases_to_detection = *first_failure + 1;
  f.round = round;
  ++res.per_operation[f.shrunk.c.op].failures;
  res.failure = std::move(f);
  return res;
}

// The rounds of one campaign, claimed by its jobs in order and merged in order.
class Campaign {
 public:
  Campaign(const CampaignOptions& o, CaseSpace space) : o_(o), space_(std::move(space)), t0_(Clock::now()) {
    result_.ulp.bound = o.compare.max_ulp;
    const std::size_t per_round = std::size_t(o.cases_per_round);
    if (o.cases) rounds_ = *o.cases / per_round + (*o.cases % per_round != 0);  // ceil, without overflow
    if (o.seconds) deadline_ = t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*o.seconds));
  }

  // Runs rounds on these backends until the campaign is done or another job failed.
  void run_job(cases::Backend& expected, cases::Backend& actual) {
    const TimeLimit limits[] = {{expected, deadline_}, {actual, deadline_}};
    for (;;) {
      std::uint64_t k = 0;
      {
        const std::lock_guard lock(mutex_);
        if (stop_ || (o_.seconds && since(t0_) >= *o_.seconds)) {
          stop_ = true;
          return;
        }
        // A --cases campaign is its first rounds_ rounds: the rule each shard applies alone.
        if (o_.cases && round_of(next_) >= rounds_) {
          stop_ = true;
          return;
        }
        k = next_++;
      }
      try {
        RoundResult r = run_round(o_, space_, round_of(k), expected, actual);
        const std::lock_guard lock(mutex_);
        finished_.emplace(k, std::move(r));
        merge_finished();
      } catch (...) {
        const std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
        stop_ = true;
        return;
      }
    }
  }

  // Every job reports here when it ends, also after a failure to make its backends.
  void fail(std::exception_ptr e) {
    const std::lock_guard lock(mutex_);
    if (!error_) error_ = e;
    stop_ = true;
  }

  CampaignResult finish() {
    if (error_) std::rethrow_exception(error_);
    result_.seconds = since(t0_);
    return std::move(result_);
  }

 private:
  // The round that this shard's claim index k runs: shard, shard + shards, ...
  std::uint64_t round_of(std::uint64_t k) const { return std::uint64_t(o_.shard) + k * std::uint64_t(o_.shards); }

  // The serial campaign's failure limit, checked before each round is merged (time and --cases
  // are checked when a round is claimed): rounds past the stopping point are dropped.
  bool enough() const { return result_.failures.size() >= o_.max_failures; }

  void merge_finished() {
    for (auto it = finished_.find(merged_); it != finished_.end() && !stop_merging_; it = finished_.find(merged_)) {
      if (enough()) {
        stop_merging_ = stop_ = true;
        break;
      }
      const bool cut_off = it->second.cut_off;
      // Every further case of a backend that hung would wait out its timeout: one saved case is
      // enough to reproduce a hang, so it ends the campaign.
      const bool hung = it->second.failure && it->second.failure->comparison.verdict == compare::Verdict::kTimeout;
      merge(std::move(it->second));
      finished_.erase(it);
      ++merged_;
      if (o_.on_progress) o_.on_progress({result_.cases, result_.failures.size(), since(t0_)});
      if (cut_off || hung) stop_merging_ = stop_ = true;  // the time limit or a hang ended this round: it is the last
    }
    if (enough()) stop_ = true;
  }

  void merge(RoundResult&& r) {
    for (const auto& [op, s] : r.per_operation) {
      OperationStats& t = result_.per_operation[op];
      t.cases += s.cases;
      t.failures += s.failures;
      t.seconds += s.seconds;
    }
    for (const auto& [report, where] : r.ulp) result_.ulp.add(report, where);
    if (r.failure) {
      CampaignFailure& f = *r.failure;
      f.cases_to_detection += result_.cases;
      if (!o_.corpus.empty()) f.saved = cases::save_case(o_.corpus, f.shrunk);
      result_.failures.push_back(std::move(f));
    }
    result_.cases += r.cases;
  }

  // A backend's deadline for the length of one job.
  struct TimeLimit {
    TimeLimit(cases::Backend& b, std::optional<Clock::time_point> deadline) : backend(b) { b.set_deadline(deadline); }
    ~TimeLimit() { backend.set_deadline(std::nullopt); }
    cases::Backend& backend;
  };

  const CampaignOptions& o_;
  const CaseSpace space_;
  const Clock::time_point t0_;
  std::optional<Clock::time_point> deadline_;  // t0 + seconds: nothing of the campaign runs past it
  std::mutex mutex_;
  CampaignResult result_;
  std::map<std::uint64_t, RoundResult> finished_;  // finished rounds not merged yet, by claim index
  std::uint64_t next_ = 0, merged_ = 0;            // claim indices: round = shard + index * shards
  std::uint64_t rounds_ = 0;                       // --cases: the campaign's rounds are 0 .. rounds_ - 1
  bool stop_ = false, stop_merging_ = false;
  std::exception_ptr error_;
};

// The space the backends' declarations narrow.
CaseSpace declared_space(const CampaignOptions& o, const cases::Backend& expected, const cases::Backend& actual) {
  CaseSpace space = o.space;
  space.declarations.push_back(expected.declaration());
  space.declarations.push_back(actual.declaration());
  return space;
}

}  // namespace

std::vector<cases::CaseRecord> sample_cases(const CaseSpace& space, std::size_t n, std::uint64_t seed) {
  rc::detail::TestParams params;
  params.seed = seed;
  params.maxSuccess = int(n);
  params.maxSize = 100;
  params.maxDiscardRatio = 100;
  return round_cases(space, case_plan(space), params);
}

CampaignResult run_campaign(const CampaignOptions& o, cases::Backend& expected, cases::Backend& actual) {
  Campaign campaign(o, declared_space(o, expected, actual));
  campaign.run_job(expected, actual);
  return campaign.finish();
}

CampaignResult run_campaign(const CampaignOptions& o, const BackendFactory& backends, int jobs) {
  if (jobs <= 1) {
    const BackendPair pair = backends(0);
    return run_campaign(o, *pair.expected, *pair.actual);
  }
  // Each job makes its backends on its own thread; the first job's declarations narrow the space
  // (every job runs the same backends).
  const std::size_t n = std::size_t(jobs);
  std::vector<BackendPair> pairs(n);
  std::vector<std::exception_ptr> errors(n);
  std::latch made(jobs), go(1);
  std::optional<Campaign> campaign;
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j)
    threads.emplace_back([&, j] {
      try {
        pairs[std::size_t(j)] = backends(j);
      } catch (...) {
        errors[std::size_t(j)] = std::current_exception();
      }
      made.count_down();
      go.wait();
      if (errors[std::size_t(j)]) return campaign->fail(errors[std::size_t(j)]);
      campaign->run_job(*pairs[std::size_t(j)].expected, *pairs[std::size_t(j)].actual);
    });
  made.wait();
  const BackendPair& first = pairs.front();
  if (first.expected && first.actual)
    campaign.emplace(o, declared_space(o, *first.expected, *first.actual));
  else
    campaign.emplace(o, o.space);  // job 0 failed to make its backends: its error ends the campaign
  go.count_down();
  for (std::thread& t : threads) t.join();
  return campaign->finish();
}

}  // namespace nvfp4::fuzz
