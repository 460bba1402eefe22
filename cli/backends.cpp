#include "cli/backends.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

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

constexpr const char* kKnown = "reference, metamorphic, device, worker, plugin";

bool known(std::string_view n) {
  return n == "reference" || n == "metamorphic" || n == "device" || n == "worker" || n == "plugin";
}

}  // namespace

void add_external_options(CLI::App* cmd, ExternalOptions& o) {
  cmd->add_option("--worker", o.worker, "the worker backend's command: plain words run directly, shell syntax under /bin/sh -c (docs/worker-protocol.md)");
  cmd->add_option("--worker-timeout", o.worker_timeout, "seconds a worker may take per case before the case's verdict is timeout")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--plugin", o.plugin, "the plugin backend's shared library (docs/plugin-abi.md)");
}

std::string device_unavailable() {
#if NVFP4_WITH_DEVICE
  return device::device_unavailable_reason().value_or("");
#else
  return "this build has no CUDA support (nvcc was not found or NVFP4_ENABLE_CUDA=OFF)";
#endif
}

std::unique_ptr<Backend> make_backend(std::string_view name, const ExternalOptions& external, int device) {
  if (name == "reference") return std::make_unique<ReferenceBackend>();
  if (name == "metamorphic") return std::make_unique<MetamorphicBackend>();
  if (name == "device") {
    const std::string why = device_unavailable();
    if (!why.empty()) throw BackendUnavailable(fmt::format("the device backend cannot run here: {}", why));
#if NVFP4_WITH_DEVICE
    return std::make_unique<device::DeviceBackend>(device);
#endif
  }
  if (name == "worker") {
    if (external.worker.empty()) throw UsageError("--backends names worker: give its command with --worker 'CMD ARGS...'");
    external::WorkerOptions o;
    o.command = external.worker;
    o.timeout_s = external.worker_timeout;
    return std::make_unique<external::WorkerBackend>(o);
  }
  if (name == "plugin") {
    if (external.plugin.empty()) throw UsageError("--backends names plugin: give its library with --plugin ./libmine.so");
    return external::load_plugin(external.plugin);
  }
  throw UsageError(fmt::format("unknown backend '{}' (known: {})", name, kKnown));
}

void add_job_options(CLI::App* cmd, JobOptions& o) {
  cmd->add_option("--jobs", o.jobs, "threads, each running rounds on its own pair of backends (0: one per hardware thread); "
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
  // The plugin ABI calls a plugin from one thread at a time (docs/plugin-abi.md).
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
    if (!known(n)) throw UsageError(fmt::format("--backends: unknown backend '{}' (known: {})", n, kKnown));
  return b;
}

std::string outside_backends(const Case& c, const Backend& a, const Backend& b) {
  for (const Backend* x : {&a, &b})
    if (const Declaration* d = x->declaration())
      if (std::string why = d->outside(c); !why.empty()) return fmt::format("{}: {}", backend_label(*x), why);
  return "";
}

std::string backend_label(const Backend& b) {
  if (const auto* w = dynamic_cast<const external::WorkerBackend*>(&b)) return fmt::format("worker ({})", w->worker_name());
  if (const auto* p = dynamic_cast<const external::PluginBackend*>(&b)) return fmt::format("plugin ({})", p->worker_name());
  return std::string(b.name());
}

Comparison compare_case(const Case& c, Backend& a, Backend& b, const CompareMode& mode) {
  try {
    return compare_backends(c, a, b, mode);
  } catch (const BackendUnavailable&) {
    throw;
  } catch (const std::exception& e) {
    Comparison r;
    r.problem = fmt::format("a backend crashed: {}", e.what());
    return r;
  }
}

}  // namespace nvfp4::cli
