#include "cli/backends.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/declaration.h"
#include "cases/metamorphic_backend.h"
#include "cases/reference_backend.h"
#include "cli/commands.h"
#include "external/plugin/plugin_backend.h"
#include "external/worker_backend.h"
#if NVFP4_WITH_DEVICE
#include "device/backend/device_backend.h"
#endif

namespace nvfp4::cli {
namespace {

std::string always_available() { return ""; }

std::unique_ptr<cases::Backend> make_reference(const ExternalOptions&, int) {
  return std::make_unique<cases::ReferenceBackend>();
}

std::unique_ptr<cases::Backend> make_metamorphic(const ExternalOptions&, int) {
  return std::make_unique<cases::MetamorphicBackend>();
}

std::unique_ptr<cases::Backend> make_device([[maybe_unused]] const ExternalOptions&, [[maybe_unused]] int device) {
#if NVFP4_WITH_DEVICE
  return std::make_unique<device::DeviceBackend>(device);
#else
  throw std::logic_error("make_device: this build has no CUDA support");  // availability said so first
#endif
}

std::unique_ptr<cases::Backend> make_worker(const ExternalOptions& external, int) {
  if (external.worker.empty()) throw UsageError("--backends names worker: give its command with --worker 'CMD ARGS...'");
  external::WorkerOptions o;
  o.command = external.worker;
  o.timeout_s = external.worker_timeout;
  return std::make_unique<external::WorkerBackend>(o);
}

std::unique_ptr<cases::Backend> make_plugin(const ExternalOptions& external, int) {
  if (external.plugin.empty()) throw UsageError("--backends names plugin: give its library with --plugin ./libmine.so");
  return external::load_plugin(external.plugin);
}

// Every backend the comparing commands know, in the order help texts and errors list them.
constexpr BackendRow kBackends[] = {
    {"reference", "the CPU emulator, the specification in code", make_reference, always_available, true},
    {"metamorphic", "the reference reached through each operation's metamorphic relation", make_metamorphic, always_available},
    {"device", "the CUDA kernels, on a GPU", make_device, device_unavailable, true},
    {"worker", "an external process speaking docs/spec/worker-protocol.md, given by --worker", make_worker, always_available},
    {"plugin", "a shared library implementing docs/spec/plugin-abi.md, given by --plugin", make_plugin, always_available},
};

const BackendRow* find_backend(std::string_view name) {
  for (const BackendRow& row : kBackends)
    if (row.name == name) return &row;
  return nullptr;
}

}  // namespace

std::span<const BackendRow> backend_rows() { return kBackends; }

std::string backend_names(std::string_view separator) {
  std::string s;
  for (const BackendRow& row : kBackends) s += (s.empty() ? "" : std::string(separator)) + std::string(row.name);
  return s;
}

std::string backends_option_help() {
  std::string s = "two backends A,B to compare, of: ";
  for (const BackendRow& row : kBackends) s += fmt::format("{}{} ({})", &row == kBackends ? "" : ", ", row.name, row.description);
  return s + "; default reference,device where a GPU is usable, else reference,metamorphic";
}

void add_output_backend_option(CLI::App* cmd, std::string& backend) {
  std::vector<std::string> names;
  for (const BackendRow& row : kBackends)
    if (row.computes_outputs) names.emplace_back(row.name);
  cmd->add_option("--backend", backend, fmt::format("what computes the output: {}", fmt::join(names, " or ")))
      ->check(CLI::IsMember(names))
      ->capture_default_str();
}

void add_external_options(CLI::App* cmd, ExternalOptions& o) {
  cmd->add_option(
      "--worker", o.worker,
      "the worker backend's command: plain words run directly, shell syntax under /bin/sh -c (docs/spec/worker-protocol.md)");
  cmd->add_option("--worker-timeout", o.worker_timeout, "seconds a worker may take per case before the case's verdict is timeout")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--plugin", o.plugin, "the plugin backend's shared library (docs/spec/plugin-abi.md)");
}

std::string device_unavailable() {
#if NVFP4_WITH_DEVICE
  return device::device_unavailable_reason().value_or("");
#else
  return "this build has no CUDA support (nvcc was not found or NVFP4_ENABLE_CUDA=OFF)";
#endif
}

std::unique_ptr<cases::Backend> make_backend(std::string_view name, const ExternalOptions& external, int device) {
  const BackendRow* row = find_backend(name);
  if (!row) throw UsageError(fmt::format("unknown backend '{}' (known: {})", name, backend_names(", ")));
  if (const std::string why = row->unavailable(); !why.empty())
    throw cases::BackendUnavailable(fmt::format("the {} backend cannot run here: {}", row->name, why));
  return row->make(external, device);
}

void add_job_options(CLI::App* cmd, JobOptions& o) {
  cmd->add_option("--jobs", o.jobs,
                  "threads, each running rounds on its own pair of backends (0: one per hardware thread); "
                  "the cases do not depend on it")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--devices", o.devices, "GPUs the device backend's jobs take in turn: a count, or all")->capture_default_str();
}

namespace {

int gpu_count() {
#if NVFP4_WITH_DEVICE
  return device::device_count();
#else
  return 0;
#endif
}

// --devices as a count of GPUs to use.
int parse_devices(const std::string& text) {
  if (text == "all") return std::max(gpu_count(), 1);
  int n = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%d%c", &n, &rest) != 1 || n < 1)
    throw UsageError(fmt::format("--devices '{}': expected a positive count or all", text));
  if (const int have = gpu_count(); have && n > have)
    throw UsageError(fmt::format("--devices {}: this machine has {} GPU{}", n, have, have == 1 ? "" : "s"));
  return n;
}

}  // namespace

CampaignBackends campaign_backends(const std::string& a, const std::string& b, const ExternalOptions& external,
                                   const JobOptions& o) {
  CampaignBackends c;
  const bool device = a == "device" || b == "device";
  const int devices = parse_devices(o.devices);  // checked also when no device backend runs
  c.jobs = o.jobs > 0 ? o.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  // The plugin ABI calls a plugin from one thread at a time (docs/spec/plugin-abi.md).
  if (a == "plugin" || b == "plugin") {
    if (o.jobs > 1) fmt::print("note: --jobs {} ignored: a plugin runs one case at a time\n", o.jobs);
    c.jobs = 1;
  }
  c.first = {make_backend(a, external, 0), make_backend(b, external, 0)};
  const int gpus = std::min(devices, c.jobs);
  c.description = fmt::format("{} job{}", c.jobs, c.jobs == 1 ? "" : "s");
  if (device) c.description += fmt::format(" on {} GPU{}", gpus, gpus == 1 ? "" : "s");
  c.factory = [first = c.first, a, b, external, devices](int job) {
    if (job == 0) return first;
    return fuzz::BackendPair{make_backend(a, external, job % devices), make_backend(b, external, job % devices)};
  };
  return c;
}

std::pair<std::string, std::string> default_backends() {
  return {"reference", device_unavailable().empty() ? "device" : "metamorphic"};
}

std::pair<std::string, std::string> parse_backends(const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos || text.find(',', comma + 1) != std::string::npos)
    throw UsageError(fmt::format("--backends '{}': expected two names separated by a comma, e.g. reference,device", text));
  std::pair<std::string, std::string> b{text.substr(0, comma), text.substr(comma + 1)};
  for (const std::string& n : {b.first, b.second})
    if (!find_backend(n)) throw UsageError(fmt::format("--backends: unknown backend '{}' (known: {})", n, backend_names(", ")));
  return b;
}

std::string outside_backends(const cases::Case& c, const cases::Backend& a, const cases::Backend& b) {
  for (const cases::Backend* x : {&a, &b})
    if (const cases::Declaration* d = x->declaration())
      if (std::string why = d->outside(c); !why.empty()) return fmt::format("{}: {}", backend_label(*x), why);
  return "";
}

std::string backend_label(const cases::Backend& b) {
  if (const auto* w = dynamic_cast<const external::WorkerBackend*>(&b)) return fmt::format("worker ({})", w->worker_name());
  if (const auto* p = dynamic_cast<const external::PluginBackend*>(&b)) return fmt::format("plugin ({})", p->worker_name());
  return std::string(b.name());
}

}  // namespace nvfp4::cli
