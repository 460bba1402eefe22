// The repository is self-contained: every section of the specification that the code, the docs
// and the corpus notes cite exists in docs/NUMERICS.md, every document a file names or a markdown
// file links exists, and no file points outside the repository.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "tests/support/cli_runner.h"

namespace nvfp4 {
namespace {

namespace fs = std::filesystem;
using test_support::slurp_text;

// The repository's own files: everything under the source directory but version control, build
// folders and generated reports.
std::vector<fs::path> repository_files() {
  std::vector<fs::path> files;
  const fs::path root(NVFP4_SOURCE_DIR);
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name == ".git" || name.starts_with("build") || name == "gate-report" || name == "gpu-results")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->file_size() < (8u << 20)) files.push_back(it->path());
  }
  return files;
}

// "§3.17" -> whether docs/NUMERICS.md has that section (a numbered heading) or §5 table row.
bool has_section(const std::string& spec, const std::string& number) {
  const std::regex heading("\n#+ " + std::regex_replace(number, std::regex("\\."), "\\.") + "[. ]");
  return std::regex_search(spec, heading) || spec.find("\n| " + number + " |") != std::string::npos;
}

TEST(Docs, EveryCitedSectionExistsInTheSpecification) {
  const std::string spec = "\n" + slurp_text(fs::path(NVFP4_SOURCE_DIR) / "docs" / "NUMERICS.md");
  ASSERT_GT(spec.size(), 10000u) << "docs/NUMERICS.md is missing";
  const std::regex cite("\xC2\xA7([0-9]+(\\.[0-9]+)*)");  // "§3.17"
  std::set<std::string> cited;
  for (const fs::path& f : repository_files()) {
    const std::string text = slurp_text(f);
    for (auto m = std::sregex_iterator(text.begin(), text.end(), cite); m != std::sregex_iterator(); ++m)
      if (!has_section(spec, (*m)[1]))
        ADD_FAILURE() << f << " cites §" << (*m)[1] << ", which docs/NUMERICS.md lacks";
      else
        cited.insert((*m)[1]);
  }
  EXPECT_GT(cited.size(), 50u) << "the scan found too few citations to be working";
}

TEST(Docs, EveryNamedDocumentAndEveryMarkdownLinkExists) {
  const fs::path root(NVFP4_SOURCE_DIR);
  const std::regex named("docs/[A-Za-z0-9_/.-]*[A-Za-z0-9_-]\\.(md|log)");  // "docs/NUMERICS.md"
  const std::regex link("\\]\\(([^)#: ]+\\.(md|log))(#[^)]*)?\\)");         // "](../harness.md#x)"
  std::size_t checked = 0;
  for (const fs::path& f : repository_files()) {
    const std::string text = slurp_text(f);
    for (auto m = std::sregex_iterator(text.begin(), text.end(), named); m != std::sregex_iterator(); ++m, ++checked)
      EXPECT_TRUE(fs::exists(root / m->str())) << f << " names " << m->str() << ", which does not exist";
    if (f.extension() != ".md") continue;
    for (auto m = std::sregex_iterator(text.begin(), text.end(), link); m != std::sregex_iterator(); ++m, ++checked)
      EXPECT_TRUE(fs::exists(f.parent_path() / (*m)[1].str())) << f << " links " << (*m)[1] << ", which does not exist";
  }
  EXPECT_GT(checked, 100u) << "the scan found too few references to be working";
}

TEST(Docs, NoFileRefersOutsideTheRepository) {
  // Assembled from pieces so that this file does not match itself.
  const std::string outside[] = {std::string("../") + "shared", std::string("shared/") + "docs", std::string("PEERS") + ".md",
                                 std::string("TOOLCHAIN") + ".md", std::string("/GPU") + ".md"};
  std::size_t scanned = 0;
  for (const fs::path& f : repository_files()) {
    const std::string text = slurp_text(f);
    ++scanned;
    for (const std::string& o : outside)
      EXPECT_EQ(text.find(o), std::string::npos) << f << " refers outside the repository: '" << o << "'";
  }
  EXPECT_GT(scanned, 100u);
}

}  // namespace
}  // namespace nvfp4
