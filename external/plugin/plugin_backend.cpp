#include "external/plugin/plugin_backend.h"

#include <dlfcn.h>

#include <cstring>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "cases/registry.h"
#include "external/plugin/host_tensors.h"
#include "external/wire.h"
#include "reference/error.h"

namespace nvfp4::external {
namespace {

using nlohmann::json;

// A dlopen handle, closed unless a PluginBackend takes it over.
class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  ~Library() {
    if (handle_) dlclose(handle_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* get() const { return handle_; }
  void* release() { return std::exchange(handle_, nullptr); }

 private:
  void* handle_;
};

// A string the plugin wrote into a fixed-size field, even one it did not NUL-terminate.
std::string field(const char* s, std::size_t size) { return std::string(s, strnlen(s, size)); }

// The parameters exactly as a worker's run message encodes them.
std::string params_json(const cases::Case& c) {
  cases::Case bare;  // the request without its tensors, which the ABI passes as views instead
  bare.op = c.op;
  bare.params = c.params;
  return wire::run_request(0, bare).body.at("params").dump();
}

}  // namespace

PluginBackend::PluginBackend(std::filesystem::path path, void* library) : path_(std::move(path)), library_(library) {}

PluginBackend::~PluginBackend() { dlclose(library_); }

std::unique_ptr<PluginBackend> load_plugin(const std::filesystem::path& path) {
  const auto unavailable = [&](const std::string& why) {
    return cases::BackendUnavailable(fmt::format("plugin {}: {}", path.string(), why));
  };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw unavailable("no such file");
  // An absolute path: dlopen searches the library path for a bare file name.
  Library library(dlopen(std::filesystem::absolute(path).c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!library.get()) {
    const char* why = dlerror();
    throw unavailable(fmt::format("cannot be loaded: {}", why ? why : "dlopen gave no reason"));
  }
  const auto entry = [&](const char* symbol) {
    void* p = dlsym(library.get(), symbol);
    if (!p) throw unavailable(fmt::format("not an nvfp4-verify plugin: it has no entry point {}", symbol));
    return p;
  };
  const auto abi_version = reinterpret_cast<nvfp4_plugin_abi_version_fn>(entry("nvfp4_plugin_abi_version"));
  const auto declaration = reinterpret_cast<nvfp4_plugin_declaration_fn>(entry("nvfp4_plugin_declaration"));
  const auto run = reinterpret_cast<nvfp4_plugin_run_fn>(entry("nvfp4_plugin_run"));
  // The version first: the other entry points may mean something else in another version.
  if (const int v = abi_version(); v != NVFP4_PLUGIN_ABI_VERSION)
    throw unavailable(
        fmt::format("it implements plugin ABI version {}; this nvfp4-verify loads version {}", v, NVFP4_PLUGIN_ABI_VERSION));
  const char* text = declaration();
  if (!text) throw unavailable("nvfp4_plugin_declaration returned NULL");
  json d = json::parse(text, nullptr, false);
  if (!d.is_object() || (d.contains("worker") && !d.at("worker").is_string()))
    throw unavailable(
        fmt::format("its declaration is not a JSON object {{\"worker\": NAME, \"implements\": [...]}}: {:.200}", text));

  std::unique_ptr<PluginBackend> b(new PluginBackend(path, library.release()));
  b->run_ = run;
  b->worker_name_ = d.value("worker", path.filename().string());
  b->declaration_ = cases::Declaration::parse(d.contains("implements") ? d.at("implements") : json(),
                                              fmt::format("plugin {} ({})", path.string(), b->worker_name_));
  return b;
}

cases::TensorMap PluginBackend::run(const cases::Case& c) {
  cases::validate_params(c);
  if (c.knobs) fail(c.op, ErrorCode::E_UNSUPPORTED, "a plugin runs named profiles only, and this case has custom knobs");
  const std::string params = params_json(c);
  const InputViews inputs(c.inputs);
  OutputCollector outputs;
  nvfp4_plugin_error error{};
  const int result =
      run_(c.op.c_str(), params.c_str(), inputs.data(), inputs.size(), &OutputCollector::allocate, &outputs, &error);

  const std::string who = fmt::format("plugin {}", worker_name_);
  std::string message = field(error.message, sizeof error.message);
  if (message.empty()) message = "(no message)";
  if (!outputs.problem().empty())
    throw cases::BackendFault(cases::FaultKind::kProtocol, fmt::format("{}: {}", who, outputs.problem()));
  switch (result) {
    case NVFP4_PLUGIN_OK:
      return outputs.outputs();
    case NVFP4_PLUGIN_REJECTED: {
      const std::string code = field(error.code, sizeof error.code);
      if (code.empty()) throw cases::UncodedRejection(fmt::format("{}: {}", c.op, message));
      const std::optional<ErrorCode> known = wire::error_code_from_name(code);
      if (!known)
        throw cases::BackendFault(cases::FaultKind::kProtocol,
                                  fmt::format("{}: rejected the case with unknown error code '{}': {}", who, code, message));
      throw Error(c.op, *known, message);
    }
    case NVFP4_PLUGIN_FAILED:
      throw cases::BackendFault(cases::FaultKind::kCrash, fmt::format("{}: failed: {}", who, message));
    case NVFP4_PLUGIN_UNAVAILABLE:
      throw cases::BackendUnavailable(fmt::format("{}: cannot run: {}", who, message));
  }
  throw cases::BackendFault(cases::FaultKind::kProtocol,
                            fmt::format("{}: nvfp4_plugin_run returned {}, which is no NVFP4_PLUGIN_* result", who, result));
}

}  // namespace nvfp4::external
