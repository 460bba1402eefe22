// Backends by name, for the commands that compare two of them (replay, fuzz, gate, check).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cases/case.h"
#include "compare/compare.h"
#include "fuzz/campaign.h"

namespace nvfp4::cli {

// How to reach the external backends: a worker command (docs/spec/worker-protocol.md) or a plugin
// library (docs/spec/plugin-abi.md).
struct ExternalOptions {
  std::string worker;          // --worker 'CMD ARGS...'
  double worker_timeout = 10;  // --worker-timeout, seconds per case
  std::string plugin;          // --plugin ./libmine.so
};

// Adds --worker, --worker-timeout and --plugin to a command.
void add_external_options(CLI::App* cmd, ExternalOptions& o);

// One backend the comparing commands can name: the table (cli/backends.cpp) that make_backend,
// --backends' check, its help text and its error messages all read.
struct BackendRow {
  std::string_view name;         // as --backends names it
  std::string_view description;  // one line, for help texts
  std::unique_ptr<cases::Backend> (*make)(const ExternalOptions& external, int device);
  std::string (*unavailable)();  // why it cannot run here, or "" when it can
  // Whether a one-shot command (gemm, cast-master-weights, convert-checkpoint) may compute its
  // output with it: only the implementations of the specification itself, not the metamorphic
  // test route or the external implementations under test.
  bool computes_outputs = false;
};
std::span<const BackendRow> backend_rows();
std::string backend_names(std::string_view separator);  // "reference, metamorphic, ..."
// The help text of --backends: every row with its description, and the default pair.
std::string backends_option_help();
// Adds a one-shot command's --backend option: the rows that compute outputs, default reference.
void add_output_backend_option(CLI::App* cmd, std::string& backend);

// The backend `name` of the table: BackendUnavailable when it cannot run here (device without a
// usable GPU or without CUDA in this build), UsageError for an unknown name or a worker or plugin
// without --worker or --plugin. A worker or plugin that cannot start throws BackendUnavailable
// with the reason.
std::unique_ptr<cases::Backend> make_backend(std::string_view name, const ExternalOptions& external = {}, int device = 0);

// How a campaign spreads over the machine: --jobs (threads, each with its own pair of backends;
// 0 = one per hardware thread) and --devices (the GPUs the device backend's jobs take in turn:
// a count, or "all").
struct JobOptions {
  int jobs = 0;
  std::string devices = "1";
};
void add_job_options(CLI::App* cmd, JobOptions& o);

// A campaign's backends: the first job's pair (made here, so that a backend that cannot start
// fails before any thread does; the factory hands it to job 0), the factory of every job's pair,
// and what that means in words ("16 jobs on 2 GPUs").
struct CampaignBackends {
  fuzz::BackendPair first;
  int jobs = 1;
  std::string description;
  fuzz::BackendFactory factory;
};
CampaignBackends campaign_backends(const std::string& a, const std::string& b, const ExternalOptions& external,
                                   const JobOptions& jobs);

// Why the device backend cannot run here, or "" when it can.
std::string device_unavailable();

// reference vs device when a GPU is usable, else reference vs metamorphic.
std::pair<std::string, std::string> default_backends();

// "A,B" -> {A, B}; throws UsageError unless exactly two known names.
std::pair<std::string, std::string> parse_backends(const std::string& text);

// "" when both backends implement c; else why one of them does not (an external backend's
// declaration leaves it out), for replay and the gate's corpus step to skip it
// (compare/corpus_replay.h).
std::string outside_backends(const cases::Case& c, const cases::Backend& a, const cases::Backend& b);

// "worker (my-quantizer 0.3)", "plugin (libmine.so)", or the backend's name.
std::string backend_label(const cases::Backend& b);

}  // namespace nvfp4::cli
