// A fresh temporary directory per test: TempDir for one directory, TempDirTest for a fixture whose
// every test gets one as dir_. The name carries the running test's name, for whoever finds one
// left behind, and mkdtemp's random suffix makes it unique per test, per call and per process,
// so parallel ctest runs and several build trees never share one.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cctype>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace nvfp4::test_support {

class TempDir {
 public:
  // Creates the directory; `tag` tells several of one test apart.
  explicit TempDir(std::string_view tag = {}) {
    std::string name = "nvfp4";
    if (const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info())
      name += std::string("_") + t->test_suite_name() + "." + t->name();
    if (!tag.empty()) name += "_" + std::string(tag);
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_') c = '_';
    std::string path = (std::filesystem::temp_directory_path() / (name + "_XXXXXX")).string();
    if (::mkdtemp(path.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + path);
    path_ = path;
  }
  // Removes the directory with all it holds, making directories a test left read-only writable
  // first; never throws.
  ~TempDir() {
    namespace fs = std::filesystem;
    std::error_code ec, ignored;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
    for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ignored) && !it->is_symlink(ignored))
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A fixture whose every test gets a fresh, empty directory dir_, removed after the test.
class TempDirTest : public ::testing::Test {
 protected:
  TempDirTest() : dir_(tmp_.path()) {}

 private:
  TempDir tmp_;  // before dir_, which is initialized from it

 protected:
  const std::filesystem::path dir_;
};

}  // namespace nvfp4::test_support
