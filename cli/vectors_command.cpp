// `nvfp4-verify vectors`: conformance vector packs (docs/vectors.md).
//   vectors --level 1|2 [--seed S] [--ops ...] [--profiles ...] --output DIR   writes a pack
//   vectors --level 1 ... --hashes FILE                                         writes its files' SHA-256
//   vectors --check DIR (--worker CMD | --plugin LIB | --backend NAME) [--report DIR]
//   vectors --stats [--level 1] [--seed S] [--ops ...] [--profiles ...]
// --check replays every vector of the pack on the backend against the pack's stored outputs, as
// replay does (exit 0, 1 on a mismatch or when the backend declares none of the vectors, 2 on an
// unreadable or damaged pack).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/reference_backend.h"
#include "cli/backends.h"
#include "cli/commands.h"
#include "cli/replay_report.h"
#include "io/atomic_file.h"
#include "io/output_path.h"
#include "vectors/pack.h"
#include "vectors/stats.h"

namespace nvfp4::cli {
namespace {

namespace fs = std::filesystem;

struct VectorsArgs {
  int level = 1;
  std::uint64_t seed = vectors::kDefaultSeed;
  std::vector<std::string> ops, profiles;
  std::string output, hashes, check, report, backend;
  bool stats = false;
  ExternalOptions external;
};

vectors::Selection selection(const VectorsArgs& a) {
  return {a.level == 2 ? vectors::Level::k2 : vectors::Level::k1, a.seed, a.ops, a.profiles};
}

std::size_t count(const std::vector<vectors::VectorSet>& sets) {
  std::size_t n = 0;
  for (const vectors::VectorSet& s : sets) n += s.vectors.size();
  return n;
}

int check(const VectorsArgs& a) {
  if (!a.report.empty()) io::prepare_output_directory(a.report, "--report");
  std::string backend = a.backend;
  if (backend.empty()) backend = !a.external.worker.empty() ? "worker" : !a.external.plugin.empty() ? "plugin" : "";
  if (backend.empty())
    throw UsageError("vectors --check: name the implementation to check: --worker CMD, --plugin LIB or --backend NAME");
  const vectors::Pack pack = vectors::read_pack(a.check);
  const std::unique_ptr<cases::Backend> actual = make_backend(backend, a.external);
  cases::ReferenceBackend unused;  // the pack's stored outputs stand for the first backend
  fmt::print("vectors: pack {} (level {}, seed {}, generator {}), {} files, against {}\n", a.check,
             pack.manifest.at("generator").at("level").get<int>(), pack.manifest.at("generator").at("seed").get<std::uint64_t>(),
             pack.manifest.at("generator").at("version").get<int>(), pack.sets.size(), actual->name());
  std::fflush(stdout);
  // A backend that declares none of the pack's vectors would pass it vacuously.
  const bool any_inside = std::any_of(pack.sets.begin(), pack.sets.end(), [&](const vectors::VectorSet& s) {
    return std::any_of(s.vectors.begin(), s.vectors.end(),
                       [&](const vectors::Vector& v) { return outside_backends(v.c, unused, *actual).empty(); });
  });
  if (!any_inside) {
    fmt::print("vectors: {} declares none of the pack's vectors: nothing to check\n", actual->name());
    return 1;
  }
  const ReplayRun run{"vectors", fmt::format("vectors of {} against {}", a.check, actual->name()), "pack", unused, *actual, {},
                      a.report};
  return replay_and_report(run, vectors::replay_sources(a.check, pack.sets, true), 0);
}

int run(const VectorsArgs& a) {
  const int modes = int(!a.output.empty()) + int(!a.hashes.empty()) + int(!a.check.empty()) + int(a.stats);
  if (modes != 1) throw UsageError("vectors: give exactly one of --output DIR, --hashes FILE, --check DIR and --stats");
  if (!a.check.empty()) return check(a);
  if (!a.output.empty()) io::prepare_output_directory(a.output, "--output");
  if (!a.hashes.empty()) io::prepare_output_file(a.hashes, "--hashes");
  const vectors::Selection s = selection(a);
  const std::vector<vectors::VectorSet> sets = vectors::generate(s);
  if (a.stats) {
    fmt::print("vectors: level {}, seed {}: {} vectors in {} sets\n\n", a.level, a.seed, count(sets), sets.size());
    fmt::print("{}", vectors::render_stats(vectors::profile_pairs(sets), vectors::fault_reach(sets)));
    return 0;
  }
  if (!a.hashes.empty()) {
    io::write_file_atomic(a.hashes, std::string_view(vectors::hashes_json(s, sets).dump(2) + "\n"));
    fmt::print("vectors: the SHA-256 of {} files ({} vectors) written to {}\n", sets.size(), count(sets), a.hashes);
    return 0;
  }
  vectors::write_pack(a.output, s, sets);
  fmt::print("vectors: level {}, seed {}: {} vectors in {} files written to {} (manifest.json)\n", a.level, a.seed, count(sets),
             sets.size(), a.output);
  return 0;
}

}  // namespace

void register_vectors(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<VectorsArgs>();
  CLI::App* cmd = app.add_subcommand("vectors",
                                     "Conformance vector packs: write one, check an implementation against one, "
                                     "or print how well one tells profiles and faults apart");
  cmd->add_option("--level", a->level, "1: regimes x the small pattern set; 2: every pattern, mode and a second shape")
      ->check(CLI::IsMember({1, 2}))
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "the generator's seed")->capture_default_str();
  cmd->add_option("--ops", a->ops, "operations (default: all a pack covers)")->delimiter(',');
  cmd->add_option("--profiles", a->profiles, "profiles (default: all)")->delimiter(',');
  cmd->add_option("--output", a->output, "write the pack into this directory");
  cmd->add_option("--hashes", a->hashes, "write the SHA-256 of the pack's files (corpora/vectors/level-1.json) here");
  cmd->add_option("--check", a->check, "replay this pack on the backend and compare with its stored outputs");
  cmd->add_option("--backend", a->backend, "--check: the backend to check (default: worker with --worker, plugin with --plugin)");
  cmd->add_option("--report", a->report, "--check: write an HTML report into this directory");
  cmd->add_flag("--stats", a->stats, "print the vectors that tell each pair of profiles apart and each fault pattern's reach");
  add_external_options(cmd, a->external);
  cmd->callback([a, &exit_code] { exit_code = run(*a); });
}

}  // namespace nvfp4::cli
