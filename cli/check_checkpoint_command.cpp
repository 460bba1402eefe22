// `nvfp4-verify check-checkpoint --source HF_DIR --quantized Q_DIR [--format auto|modelopt|compressed-tensors|miles]
// [--profile P | --identify] [--junit FILE] [--report DIR] [--threads N]`: every quantized tensor of Q recomputed
// from the source and compared byte for byte (checkpoint/verify.h, docs/guides/checkpoints.md#commands);
// --report and --junit write the reports of reports/checkpoint_report.h. Exit 0
// when every tensor matches (--identify: under some profile), 1 when one differs, 2 for bad input.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/verify.h"
#include "cli/commands.h"
#include "io/output_path.h"
#include "reference/profiles.h"
#include "reference/row_threads.h"
#include "reports/checkpoint_report.h"
#include "reports/junit.h"

namespace nvfp4::cli {
namespace {

struct CheckCheckpointArgs {
  std::string source, quantized, format = "auto", profile, junit, report;
  bool identify = false;
  int threads = 0;  // 0: not given, one per hardware thread
  bool threads_given = false;
};

// The command line that repeats the check, for the report's pages.
std::string repeat_command(const CheckCheckpointArgs& a, const std::string& format, const std::string& profile) {
  return fmt::format("nvfp4-verify check-checkpoint --source {} --quantized {} --format {} {}", a.source, a.quantized, format,
                     a.identify ? std::string("--identify") : "--profile " + profile);
}

void write_junit_file(const std::string& file, const checkpoint::CheckpointCheck& c, const reports::CheckpointExplanations& x) {
  reports::write_junit(file, "nvfp4-verify check-checkpoint", {reports::checkpoint_junit_suite(c, x)});
}

void write_report(const std::string& dir, const checkpoint::HfCheckpoint& source, const checkpoint::HfCheckpoint& quantized,
                  const checkpoint::CheckpointFormat& f, const checkpoint::CheckpointCheck& c,
                  const reports::CheckpointReportInfo& info) {
  const std::filesystem::path index = reports::write_checkpoint_report(dir, source, quantized, f, c, info);
  std::printf("check-checkpoint: report written to %s\n", index.string().c_str());
}

int run(const CheckCheckpointArgs& a) {
  check_threads(a.threads_given, a.threads);
  if (!a.junit.empty()) io::prepare_output_file(a.junit, "--junit");
  if (!a.report.empty()) io::prepare_output_directory(a.report, "--report");
  // Modules are checked one at a time; N caps the reference's threads over one tensor's rows.
  const RowThreadLimit limit(a.threads);
  const checkpoint::HfCheckpoint source(a.source), quantized(a.quantized);
  const std::string format_name = a.format == "auto" ? checkpoint::detect_format(quantized) : a.format;
  const auto format = checkpoint::find_format(format_name);
  if (!format)
    throw UsageError(fmt::format("--format {}: not supported; supported: auto, {}", a.format, checkpoint::supported_formats()));

  if (a.identify) {
    std::vector<std::string> matching;
    std::vector<checkpoint::CheckpointCheck> all;
    checkpoint::CheckpointCheck best;
    for (const NamedProfile& p : all_profiles()) {
      checkpoint::CheckpointCheck c = checkpoint::check_checkpoint(source, quantized, *format, std::string(p.name), false);
      std::printf("identify: %s: %zu of %zu tensors match\n", c.profile.c_str(), c.tensors.size() - c.mismatches(),
                  c.tensors.size());
      if (c.mismatches() == 0) matching.push_back(c.profile);
      if (best.tensors.empty() || c.mismatches() < best.mismatches()) best = c;
      if (!a.report.empty()) all.push_back(std::move(c));
    }
    reports::CheckpointExplanations explanations;
    if (best.mismatches() && (!a.junit.empty() || !a.report.empty())) {  // the best profile's mismatches classified and explained
      best = checkpoint::check_checkpoint(source, quantized, *format, best.profile, true);
      explanations = reports::explain_checkpoint(source, quantized, *format, best);
    }
    if (!a.junit.empty()) write_junit_file(a.junit, best, explanations);
    if (!a.report.empty())
      write_report(a.report, source, quantized, *format, best,
                   {a.source, a.quantized, format_name, repeat_command(a, format_name, best.profile), all, explanations});
    if (matching.empty()) {
      std::printf("identify: no profile matches every tensor (best: %s)\n", best.profile.c_str());
      return 1;
    }
    std::printf("identify: every tensor matches under %s\n", fmt::format("{}", fmt::join(matching, ", ")).c_str());
    return 0;
  }

  const std::string profile = a.profile.empty() ? format->default_profile : a.profile;
  const checkpoint::CheckpointCheck c = checkpoint::check_checkpoint(source, quantized, *format, profile, true);
  const reports::CheckpointExplanations explanations = reports::explain_checkpoint(source, quantized, *format, c);
  for (const checkpoint::TensorVerdict& v : c.tensors) {
    std::printf("%s\n", v.line().c_str());
    if (const auto x = explanations.find(v.module); x != explanations.end() && !x->second.verdict.empty())
      std::printf("  verdict: %s\n", x->second.verdict.c_str());
  }
  std::printf("check-checkpoint: %s under %s: %zu of %zu tensors match%s\n", a.quantized.c_str(), profile.c_str(),
              c.tensors.size() - c.mismatches(), c.tensors.size(), c.mismatches() ? "" : ", every one bit for bit");
  if (!a.junit.empty()) write_junit_file(a.junit, c, explanations);
  if (!a.report.empty())
    write_report(a.report, source, quantized, *format, c,
                 {a.source, a.quantized, format_name, repeat_command(a, format_name, profile), {}, explanations});
  return c.mismatches() ? 1 : 0;
}

}  // namespace

void register_check_checkpoint(CLI::App& app, int& exit_code) {
  auto a = std::make_shared<CheckCheckpointArgs>();
  CLI::App* cmd = app.add_subcommand("check-checkpoint", "Check an NVFP4 checkpoint against its BF16 source, tensor by tensor");
  cmd->add_option("--source", a->source, "the BF16 Hugging Face model directory")->required();
  cmd->add_option("--quantized", a->quantized, "the NVFP4 checkpoint directory")->required();
  std::vector<std::string> formats = {"auto"};
  for (const checkpoint::CheckpointFormat& f : checkpoint::checkpoint_formats()) formats.push_back(f.name);
  cmd->add_option("--format", a->format, "auto, or one of " + checkpoint::supported_formats())
      ->check(CLI::IsMember(formats))
      ->capture_default_str();
  CLI::Option* profile =
      cmd->add_option("--profile", a->profile, "numerics profile (default: the format's, modelopt or te-pyref)");
  cmd->add_flag("--identify", a->identify, "check under every profile and name those under which every tensor matches")
      ->excludes(profile);
  cmd->add_option("--junit", a->junit, "write a JUnit XML file, one testcase per tensor");
  cmd->add_option("--report", a->report,
                  "write an HTML report into this directory: index.html (every tensor's verdict) and a page per "
                  "mismatching tensor");
  CLI::Option* threads = cmd->add_option(
      "--threads", a->threads,
      "threads of the reference over the rows of one tensor (default: one per hardware thread); the verdicts do not "
      "depend on it");
  cmd->callback([a, threads, &exit_code] {
    a->threads_given = threads->count() > 0;
    exit_code = run(*a);
    std::fflush(stdout);
  });
}

}  // namespace nvfp4::cli
