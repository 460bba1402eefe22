// `nvfp4-verify worker-selftest --worker CMD`: the conformance test of docs/spec/worker-protocol.md,
// for people writing a worker. One line per check; exit 0 only when every check passes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "cli/backends.h"
#include "cli/commands.h"
#include "compare/compare.h"
#include "external/worker_backend.h"
#include "fuzz/campaign.h"

namespace nvfp4::cli {
namespace {

struct SelftestArgs {
  std::string worker;
  double timeout = 10;
  std::size_t batch = 64;
};

class Checks {
 public:
  void report(bool ok, const std::string& what, const std::string& detail = "") {
    fmt::print("{}  {}{}\n", ok ? "PASS" : "FAIL", what, detail.empty() ? "" : ": " + detail);
    std::fflush(stdout);
    failed_ += !ok;
  }
  int failed() const { return failed_; }

 private:
  int failed_ = 0;
};

// The case with its first input's last dimension cut to 15: no NVFP4 operation accepts that.
std::optional<cases::Case> rejected_case(const cases::Case& c, cases::ReferenceBackend& reference) {
  cases::Case bad = c;
  for (auto& [name, t] : bad.inputs) {
    if (t.shape.size() != 2 || t.shape[1] < 16) continue;
    const std::int64_t rows = t.shape[0], cols = t.shape[1];
    const std::size_t esize = io::dtype_size(t.dtype);
    std::vector<std::uint8_t> bytes;
    for (std::int64_t r = 0; r < rows; ++r)
      bytes.insert(bytes.end(), t.bytes.begin() + std::ptrdiff_t(r * cols * esize),
                   t.bytes.begin() + std::ptrdiff_t((r * cols + 15) * esize));
    t = io::make_tensor(t.dtype, {rows, 15}, bytes);
    if (cases::run_outcome(reference, bad).rejected) return bad;
    break;
  }
  return std::nullopt;
}

// What the declaration of `op` leaves out: the parameters held at their defaults, and which of the
// operation's newer parameters (those added after its first release) the worker names.
void print_coverage(const cases::Declaration::Op& op) {
  std::vector<std::string> held, newer;
  for (const cases::ParamSpec* p : op.held_at_default())
    held.push_back(fmt::format("{}={}", p->name, cases::param_to_json(p->default_value).dump()));
  for (const cases::ParamSpec& p : op.spec->params)
    if (p.omit_default) newer.push_back(fmt::format("{} ({})", p.name, op.named.contains(p.name) ? "named" : "at its default"));
  fmt::print("      {}: held at their defaults: {}\n", op.spec->name,
             held.empty() ? "none" : fmt::format("{}", fmt::join(held, ", ")));
  if (!newer.empty()) fmt::print("      {}: newer parameters of the registry: {}\n", op.spec->name, fmt::join(newer, ", "));
}

int selftest(const SelftestArgs& a) {
  Checks checks;
  external::WorkerOptions o;
  o.command = a.worker;
  o.timeout_s = a.timeout;
  std::unique_ptr<external::WorkerBackend> w;
  try {
    w = std::make_unique<external::WorkerBackend>(o);
  } catch (const cases::BackendUnavailable& e) {
    checks.report(false, "handshake", e.what());
    return 1;
  }
  checks.report(true, "handshake",
                fmt::format("protocol {} (this harness speaks {}; a parameter the declaration does not name is held at its "
                            "default), worker '{}'",
                            w->worker_protocol(), external::wire::kProtocolVersion, w->worker_name()));
  checks.report(true, "declaration", w->declaration()->to_json().dump());
  for (const std::string& op : w->declaration()->operations()) print_coverage(*w->declaration()->find(op));

  cases::ReferenceBackend reference;
  std::vector<cases::Case> all;
  for (const std::string& op : w->declaration()->operations()) {
    fuzz::CaseSpace space;
    space.ops = {op};
    space.max_dim = 64;
    space.declarations = {w->declaration()};
    std::vector<cases::CaseRecord> sample;
    try {
      sample = fuzz::sample_cases(space, std::max<std::size_t>(a.batch / 4, 4), 1);
    } catch (const std::exception& e) {
      checks.report(false, fmt::format("{}: cases inside the declaration", op), e.what());
      continue;
    }
    const compare::Comparison cmp = compare::compare_backends(sample.front().c, reference, *w);
    checks.report(cmp.agree, fmt::format("{}: one case equals the reference ({})", op, cases::case_label(sample.front().c)),
                  cmp.agree ? "" : fmt::format("{}: {}", compare::verdict_name(cmp.verdict), cmp.problem));
    if (const std::optional<cases::Case> bad = rejected_case(sample.front().c, reference)) {
      const compare::Comparison rej = compare::compare_backends(*bad, reference, *w);
      checks.report(rej.agree, fmt::format("{}: rejects a case the reference rejects (K=15)", op),
                    rej.agree ? "" : fmt::format("{}: {}", compare::verdict_name(rej.verdict), rej.problem));
    }
    for (cases::CaseRecord& r : sample) all.push_back(std::move(r.c));
  }
  if (!all.empty()) {
    if (all.size() > a.batch) all.resize(a.batch);
    std::vector<cases::Outcome> expected = reference.run_many(all), actual = w->run_many(all);
    std::size_t agree = 0;
    std::string first;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const compare::Comparison cmp =
          compare::compare_outcomes("reference", std::move(expected[i]), "worker", std::move(actual[i]));
      agree += cmp.agree;
      if (!cmp.agree && first.empty())
        first = fmt::format("first: {}: {}: {}", cases::case_label(all[i]), compare::verdict_name(cmp.verdict), cmp.problem);
    }
    checks.report(agree == all.size(), fmt::format("{} cases in flight at once, answered in order", all.size()),
                  agree == all.size() ? "" : fmt::format("{} of {} agree; {}", agree, all.size(), first));
  }
  checks.report(w->restarts() == 0, "no restarts", w->restarts() ? fmt::format("{} restarts", w->restarts()) : "");
  const std::string bye = w->shut_down();
  checks.report(bye.empty(), "exits with status 0 on bye", bye);
  fmt::print("worker-selftest: {}\n", checks.failed() ? fmt::format("{} checks FAILED", checks.failed()) : "all checks passed");
  return checks.failed() ? 1 : 0;
}

}  // namespace

void register_worker_selftest(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<SelftestArgs>();
  CLI::App* cmd = app.add_subcommand("worker-selftest",
                                     "Check that a worker speaks docs/spec/worker-protocol.md and agrees with the reference");
  cmd->add_option("--worker", a->worker, "the worker's command: plain words run directly, shell syntax under /bin/sh -c")
      ->required();
  cmd->add_option("--worker-timeout", a->timeout, "seconds per case")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--batch", a->batch, "cases in flight in the batch check")->capture_default_str()->check(CLI::Range(1, 64));
  cmd->callback([a, &exit_code] { exit_code = selftest(*a); });
}

}  // namespace nvfp4::cli
