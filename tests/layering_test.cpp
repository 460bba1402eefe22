// The layers of the source tree (README's Layout; the order of CMakeLists.txt):
//   reference -> io -> cases -> device, compare, checkpoint, external -> fuzz, vectors, reports -> bench, python -> cli
// and inside device/ (device/CMakeLists.txt): runtime -> kernels -> flow -> backend, with nccl/
// on flow and plugin/ on backend. Each folder includes only itself and the folders below it, and
// every folder that holds sources has its row here, so a new folder cannot slip past the rule.
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/cli_runner.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;

// Folder -> the folders its files may include ("nvfp4_verify/" is the plugin ABI's C header in include/).
const std::map<std::string, std::set<std::string>>& layers() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"include", {}},
      {"examples", {"include"}},
      {"reference", {"reference"}},
      {"io", {"io", "reference"}},
      {"cases", {"cases", "io", "reference"}},
      {"device", {"device", "cases", "io", "reference", "include"}},
      {"compare", {"compare", "cases", "io", "reference"}},
      {"checkpoint", {"checkpoint", "cases", "io", "reference"}},
      {"external", {"external", "cases", "io", "reference", "include"}},
      {"fuzz", {"fuzz", "compare", "cases", "io", "reference"}},
      // Conformance vector packs: generated from the reference, their stats through the fault catalogue.
      {"vectors", {"vectors", "compare", "cases", "io", "reference"}},
      // check-checkpoint's report pages and JUnit suite.
      {"reports", {"reports", "compare", "checkpoint", "cases", "io", "reference"}},
      // The benchmark times the kernels, the external backends and fuzz campaigns.
      {"bench", {"bench", "fuzz", "device", "external", "compare", "cases", "io", "reference"}},
      {"python", {"python", "reports", "compare", "cases", "io", "reference"}},
      {"cli",
       {"cli", "bench", "fuzz", "vectors", "reports", "device", "compare", "checkpoint", "external", "cases", "io", "reference"}},
  };
  return table;
}

// device/'s subfolder -> the subfolders of device/ its files may include.
const std::map<std::string, std::set<std::string>>& device_layers() {
  static const std::map<std::string, std::set<std::string>> table = {
      {"runtime", {"runtime"}},
      {"kernels", {"kernels", "runtime"}},
      {"flow", {"flow", "kernels", "runtime"}},
      {"backend", {"backend", "flow", "kernels", "runtime"}},
      // The master-weight cast across GPUs, checked against the single-tensor kernels.
      {"nccl", {"nccl", "flow", "kernels", "runtime"}},
      // The device backend behind the plugin ABI, and cuBLASLt's GEMM beside it.
      {"plugin", {"plugin", "backend", "runtime"}},
  };
  return table;
}

bool is_source(const fs::path& p) {
  static const std::set<std::string> extensions = {".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh"};
  return extensions.count(p.extension().string()) > 0;
}

// The folder an include names: "reference/e2m1.h" -> reference, "nvfp4_verify/plugin.h" -> include.
std::string folder_of(const std::string& first_component) {
  return first_component == "nvfp4_verify" ? "include" : first_component;
}

TEST(Layering, EveryFolderWithSourcesHasALayer) {
  const fs::path root(NVFP4_SOURCE_DIR);
  // Not layers: the tests (which may include anything), and folders without sources of the project.
  const std::set<std::string> exempt = {"tests", "docs", "corpora", "scripts", "cmake"};
  std::size_t folders = 0;
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.starts_with(".") || name.starts_with("build") || exempt.count(name)) continue;
    bool has_sources = false;
    for (const auto& f : fs::recursive_directory_iterator(e.path()))
      has_sources = has_sources || (f.is_regular_file() && is_source(f.path()));
    if (!has_sources) continue;
    ++folders;
    EXPECT_TRUE(layers().count(name)) << name << "/ holds sources but has no row in the layer table";
  }
  EXPECT_EQ(folders, layers().size());
}

