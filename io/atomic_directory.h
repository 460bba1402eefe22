// Publishing a directory whole: it is built under a hidden temporary name beside the target
// (io/output_path.h) and renamed into place by commit(), so that a reader finds no directory or a
// complete one. Destroyed without commit() (an error, an exception), the temporary is removed with
// everything in it. Errors are OutputError, naming the target.
#pragma once

#include <filesystem>

namespace nvfp4::io {

class AtomicDirectory {
 public:
  // What commit() does when the target exists by then.
  enum class Existing { kRefuse, kReplace };

  // Creates the temporary directory (and the target's missing parent directories).
  explicit AtomicDirectory(const std::filesystem::path& target);
  AtomicDirectory(const AtomicDirectory&) = delete;
  AtomicDirectory& operator=(const AtomicDirectory&) = delete;
  ~AtomicDirectory();

  // Where to write the directory's content until commit().
  const std::filesystem::path& path() const { return tmp_; }
  // Renames the temporary onto the target and fsyncs the parent. kRefuse: an existing target is an
  // error, left as it is; kReplace: an existing directory is swapped out atomically and removed.
  void commit(Existing existing);

 private:
  std::filesystem::path target_, tmp_;
  bool committed_ = false;
};

}  // namespace nvfp4::io
