// Writing a file so that a reader sees the old content or the new, never a part: the bytes go to a
// temporary beside the target (io/output_path.h), which commit() fsyncs, renames onto the target
// and makes durable by fsyncing the directory. Every error, and destruction without commit(),
// removes the temporary. Errors are OutputError, naming the target.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

namespace nvfp4::io {

class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path path);  // creates the temporary
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  void write(std::span<const std::uint8_t> bytes);
  void write(std::string_view text);
  void commit();

 private:
  void fail_and_discard(std::string_view step, int err);

  std::filesystem::path path_, tmp_;
  int fd_ = -1;
};

// The whole file at once.
void write_file_atomic(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);
void write_file_atomic(const std::filesystem::path& path, std::string_view text);

// The bytes of the regular file `from` written to `to` as write_file_atomic does. InputError when
// `from` is not a regular file or cannot be read (a FIFO is refused, not waited on).
void copy_file_atomic(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace nvfp4::io
