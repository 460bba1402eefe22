#include "cases/corpus.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "io/atomic_file.h"
#include "reference/exception.h"

namespace nvfp4::cases {
namespace {

namespace fs = std::filesystem;

// 64-bit FNV-1a.
std::uint64_t fnv1a64(const std::vector<std::uint8_t>& bytes) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (std::uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001B3ull;
  }
  return h;
}

// `what`: "existing case file", "case file".
std::vector<std::uint8_t> read_bytes(const fs::path& p, std::string_view what) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) throw io::FormatError(fmt::format("{}: the {} is not a regular file", p.string(), what));
  std::ifstream in(p, std::ios::binary);
  if (!in) throw io::FormatError(fmt::format("{}: cannot open the {}", p.string(), what));
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw io::FormatError(fmt::format("{}: cannot read the {}", p.string(), what));
  return bytes;
}

// A case file's bytes stored in dir under their content's name, unless the same bytes are there.
fs::path store(const fs::path& dir, const std::vector<std::uint8_t>& bytes) {
  const fs::path path = dir / fmt::format("case-{:016x}.safetensors", fnv1a64(bytes));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw OutputError(fmt::format("{}: cannot create the corpus directory: {}", dir.string(), ec.message()));
  if (fs::exists(path, ec)) {
    if (read_bytes(path, "existing case file") == bytes) return path;
    throw io::FormatError(fmt::format(
        "{}: exists with different content (a 64-bit hash collision, or a damaged file); not overwritten", path.string()));
  }
  io::write_file_atomic(path, bytes);
  return path;
}

}  // namespace

fs::path save_case(const fs::path& dir, const CaseRecord& r) { return store(dir, io::serialize(case_to_file(r))); }

fs::path copy_case_file(const fs::path& file, const fs::path& dir) {
  const std::vector<std::uint8_t> bytes = read_bytes(file, "case file");
  case_from_file(io::parse(bytes, file.string()), file.string());  // a case file, or FormatError naming it
  return store(dir, bytes);
}

std::vector<fs::path> collect_case_files(const std::vector<fs::path>& paths) {
  std::vector<fs::path> files;
  for (const fs::path& p : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) throw io::FormatError(fmt::format("{}: no such file or directory", p.string()));
    if (fs::is_directory(st)) {
      fs::recursive_directory_iterator it(p, fs::directory_options::follow_directory_symlink, ec), end;
      if (ec) throw io::FormatError(fmt::format("{}: cannot list the directory: {}", p.string(), ec.message()));
      for (; it != end; it.increment(ec)) {
        if (ec) throw io::FormatError(fmt::format("{}: cannot list the directory: {}", p.string(), ec.message()));
        if (it->path().extension() == ".safetensors" && it->is_regular_file(ec)) files.push_back(it->path().lexically_normal());
      }
      if (ec) throw io::FormatError(fmt::format("{}: cannot list the directory: {}", p.string(), ec.message()));
    } else {
      files.push_back(p.lexically_normal());
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

CaseRecord load_case(const fs::path& file) { return case_from_file(io::read_file(file), file.string()); }

}  // namespace nvfp4::cases
