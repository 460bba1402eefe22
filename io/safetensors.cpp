#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <system_error>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace nvfp4::io {
namespace {

// Data bytes are copied verbatim, so the host must already be little endian.
static_assert(std::endian::native == std::endian::little);

using json = nlohmann::json;

constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
constexpr std::string_view kMetadataKey = "__metadata__";

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeInfo, 12> kDTypes = {{
    {DType::F64, "F64", 8},
    {DType::F32, "F32", 4},
    {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},
    {DType::I64, "I64", 8},
    {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},
    {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
    {DType::F8_E4M3, "F8_E4M3", 1},
    {DType::F8_E5M2, "F8_E5M2", 1},
}};

const DTypeInfo& info(DType d) {
  for (const auto& i : kDTypes) {
    if (i.dtype == d) return i;
  }
  throw FormatError(fmt::format("invalid DType value {}", static_cast<int>(d)));
}

template <class... Args>
[[noreturn]] void fail(std::string_view origin, fmt::format_string<Args...> f, Args&&... args) {
  throw FormatError(fmt::format("{}: {}", origin, fmt::format(f, std::forward<Args>(args)...)));
}

std::string os_error(int err) { return std::generic_category().message(err); }

// Quotes a name JSON-style, so odd characters cannot break the one-line
// message format.
std::string quoted(const std::string& name) { return json(name).dump(-1, ' ', false, json::error_handler_t::replace); }

// Byte size of a tensor with this shape, or nullopt on a negative dimension
// or overflow.
std::optional<std::uint64_t> byte_size(const std::vector<std::int64_t>& shape, DType dtype) {
  std::uint64_t n = dtype_size(dtype);
  for (std::int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d)) {
      return std::nullopt;
    }
    n *= static_cast<std::uint64_t>(d);
  }
  return n;
}

// The product of a shape's non-zero dimensions, saturating at kMaxEmptyExtent + 1 (no overflow).
std::uint64_t empty_extent(const std::vector<std::int64_t>& shape) {
  std::uint64_t n = 1;
  for (std::int64_t d : shape)
    if (d > 0) n = std::min(n * std::min(static_cast<std::uint64_t>(d), kMaxEmptyExtent + 1), kMaxEmptyExtent + 1);
  return n;
}

const json& field(const json& entry, const char* key, std::string_view origin, const std::string& name) {
  auto it = entry.find(key);
  if (it == entry.end()) fail(origin, "tensor {}: missing \"{}\"", quoted(name), key);
  return *it;
}

TensorInfo parse_entry(const json& entry, const std::string& name, std::uint64_t data_size, std::string_view origin) {
  const std::string q = quoted(name);
  if (!entry.is_object()) fail(origin, "tensor {}: entry is not a JSON object", q);

  const json& jdtype = field(entry, "dtype", origin, name);
  const json& jshape = field(entry, "shape", origin, name);
  const json& joffsets = field(entry, "data_offsets", origin, name);

  if (!jdtype.is_string()) fail(origin, "tensor {}: \"dtype\" must be a string", q);
  auto dtype = dtype_from_name(jdtype.get_ref<const std::string&>());
  if (!dtype) fail(origin, "tensor {}: unknown dtype {}", q, jdtype.dump());

  if (!jshape.is_array()) fail(origin, "tensor {}: \"shape\" must be an array of integers", q);
  TensorInfo t;
  t.dtype = *dtype;
  for (const json& d : jshape) {
    if (!d.is_number_integer()) {
      fail(origin, "tensor {}: \"shape\" must be an array of integers, got {}", q, jshape.dump());
    }
    if (d.is_number_unsigned() && d.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(origin, "tensor {}: dimension {} is too large", q, d.dump());
    }
    t.shape.push_back(d.get<std::int64_t>());
    if (t.shape.back() < 0) fail(origin, "tensor {}: negative dimension in shape {}", q, jshape.dump());
  }

  if (!joffsets.is_array() || joffsets.size() != 2 || !joffsets[0].is_number_unsigned() || !joffsets[1].is_number_unsigned()) {
    fail(origin, "tensor {}: \"data_offsets\" must be [begin, end] of non-negative integers, got {}", q, joffsets.dump());
  }
  const auto begin = joffsets[0].get<std::uint64_t>();
  const auto end = joffsets[1].get<std::uint64_t>();
  if (begin > end) fail(origin, "tensor {}: data_offsets begin {} > end {}", q, begin, end);
  if (end > data_size) {
    fail(origin, "tensor {}: truncated: data_offsets end {} is beyond the data section ({} bytes)", q, end, data_size);
  }
  auto expected = byte_size(t.shape, t.dtype);
  if (!expected) fail(origin, "tensor {}: shape {} is too large", q, jshape.dump());
  if (*expected == 0 && empty_extent(t.shape) > kMaxEmptyExtent) {
    fail(origin, "tensor {}: shape {} has no elements, and its other dimensions multiply to more than {}", q, jshape.dump(),
         kMaxEmptyExtent);
  }
  if (*expected != end - begin) {
    fail(origin, "tensor {}: byte length {} does not match shape {} x {} ({} bytes)", q, end - begin, jshape.dump(),
         dtype_name(t.dtype), *expected);
  }
  t.begin = begin;
  t.end = end;
  return t;
}

