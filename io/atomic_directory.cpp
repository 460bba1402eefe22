#include "io/atomic_directory.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include <fmt/format.h>

#include "io/output_path.h"
#include "reference/exception.h"

namespace nvfp4::io {
namespace {

namespace fs = std::filesystem;

// "OUT/" names OUT: its temporary must not land inside it.
fs::path target_of(const fs::path& p) {
  fs::path t = p.lexically_normal();
  if (!t.has_filename() && t.has_parent_path()) t = t.parent_path();
  return t;
}

void fsync_directory(const fs::path& dir) {  // best effort: the data is already safe
  const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d >= 0) {
    ::fsync(d);
    ::close(d);
  }
}

std::string os_error(int err) { return std::generic_category().message(err); }

}  // namespace

AtomicDirectory::AtomicDirectory(const fs::path& target) : target_(target_of(target)), tmp_(temporary_path(target_)) {
  std::error_code ec;
  if (target_.has_parent_path()) fs::create_directories(target_.parent_path(), ec);
  if (ec)
    throw OutputError(
        fmt::format("{}: cannot create directory {}: {}", target_.string(), target_.parent_path().string(), ec.message()));
  if (::mkdir(tmp_.c_str(), 0755) != 0)
    throw OutputError(
        fmt::format("{}: cannot create temporary directory {}: {}", target_.string(), tmp_.string(), os_error(errno)));
}

AtomicDirectory::~AtomicDirectory() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(tmp_, ignored);
}

void AtomicDirectory::commit(Existing existing) {
  auto fail = [&](const std::string& why) {
    std::error_code ignored;
    fs::remove_all(tmp_, ignored);
    committed_ = true;  // nothing left to remove
    throw OutputError(fmt::format("{}: {}", target_.string(), why));
  };
  fsync_directory(tmp_);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(target_, ec);
  fs::path old;  // the replaced directory, removed once the new one is in place
  if (fs::exists(st) && existing == Existing::kReplace) {
    if (!fs::is_directory(st)) fail("exists and is not a directory; left as it is");
    // Swapped in one step: the old directory takes the temporary's name.
    if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0) {
      old = tmp_;
    } else {  // a file system without RENAME_EXCHANGE: the old one aside, then the new one in
      old = temporary_path(target_);
      if (::rename(target_.c_str(), old.c_str()) != 0) fail(fmt::format("cannot replace it: {}", os_error(errno)));
      if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
        const int err = errno;
        ::rename(old.c_str(), target_.c_str());
        fail(fmt::format("cannot replace it: {}", os_error(err)));
      }
    }
  } else if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE) != 0) {
    int err = errno;
    // EINVAL: a file system without RENAME_NOREPLACE; check, then rename.
    if (err == EINVAL)
      err = fs::exists(fs::symlink_status(target_, ec)) ? EEXIST : ::rename(tmp_.c_str(), target_.c_str()) != 0 ? errno : 0;
    if (err == EEXIST || err == ENOTEMPTY) fail("appeared while it was being written; left as it is");
    if (err != 0) fail(fmt::format("cannot rename the temporary directory onto it: {}", os_error(err)));
  }
  committed_ = true;
  fsync_directory(target_.has_parent_path() ? target_.parent_path() : fs::path("."));
  if (!old.empty()) fs::remove_all(old, ec);
}

}  // namespace nvfp4::io
