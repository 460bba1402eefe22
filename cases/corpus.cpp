#include "cases/corpus.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <system_error>

#include <fmt/format.h>

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

std::vector<std::uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw io::FormatError(fmt::format("{}: cannot open the existing case file", p.string()));
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw io::FormatError(fmt::format("{}: cannot read the existing case file", p.string()));
  return bytes;
}

}  // namespace

fs::path save_case(const fs::path& dir, const CaseRecord& r) {
  const io::File f = case_to_file(r);
  const std::vector<std::uint8_t> bytes = io::serialize(f);
  const fs::path path = dir / fmt::format("case-{:016x}.safetensors", fnv1a64(bytes));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw OutputError(fmt::format("{}: cannot create the corpus directory: {}", dir.string(), ec.message()));
  if (fs::exists(path, ec)) {
    if (read_bytes(path) == bytes) return path;
    throw io::FormatError(fmt::format(
        "{}: exists with different content (a 64-bit hash collision, or a damaged file); not overwritten", path.string()));
  }
  io::write_file_atomic(path, f);
  return path;
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
