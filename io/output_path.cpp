#include "io/output_path.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <random>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "reference/exception.h"

namespace nvfp4::io {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMarker = ".nvfp4-tmp-";
// A temporary's name keeps this much of its target's, so that it stays within NAME_MAX.
constexpr std::size_t kNameKept = 128;

template <class... Args>
[[noreturn]] void fail(std::string_view label, const fs::path& path, fmt::format_string<Args...> f, Args&&... args) {
  throw OutputError(fmt::format("{} {}: {}", label, path.string(), fmt::format(f, std::forward<Args>(args)...)));
}

std::string os_error(int err) { return std::generic_category().message(err); }

// "DIR/" names DIR: the directory itself, whose temporaries are made beside it.
fs::path without_trailing_slash(const fs::path& p) {
  fs::path q = p.lexically_normal();
  if (!q.has_filename() && q.has_parent_path() && q != q.root_path()) q = q.parent_path();
  return q.empty() ? fs::path(".") : q;
}

fs::path directory_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

// errno of creating (and at once removing) an entry in `dir`: what the permission bits, a
// read-only file system or a /proc directory say, for root too. 0 when it can.
int probe(const fs::path& dir, bool directory) {
  const fs::path p = temporary_path(dir / "probe");
  if (directory) {
    if (::mkdir(p.c_str(), 0755) != 0) return errno;
    ::rmdir(p.c_str());
    return 0;
  }
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  ::close(fd);
  ::unlink(p.c_str());
  return 0;
}

// The writing process of a temporary named by temporary_path(), or 0 for any other name.
pid_t writer_of(const std::string& name) {
  const std::size_t at = name.rfind(kMarker);
  if (name.empty() || name[0] != '.' || at == std::string::npos) return 0;
  const char* p = name.data() + at + kMarker.size();
  const char* const end = name.data() + name.size();
  std::uint64_t pid = 0, n = 0, random = 0;
  auto r = std::from_chars(p, end, pid);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '-') return 0;
  r = std::from_chars(r.ptr + 1, end, n);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '-') return 0;
  r = std::from_chars(r.ptr + 1, end, random, 16);
  if (r.ec != std::errc() || r.ptr != end || pid == 0 || pid > 0x7fffffff) return 0;
  return pid_t(pid);
}

}  // namespace

fs::path temporary_path(const fs::path& target) {
  static std::atomic<std::uint64_t> calls{0};
  thread_local std::mt19937 rng{std::random_device{}()};
  const std::string name = target.filename().string().substr(0, kNameKept);
  return target.parent_path() / fmt::format(".{}{}{}-{}-{:08x}", name, kMarker, ::getpid(), calls++, std::uint32_t(rng()));
}

std::size_t remove_stale_temporaries(const fs::path& dir) {
  std::size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const pid_t pid = writer_of(it->path().filename().string());
    if (pid == 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (EPERM: alive, another user's)
    std::error_code ignored;
    fs::remove_all(it->path(), ignored);
    removed += !ignored;
  }
  return removed;
}

void prepare_output_file(const fs::path& path, std::string_view label) {
  const fs::path p = path.lexically_normal();
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (fs::is_directory(st)) fail(label, path, "is a directory; give a file name");
  if (fs::exists(st) && !fs::is_regular_file(st)) fail(label, path, "exists and is not a regular file");
  const fs::path dir = directory_of(p);
  const fs::file_status dst = fs::status(dir, ec);
  if (!fs::exists(dst)) fail(label, path, "cannot write it: no directory {}", dir.string());
  if (!fs::is_directory(dst)) fail(label, path, "cannot write it: {} is not a directory", dir.string());
  if (const int err = probe(dir, false)) fail(label, path, "cannot write it: {}: {}", dir.string(), os_error(err));
  remove_stale_temporaries(dir);
}

void prepare_output_directory(const fs::path& path, std::string_view label) {
  const fs::path dir = without_trailing_slash(path);
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::exists(st)) {
    if (!fs::is_directory(st)) fail(label, path, "exists and is not a directory");
    if (const int err = probe(dir, false)) fail(label, path, "cannot write into it: {}", os_error(err));
    remove_stale_temporaries(dir);
  } else {
    fs::path ancestor = directory_of(dir);
    for (fs::path up; !fs::exists(fs::status(ancestor, ec)) && (up = directory_of(ancestor)) != ancestor;) ancestor = up;
    if (!fs::is_directory(fs::status(ancestor, ec)))
      fail(label, path, "cannot create it: {} is not a directory", ancestor.string());
    if (const int err = probe(ancestor, true)) fail(label, path, "cannot create it: {}: {}", ancestor.string(), os_error(err));
  }
  if (fs::is_directory(fs::status(directory_of(dir), ec))) remove_stale_temporaries(directory_of(dir));
}

}  // namespace nvfp4::io