std::map<std::string, std::string> parse_metadata(const json& j, std::string_view origin) {
  if (!j.is_object()) fail(origin, "\"__metadata__\" must be an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) {
      fail(origin, "\"__metadata__\" value for {} must be a string, got {}", quoted(k), v.dump());
    }
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

// Owns a file descriptor; closes it on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string_view dtype_name(DType d) { return info(d).name; }
std::size_t dtype_size(DType d) { return info(d).size; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kDTypes) {
    if (i.name == name) return i.dtype;
  }
  return std::nullopt;
}

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

Tensor make_tensor(DType dtype, std::vector<std::int64_t> shape, std::span<const std::uint8_t> bytes) {
  auto expected = byte_size(shape, dtype);
  if (!expected) throw FormatError("make_tensor: negative or overflowing dimension in shape");
  if (*expected != bytes.size()) {
    throw FormatError(
        fmt::format("make_tensor: got {} bytes but shape needs {} bytes of {}", bytes.size(), *expected, dtype_name(dtype)));
  }
  return Tensor{dtype, std::move(shape), {bytes.begin(), bytes.end()}};
}

namespace {

// The header (the JSON after the length prefix) of a file whose data section has `data_size`
// bytes: every entry checked against it, and no two tensors overlapping.
Header parse_header(std::span<const std::uint8_t> header_bytes, std::uint64_t data_size, std::string_view origin) {
  json header;
  try {
    header = json::parse(header_bytes.begin(), header_bytes.end());
  } catch (const json::parse_error& e) {
    fail(origin, "header is not valid JSON: {}", e.what());
  }
  if (!header.is_object()) fail(origin, "header is not a JSON object");

  Header h;
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == kMetadataKey) {
      h.metadata = parse_metadata(entry, origin);
      continue;
    }
    const TensorInfo& t = h.tensors.emplace(name, parse_entry(entry, name, data_size, origin)).first->second;
    if (t.begin != t.end) ranges.emplace_back(t.begin, t.end, name);
  }

  // Empty ranges hold no byte; the rest, sorted by begin, must tile [0, data_size) exactly, as
  // the format requires: a gap, an overlap or trailing bytes mean offsets that do not describe
  // the file (a header length off by one shifts every tensor by a byte).
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t covered = 0;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto& [b, e, name] = ranges[i];
    if (b < covered) {
      const auto& [pb, pe, pname] = ranges[i - 1];
      fail(origin, "tensors {} [{}, {}) and {} [{}, {}) overlap", quoted(pname), pb, pe, quoted(name), b, e);
    }
    if (b > covered) {
      fail(origin, "tensor {} starts at byte {} of the data section, but the bytes before it end at {}: a gap", quoted(name), b,
           covered);
    }
    covered = e;
  }
  if (covered != data_size) {
    fail(origin, "{} trailing bytes after the last tensor (the data section has {} bytes, the tensors cover {})",
         data_size - covered, data_size, covered);
  }
  return h;
}

