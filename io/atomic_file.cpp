#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "io/output_path.h"
#include "reference/exception.h"

namespace nvfp4::io {

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)), tmp_(temporary_path(path_)) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw OutputError(fmt::format("{}: cannot create temporary file {}: {}", path_.string(), tmp_.string(),
                                  std::generic_category().message(errno)));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFile::fail_and_discard(std::string_view step, int err) {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  ::unlink(tmp_.c_str());
  throw OutputError(fmt::format("{}: cannot {}: {}", path_.string(), step, std::generic_category().message(err)));
}

void AtomicFile::write(std::span<const std::uint8_t> bytes) {
  if (fd_ < 0) throw OutputError(fmt::format("{}: written after commit or a failure", path_.string()));
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_and_discard("write file", errno);
    }
    bytes = bytes.subspan(std::size_t(n));
  }
}

void AtomicFile::write(std::string_view text) { write({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}); }

void AtomicFile::commit() {
  if (fd_ < 0) throw OutputError(fmt::format("{}: committed twice or after a failure", path_.string()));
  if (::fsync(fd_) != 0) fail_and_discard("fsync file", errno);
  // close() can report deferred write errors (e.g. NFS).
  if (::close(std::exchange(fd_, -1)) != 0) fail_and_discard("close file", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail_and_discard("rename temporary file onto it", errno);
  // Persist the rename itself; best effort, the data is already safe.
  const std::filesystem::path dir = path_.has_parent_path() ? path_.parent_path() : ".";
  const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d >= 0) {
    ::fsync(d);
    ::close(d);
  }
}

void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

void write_file_atomic(const std::filesystem::path& path, std::string_view text) {
  AtomicFile f(path);
  f.write(text);
  f.commit();
}

void copy_file_atomic(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(from, ec)) throw InputError(fmt::format("{}: not a regular file", from.string()));
  std::ifstream in(from, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.is_open() || in.bad()) throw InputError(fmt::format("{}: cannot read file", from.string()));
  write_file_atomic(to, bytes);
}

}  // namespace nvfp4::io
