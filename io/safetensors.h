// Reader and writer for the safetensors format
// (https://github.com/huggingface/safetensors):
//
//   [u64 little-endian N][N bytes of JSON header][data section]
//
// The header maps tensor names to {"dtype", "shape", "data_offsets"}, with
// offsets relative to the start of the data section, plus an optional
// "__metadata__" object of string -> string.
//
// Every error of reading, and inconsistent inputs to the writer and to
// make_tensor*, is reported as FormatError; an error of writing as OutputError
// (io/atomic_file.h). Messages are single lines that start with the file name
// or origin.
//
// Files come from other people, so the reader is strict (as the format is):
// only regular files are opened (a FIFO or a device never blocks the reader);
// the byte ranges of the non-empty tensors must tile the data section exactly,
// in some order, with no gap, no overlap and no trailing byte (a header length
// that is off by one shifts every tensor, and is rejected so); and a tensor's
// shape is bounded before anything is allocated (kMaxEmptyExtent).

#ifndef NVFP4_IO_SAFETENSORS_H_
#define NVFP4_IO_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "io/atomic_file.h"
#include "reference/exception.h"

namespace nvfp4::io {

// A tensor with no elements (a 0 in its shape) costs no bytes in the file, so the file does not
// bound its other dimensions: their product may be at most this, or an 80-byte file could
// describe a [2^40, 0] tensor whose rows an operation loops over and whose padded outputs it
// allocates. Every other tensor's dimensions are bounded by its bytes in the file.
constexpr std::uint64_t kMaxEmptyExtent = std::uint64_t{1} << 16;

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2 };

// The spelling used in safetensors headers: "F32", "BF16", "F8_E4M3", ...
std::string_view dtype_name(DType);
// Bytes per element.
std::size_t dtype_size(DType);
// Inverse of dtype_name; nullopt for names this module does not support.
std::optional<DType> dtype_from_name(std::string_view);

struct Tensor {
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;  // row-major; [] is a scalar
  std::vector<std::uint8_t> bytes;  // little-endian, exactly numel*dtype_size
  // Product of shape; 1 for a scalar, 0 if any dimension is 0.
  std::int64_t numel() const;
};

struct File {
  std::map<std::string, Tensor> tensors;        // sorted by name
  std::map<std::string, std::string> metadata;  // "__metadata__"
};

// A tensor's entry in a file's header: dtype, shape and its byte range in the data section.
struct TensorInfo {
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

struct Header {
  std::map<std::string, TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};

class FormatError : public InputError {
 public:
  using InputError::InputError;
};

// Reads and validates a whole file. Throws FormatError.
File read_file(const std::filesystem::path&);

// Validates and decodes an in-memory safetensors image; `origin` prefixes
// error messages (usually the file name). Throws FormatError.
File parse(std::span<const std::uint8_t> bytes, std::string_view origin);

// Encodes `file`: tensors contiguous in name order, header padded with spaces
// to a multiple of 8 bytes so the data section stays 8-byte aligned.
std::vector<std::uint8_t> serialize(const File&);

// Writes the file through io::AtomicFile: readers see either the old or the new
// file, never a partial one.
void write_file_atomic(const std::filesystem::path&, const File&);

// A file read one tensor at a time (checkpoints larger than memory): opening reads and
// validates the header only; read() reads one tensor's bytes. Throws FormatError.
class LazyFile {
 public:
  explicit LazyFile(const std::filesystem::path&);
  LazyFile(LazyFile&&) noexcept;
  LazyFile& operator=(LazyFile&&) noexcept;
  ~LazyFile();
  const Header& header() const { return header_; }
  const std::filesystem::path& path() const { return path_; }
  Tensor read(const std::string& name) const;  // FormatError naming the file for an unknown name

 private:
  std::filesystem::path path_;
  Header header_;
  std::uint64_t data_start_ = 0;
  int fd_ = -1;
};

// Writes a file tensor by tensor, in the order declared: the header first (from the declared
// dtypes and shapes), then each tensor's bytes as write() receives them, through io::AtomicFile;
// commit() checks that every tensor came and commits the file. Destroyed without commit(), the
// temporary is removed: a reader never sees a partial file.
class FileWriter {
 public:
  FileWriter(const std::filesystem::path& path, std::vector<std::pair<std::string, TensorInfo>> tensors,
             std::map<std::string, std::string> metadata = {});
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  void write(const std::string& name, const Tensor& t);  // the next declared tensor, same dtype and shape
  void commit();

 private:
  std::filesystem::path path_;
  std::vector<std::pair<std::string, TensorInfo>> tensors_;
  std::size_t next_ = 0;
  AtomicFile file_;
};

// Builds a tensor, checking that `bytes` holds exactly numel*dtype_size bytes
// and that no dimension is negative.
Tensor make_tensor(DType, std::vector<std::int64_t> shape, std::span<const std::uint8_t> bytes);

// Same, from typed values (copied bytewise, so host order must be little
// endian). Requires sizeof(T) == dtype_size(dtype).
template <class T>
Tensor make_tensor_from(DType dtype, std::vector<std::int64_t> shape, std::span<const T> values) {
  static_assert(std::is_trivially_copyable_v<T>, "make_tensor_from copies raw bytes");
  if (sizeof(T) != dtype_size(dtype)) {
    throw FormatError("make_tensor_from: sizeof(T) = " + std::to_string(sizeof(T)) + " does not match " +
                      std::string(dtype_name(dtype)) + " element size " + std::to_string(dtype_size(dtype)));
  }
  const auto* p = reinterpret_cast<const std::uint8_t*>(values.data());
  return make_tensor(dtype, std::move(shape), {p, values.size_bytes()});
}

}  // namespace nvfp4::io

#endif  // NVFP4_IO_SAFETENSORS_H_
