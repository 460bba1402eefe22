// A shared library implementing the plugin ABI (include/nvfp4_verify/plugin.h, docs/spec/plugin-abi.md)
// as a backend: `--backends reference,plugin --plugin ./libmine.so`.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cases/case.h"
#include "cases/declaration.h"
#include "nvfp4_verify/plugin.h"

namespace nvfp4::external {

class PluginBackend : public cases::Backend {
 public:
  ~PluginBackend() override;
  PluginBackend(const PluginBackend&) = delete;
  PluginBackend& operator=(const PluginBackend&) = delete;

  std::string_view name() const override { return "plugin"; }
  // A plugin's answers become: outputs; nvfp4::Error with its code (a rejection with a code);
  // UncodedRejection (a rejection without one); BackendFault kCrash (NVFP4_PLUGIN_FAILED) or
  // kProtocol (an unknown code or result, a bad output request); BackendUnavailable
  // (NVFP4_PLUGIN_UNAVAILABLE). Throws nvfp4::Error (E_UNSUPPORTED) itself for a case with
  // custom knobs, which the ABI cannot carry.
  cases::TensorMap run(const cases::Case& c) override;
  const cases::Declaration* declaration() const override { return &declaration_; }

  // The plugin's declaration as it gave it: {"worker": NAME, "implements": [...]}.
  // Its "worker" name, or the file's name when it gives none.
  const std::string& worker_name() const { return worker_name_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  friend std::unique_ptr<PluginBackend> load_plugin(const std::filesystem::path& path);
  PluginBackend(std::filesystem::path path, void* library);

  std::filesystem::path path_;
  void* library_;  // the dlopen handle
  nvfp4_plugin_run_fn run_ = nullptr;
  cases::Declaration declaration_;
  std::string worker_name_;
};

// dlopens `path` (relative paths are taken from the working directory, never searched for),
// checks its ABI version and parses its declaration against the registry. Throws
// BackendUnavailable naming the file: no such file, not a shared library (dlerror's text), a
// missing entry point, another ABI version (both named), an invalid declaration.
std::unique_ptr<PluginBackend> load_plugin(const std::filesystem::path& path);

}  // namespace nvfp4::external
