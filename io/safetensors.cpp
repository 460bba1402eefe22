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
#include <random>
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
std::string quoted(const std::string& name) {
  return json(name).dump(-1, ' ', false, json::error_handler_t::replace);
}

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

const json& field(const json& entry, const char* key, std::string_view origin,
                  const std::string& name) {
  auto it = entry.find(key);
  if (it == entry.end()) fail(origin, "tensor {}: missing \"{}\"", quoted(name), key);
  return *it;
}

Tensor parse_tensor(const json& entry, const std::string& name,
                    std::span<const std::uint8_t> data, std::string_view origin,
                    std::pair<std::uint64_t, std::uint64_t>& range) {
  const std::string q = quoted(name);
  if (!entry.is_object()) fail(origin, "tensor {}: entry is not a JSON object", q);

  const json& jdtype = field(entry, "dtype", origin, name);
  const json& jshape = field(entry, "shape", origin, name);
  const json& joffsets = field(entry, "data_offsets", origin, name);

  if (!jdtype.is_string()) fail(origin, "tensor {}: \"dtype\" must be a string", q);
  auto dtype = dtype_from_name(jdtype.get_ref<const std::string&>());
  if (!dtype) fail(origin, "tensor {}: unknown dtype {}", q, jdtype.dump());

  if (!jshape.is_array()) fail(origin, "tensor {}: \"shape\" must be an array of integers", q);
  Tensor t;
  t.dtype = *dtype;
  for (const json& d : jshape) {
    if (!d.is_number_integer()) {
      fail(origin, "tensor {}: \"shape\" must be an array of integers, got {}", q, jshape.dump());
    }
    if (d.is_number_unsigned() &&
        d.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(origin, "tensor {}: dimension {} is too large", q, d.dump());
    }
    t.shape.push_back(d.get<std::int64_t>());
    if (t.shape.back() < 0) fail(origin, "tensor {}: negative dimension in shape {}", q, jshape.dump());
  }

  if (!joffsets.is_array() || joffsets.size() != 2 || !joffsets[0].is_number_unsigned() ||
      !joffsets[1].is_number_unsigned()) {
    fail(origin, "tensor {}: \"data_offsets\" must be [begin, end] of non-negative integers, got {}",
         q, joffsets.dump());
  }
  const auto begin = joffsets[0].get<std::uint64_t>();
  const auto end = joffsets[1].get<std::uint64_t>();
  if (begin > end) fail(origin, "tensor {}: data_offsets begin {} > end {}", q, begin, end);
  if (end > data.size()) {
    fail(origin, "tensor {}: truncated: data_offsets end {} is beyond the data section ({} bytes)",
         q, end, data.size());
  }
  auto expected = byte_size(t.shape, t.dtype);
  if (!expected) fail(origin, "tensor {}: shape {} is too large", q, jshape.dump());
  if (*expected != end - begin) {
    fail(origin, "tensor {}: byte length {} does not match shape {} x {} ({} bytes)", q,
         end - begin, jshape.dump(), dtype_name(t.dtype), *expected);
  }
  t.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(begin),
                 data.begin() + static_cast<std::ptrdiff_t>(end));
  range = {begin, end};
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

// Writes all of `bytes`, retrying on EINTR and short writes. Returns errno or 0.
int write_all(int fd, std::span<const std::uint8_t> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return 0;
}

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

Tensor make_tensor(DType dtype, std::vector<std::int64_t> shape,
                   std::span<const std::uint8_t> bytes) {
  auto expected = byte_size(shape, dtype);
  if (!expected) throw FormatError("make_tensor: negative or overflowing dimension in shape");
  if (*expected != bytes.size()) {
    throw FormatError(fmt::format("make_tensor: got {} bytes but shape needs {} bytes of {}",
                                  bytes.size(), *expected, dtype_name(dtype)));
  }
  return Tensor{dtype, std::move(shape), {bytes.begin(), bytes.end()}};
}

File parse(std::span<const std::uint8_t> bytes, std::string_view origin) {
  if (bytes.size() < 8) {
    fail(origin, "file is shorter than 8 bytes ({} bytes), no header length", bytes.size());
  }
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  if (header_len > kMaxHeaderBytes) {
    fail(origin, "header length {} is absurd (limit is 100 MB)", header_len);
  }
  if (header_len > bytes.size() - 8) {
    fail(origin, "truncated: header says {} bytes but only {} follow the length prefix",
         header_len, bytes.size() - 8);
  }
  const auto header_bytes = bytes.subspan(8, header_len);
  const auto data = bytes.subspan(8 + header_len);

  json header;
  try {
    header = json::parse(header_bytes.begin(), header_bytes.end());
  } catch (const json::parse_error& e) {
    fail(origin, "header is not valid JSON: {}", e.what());
  }
  if (!header.is_object()) fail(origin, "header is not a JSON object");

  File file;
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == kMetadataKey) {
      file.metadata = parse_metadata(entry, origin);
      continue;
    }
    std::pair<std::uint64_t, std::uint64_t> range;
    file.tensors.emplace(name, parse_tensor(entry, name, data, origin, range));
    if (range.first != range.second) ranges.emplace_back(range.first, range.second, name);
  }

  // Empty ranges cannot overlap anything; among the rest, sorted by begin,
  // each must start at or after the previous one's end.
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    const auto& [pb, pe, pname] = ranges[i - 1];
    const auto& [b, e, name] = ranges[i];
    if (b < pe) {
      fail(origin, "tensors {} [{}, {}) and {} [{}, {}) overlap", quoted(pname), pb, pe,
           quoted(name), b, e);
    }
  }
  return file;
}

File read_file(const std::filesystem::path& path) {
  const std::string origin = path.string();
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) fail(origin, "cannot open file: {}", os_error(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(origin, "cannot stat file: {}", os_error(errno));
  if (!S_ISREG(st.st_mode)) fail(origin, "cannot read file: not a regular file");
  const auto size = static_cast<std::size_t>(st.st_size);
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
      throw FormatError(fmt::format("serialize: tensor {}: has {} bytes, which does not match its shape",
                                    quoted(name), t.bytes.size()));
    }
    header[name] = {{"dtype", dtype_name(t.dtype)},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.bytes.size()}}};
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
  const std::string origin = path.string();
  const std::vector<std::uint8_t> bytes = serialize(file);

  std::random_device rd;
  const std::uint64_t r = (std::uint64_t{rd()} << 32) | rd();
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp.{}.{:016x}", ::getpid(), r);

  Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
  if (f.fd < 0) fail(origin, "cannot create temp file {}: {}", tmp.string(), os_error(errno));

  const char* step = nullptr;
  int err = write_all(f.fd, bytes);
  if (err != 0) {
    step = "write";
  } else if (::fsync(f.fd) != 0) {
    err = errno, step = "fsync";
  } else {
    // close() can report deferred write errors (e.g. NFS), so check it.
    const int fd = std::exchange(f.fd, -1);
    if (::close(fd) != 0) {
      err = errno, step = "close";
    } else if (::rename(tmp.c_str(), path.c_str()) != 0) {
      err = errno, step = "rename temp file onto";
    }
  }
  if (step != nullptr) {
    ::unlink(tmp.c_str());
    fail(origin, "cannot {} file: {}", step, os_error(err));
  }

  // Persist the rename itself; best effort, the data is already safe.
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);
}

}  // namespace nvfp4::io