// The header's length from the 8-byte prefix, checked against the bytes that follow it.
std::uint64_t header_length(std::span<const std::uint8_t> prefix, std::uint64_t after_prefix, std::string_view origin) {
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, prefix.data(), 8);
  if (header_len > kMaxHeaderBytes) {
    fail(origin, "header length {} is absurd (limit is 100 MB)", header_len);
  }
  if (header_len > after_prefix) {
    fail(origin, "truncated: header says {} bytes but only {} follow the length prefix", header_len, after_prefix);
  }
  return header_len;
}

}  // namespace

File parse(std::span<const std::uint8_t> bytes, std::string_view origin) {
  if (bytes.size() < 8) {
    fail(origin, "file is shorter than 8 bytes ({} bytes), no header length", bytes.size());
  }
  const std::uint64_t header_len = header_length(bytes.first(8), bytes.size() - 8, origin);
  const auto data = bytes.subspan(8 + header_len);
  Header h = parse_header(bytes.subspan(8, header_len), data.size(), origin);
  File file;
  file.metadata = std::move(h.metadata);
  for (const auto& [name, t] : h.tensors)
    file.tensors.emplace(
        name, Tensor{t.dtype, t.shape, {data.begin() + std::ptrdiff_t(t.begin), data.begin() + std::ptrdiff_t(t.end)}});
  return file;
}