TEST(Layering, EachFolderIncludesOnlyItselfAndTheFoldersBelowIt) {
  const fs::path root(NVFP4_SOURCE_DIR);
  const std::regex include("#include \"([a-z0-9_]+)/");
  std::map<std::string, std::size_t> checked;
  for (const auto& [layer, may] : layers())
    for (const auto& e : fs::recursive_directory_iterator(root / layer)) {
      if (!e.is_regular_file() || !is_source(e.path())) continue;
      const std::string text = test_support::slurp_text(e.path());
      for (auto m = std::sregex_iterator(text.begin(), text.end(), include); m != std::sregex_iterator(); ++m) {
        ++checked[layer];
        EXPECT_TRUE(may.count(folder_of((*m)[1]))) << e.path() << " (layer " << layer << ") includes " << (*m)[1] << "/";
      }
    }
  // Every layer but the ABI header includes something of the project, so each row is exercised.
  for (const auto& [layer, _] : layers())
    if (layer != "include") EXPECT_GT(checked[layer], 0u) << layer;
}

TEST(Layering, DeviceSubfoldersIncludeOnlyThemselvesAndTheSubfoldersBelow) {
  const fs::path device = fs::path(NVFP4_SOURCE_DIR) / "device";
  const std::regex include("#include \"device/([a-z0-9_]+)/");
  std::set<std::string> folders;
  std::map<std::string, std::size_t> checked;
  for (const auto& e : fs::recursive_directory_iterator(device)) {
    if (!e.is_regular_file() || !is_source(e.path())) continue;
    const fs::path relative = fs::relative(e.path(), device);
    if (relative.parent_path().empty()) {  // every source of device/ belongs to a subfolder
      ADD_FAILURE() << e.path() << " lies in device/ itself, outside every subfolder";
      continue;
    }
    const std::string folder = relative.begin()->string();
    folders.insert(folder);
    const auto row = device_layers().find(folder);
    if (row == device_layers().end()) {
      ADD_FAILURE() << "device/" << folder << "/ holds sources but has no row in the device layer table";
      continue;
    }
    const std::string text = test_support::slurp_text(e.path());
    for (auto m = std::sregex_iterator(text.begin(), text.end(), include); m != std::sregex_iterator(); ++m) {
      ++checked[folder];
      EXPECT_TRUE(row->second.count((*m)[1])) << e.path() << " (device/" << folder << ") includes device/" << (*m)[1] << "/";
    }
  }
  EXPECT_EQ(folders.size(), device_layers().size());
  // Every subfolder includes something of device/, so each row is exercised.
  for (const auto& [folder, _] : device_layers()) EXPECT_GT(checked[folder], 0u) << "device/" << folder;
}

// Each layer's code lies in its namespace, nvfp4::<layer> (or one nested in it), so that a name
// from another layer reads as such (cases::Case, compare::diff_outputs). The reference, the
// vocabulary of every layer, is nvfp4 itself (its nested namespaces name no layer).
TEST(Layering, EachLayerDeclaresOnlyItsOwnNamespace) {
  const fs::path root(NVFP4_SOURCE_DIR);
  const std::regex declaration("\\nnamespace (nvfp4[a-z0-9_:]*) \\{");
  const std::set<std::string> c_only = {"include", "examples"};
  for (const auto& [layer, _] : layers()) {
    if (c_only.count(layer)) continue;
    std::size_t declarations = 0;
    for (const auto& e : fs::recursive_directory_iterator(root / layer)) {
      if (!e.is_regular_file() || !is_source(e.path())) continue;
      const std::string text = "\n" + test_support::slurp_text(e.path());
      for (auto m = std::sregex_iterator(text.begin(), text.end(), declaration); m != std::sregex_iterator(); ++m) {
        ++declarations;
        const std::string ns = (*m)[1];
        if (layer == "reference") {
          const std::string nested = ns == "nvfp4" ? "" : ns.substr(ns.find("::") + 2);
          EXPECT_FALSE(layers().count(nested.substr(0, nested.find("::")))) << e.path() << " declares " << ns;
        } else {
          const std::string own = "nvfp4::" + layer;
          EXPECT_TRUE(ns == own || ns.starts_with(own + "::")) << e.path() << " (layer " << layer << ") declares " << ns;
        }
      }
    }
    EXPECT_GT(declarations, 0u) << layer;
  }
}
}  // namespace
}  // namespace nvfp4