namespace {

// Opens a regular file for reading and returns its size. O_NONBLOCK: opening a FIFO (or a
// device) must not wait for a writer before fstat can tell that it is not a file; reads of a
// regular file ignore the flag.
std::uint64_t open_regular_file(const std::filesystem::path& path, Fd& f) {
  const std::string origin = path.string();
  f.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (f.fd < 0) fail(origin, "cannot open file: {}", os_error(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(origin, "cannot stat file: {}", os_error(errno));
  if (!S_ISREG(st.st_mode)) fail(origin, "cannot read file: not a regular file");
  return static_cast<std::uint64_t>(st.st_size);
}

}  // namespace

File read_file(const std::filesystem::path& path) {
  const std::string origin = path.string();
  Fd f;
  const auto size = static_cast<std::size_t>(open_regular_file(path, f));
  if (size == 0) return parse({}, origin);

  // Map instead of reading, so peak memory is one copy of the tensors.
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, f.fd, 0);
  if (p == MAP_FAILED) fail(origin, "cannot read file: {}", os_error(errno));
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{p, size};
  return parse({static_cast<const std::uint8_t*>(p), size}, origin);
}

std::vector<std::uint8_t> serialize(const File& file) {
  json header = json::object();
  if (!file.metadata.empty()) header[std::string(kMetadataKey)] = file.metadata;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : file.tensors) {
    if (name == kMetadataKey) throw FormatError("serialize: tensor name \"__metadata__\" is reserved");
    auto expected = byte_size(t.shape, t.dtype);
    if (!expected || *expected != t.bytes.size()) {
      throw FormatError(
          fmt::format("serialize: tensor {}: has {} bytes, which does not match its shape", quoted(name), t.bytes.size()));
    }
    header[name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }

  std::string text;
  try {
    text = header.dump();
  } catch (const json::type_error& e) {
    throw FormatError(fmt::format("serialize: invalid UTF-8 in a name or metadata: {}", e.what()));
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<std::uint8_t> out(8 + text.size());
  const std::uint64_t len = text.size();
  std::memcpy(out.data(), &len, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  out.reserve(out.size() + offset);
  for (const auto& [name, t] : file.tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

void write_file_atomic(const std::filesystem::path& path, const File& file) {
  write_file_atomic(path, std::span<const std::uint8_t>(serialize(file)));
}

// ---- one tensor at a time ------------------------------------------------------------------

namespace {

// Reads exactly n bytes at offset, retrying on EINTR and short reads; false at end of file.
bool read_at(int fd, std::uint8_t* out, std::size_t n, std::uint64_t offset, std::string_view origin) {
  while (n > 0) {
    const ssize_t r = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(origin, "cannot read file: {}", os_error(errno));
    }
    if (r == 0) return false;
    out += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
  return true;
}

}  // namespace

LazyFile::LazyFile(const std::filesystem::path& path) : path_(path) {
  const std::string origin = path.string();
  Fd f;
  const std::uint64_t size = open_regular_file(path, f);
  std::array<std::uint8_t, 8> prefix{};
  if (size < 8 || !read_at(f.fd, prefix.data(), 8, 0, origin))
    fail(origin, "file is shorter than 8 bytes ({} bytes), no header length", size);
  const std::uint64_t header_len = header_length(prefix, size - 8, origin);
  std::vector<std::uint8_t> text(header_len);
  if (!read_at(f.fd, text.data(), text.size(), 8, origin)) fail(origin, "truncated: the file ends inside its header");
  data_start_ = 8 + header_len;
  header_ = parse_header(text, size - data_start_, origin);
  fd_ = std::exchange(f.fd, -1);
}

LazyFile::LazyFile(LazyFile&& o) noexcept
    : path_(std::move(o.path_)), header_(std::move(o.header_)), data_start_(o.data_start_), fd_(std::exchange(o.fd_, -1)) {}

LazyFile& LazyFile::operator=(LazyFile&& o) noexcept {
  std::swap(path_, o.path_);
  std::swap(header_, o.header_);
  std::swap(data_start_, o.data_start_);
  std::swap(fd_, o.fd_);
  return *this;
}

LazyFile::~LazyFile() {
  if (fd_ >= 0) ::close(fd_);
}

Tensor LazyFile::read(const std::string& name) const {
  const auto it = header_.tensors.find(name);
  if (it == header_.tensors.end()) fail(path_.string(), "no tensor {}", quoted(name));
  const TensorInfo& t = it->second;
  Tensor out{t.dtype, t.shape, std::vector<std::uint8_t>(t.end - t.begin)};
  if (!read_at(fd_, out.bytes.data(), out.bytes.size(), data_start_ + t.begin, path_.string()))
    fail(path_.string(), "tensor {}: truncated: the file ends inside its bytes", quoted(name));
  return out;
}

FileWriter::FileWriter(const std::filesystem::path& path, std::vector<std::pair<std::string, TensorInfo>> tensors,
                       std::map<std::string, std::string> metadata)
    : path_(path), tensors_(std::move(tensors)), file_(path) {
  const std::string origin = path.string();
  json header = json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::uint64_t offset = 0;
  for (auto& [name, t] : tensors_) {
    const auto n = byte_size(t.shape, t.dtype);
    if (!n) fail(origin, "tensor {}: negative or overflowing shape", quoted(std::as_const(name)));
    t.begin = offset;
    t.end = offset += *n;
    header[name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data section 8-byte aligned
  std::array<std::uint8_t, 8> prefix{};
  const std::uint64_t len = text.size();
  std::memcpy(prefix.data(), &len, 8);
  file_.write(prefix);
  file_.write(text);
}

void FileWriter::write(const std::string& name, const Tensor& t) {
  const std::string origin = path_.string();
  if (next_ >= tensors_.size()) fail(origin, "tensor {} written after every declared tensor", quoted(name));
  const auto& [expected_name, info] = tensors_[next_];
  if (name != expected_name || t.dtype != info.dtype || t.shape != info.shape)
    fail(origin, "tensor {} written where {} ({}) was declared", quoted(name), quoted(expected_name), dtype_name(info.dtype));
  file_.write(t.bytes);
  ++next_;
}

void FileWriter::commit() {
  if (next_ != tensors_.size()) fail(path_.string(), "{} of {} declared tensors written; not committing", next_, tensors_.size());
  file_.commit();
}

}  // namespace nvfp4::io
