#include "external/wire.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases/registry.h"
#include "io/safetensors.h"

namespace nvfp4::external::wire {
namespace {

using nlohmann::json;

std::uint64_t load_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Message decode(std::span<const std::uint8_t> image) {
  io::File f;
  try {
    f = io::parse(image, "frame");
  } catch (const io::FormatError& e) {
    throw ProtocolError(fmt::format("not a safetensors image: {}", e.what()));
  }
  const auto it = f.metadata.find(kMetadataKey);
  if (it == f.metadata.end()) throw ProtocolError(fmt::format("the frame's metadata has no \"{}\" key", kMetadataKey));
  Message m;
  try {
    m.body = json::parse(it->second);
  } catch (const json::exception& e) {
    throw ProtocolError(fmt::format("the message is not JSON: {}", e.what()));
  }
  if (!m.body.is_object() || !m.body.contains("type") || !m.body.at("type").is_string())
    throw ProtocolError("the message is not a JSON object with a string \"type\"");
  m.tensors = std::move(f.tensors);
  return m;
}

void write_all(int fd, const std::uint8_t* p, std::size_t n) {
  while (n) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw std::runtime_error(fmt::format("write: {}", std::strerror(errno)));
    p += w;
    n -= std::size_t(w);
  }
}

// Reads exactly n bytes; false at end of file before the first byte.
bool read_all(int fd, std::uint8_t* p, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw ProtocolError(fmt::format("read: {}", std::strerror(errno)));
    if (r == 0) {
      if (got == 0) return false;
      throw ProtocolError("end of file inside a frame");
    }
    got += std::size_t(r);
  }
  return true;
}

}  // namespace

std::vector<std::uint8_t> encode(const Message& m) {
  // The safetensors header written directly (io::serialize builds it as a JSON tree, which costs
  // more than the rest of a small case's round trip); the decoder validates it as any image.
  std::string header = R"({"__metadata__":{")" + std::string(kMetadataKey) + R"(":)" + json(m.body.dump()).dump() + "}";
  std::size_t offset = 0;
  for (const auto& [name, t] : m.tensors) {
    header += fmt::format(R"(,{}:{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}})", json(name).dump(),
                          io::dtype_name(t.dtype), fmt::join(t.shape, ","), offset, offset + t.bytes.size());
    offset += t.bytes.size();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data section stays 8-byte aligned
  const std::uint64_t image = 8 + header.size() + offset;
  std::vector<std::uint8_t> frame(8 + image);
  std::uint8_t* p = frame.data();
  for (const std::uint64_t v : {image, std::uint64_t(header.size())})
    for (int i = 0; i < 8; ++i) *p++ = std::uint8_t(v >> (8 * i));
  std::memcpy(p, header.data(), header.size());
  p += header.size();
  for (const auto& [name, t] : m.tensors) {
    if (!t.bytes.empty()) std::memcpy(p, t.bytes.data(), t.bytes.size());
    p += t.bytes.size();
  }
  return frame;
}

void FrameReader::feed(std::span<const std::uint8_t> bytes) {
  if (pos_ > 0 && 2 * pos_ >= buffer_.size()) {  // drop what was read once it is the larger part
    buffer_.erase(buffer_.begin(), buffer_.begin() + std::ptrdiff_t(pos_));
    pos_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

std::optional<Message> FrameReader::next() {
  if (buffer_.size() - pos_ < 8) return std::nullopt;
  const std::uint64_t n = load_u64(buffer_.data() + pos_);
  if (n > kMaxFrameBytes || n < 8)
    throw ProtocolError(
        fmt::format("frame length {} is out of range (the first 8 bytes were {:02x})", n,
                    fmt::join(buffer_.begin() + std::ptrdiff_t(pos_), buffer_.begin() + std::ptrdiff_t(pos_) + 8, " ")));
  if (buffer_.size() - pos_ - 8 < n) return std::nullopt;
  Message m = decode({buffer_.data() + pos_ + 8, std::size_t(n)});
  pos_ += 8 + std::size_t(n);
  return m;
}

std::optional<Message> read_message(int fd) {
  std::uint8_t len[8];
  if (!read_all(fd, len, 8)) return std::nullopt;
  const std::uint64_t n = load_u64(len);
  if (n > kMaxFrameBytes || n < 8) throw ProtocolError(fmt::format("frame length {} is out of range", n));
  std::vector<std::uint8_t> image(n);
  if (!read_all(fd, image.data(), image.size())) throw ProtocolError("end of file inside a frame");
  return decode(image);
}

void write_message(int fd, const Message& m) {
  const std::vector<std::uint8_t> frame = encode(m);
  write_all(fd, frame.data(), frame.size());
}

Message run_request(std::uint64_t id, const cases::Case& c) {
  json params = json::object();
  for (const auto& [name, value] : c.params.values()) params[name] = cases::param_to_json(value);
  return Message{{{"type", "run"}, {"id", id}, {"op", c.op}, {"params", std::move(params)}}, c.inputs};
}

cases::Case case_of_request(const Message& request) {
  const json& b = request.body;
  if (b.value("type", "") != "run" || !b.contains("op") || !b.at("op").is_string() || !b.contains("params") ||
      !b.at("params").is_object())
    throw ProtocolError("a run request needs \"op\" (a string) and \"params\" (an object)");
  const cases::OperationSpec* op = cases::find_operation(b.at("op").get<std::string>());
  if (!op) throw ProtocolError(fmt::format("unknown operation '{}'", b.at("op").get<std::string>()));
  cases::Case c = cases::make_case(op->name);
  for (const auto& [name, value] : b.at("params").items()) {
    const cases::ParamSpec* p = op->param(name);
    if (!p) throw ProtocolError(fmt::format("{}: no parameter '{}'", op->name, name));
    try {
      c.params.set(name, cases::param_from_json(*op, *p, value));
    } catch (const Error& e) {
      throw ProtocolError(e.what());
    }
  }
  c.inputs = request.tensors;
  return c;
}

Message ok_result(std::uint64_t id, cases::TensorMap outputs) {
  return Message{{{"type", "result"}, {"id", id}, {"ok", true}}, std::move(outputs)};
}

Message error_result(std::uint64_t id, const std::string& message, std::optional<ErrorCode> code) {
  json b = {{"type", "result"}, {"id", id}, {"ok", false}, {"error", message}};
  if (code) b["code"] = error_code_name(*code);
  return Message{std::move(b), {}};
}

std::optional<ErrorCode> error_code_from_name(std::string_view name) {
  for (int i = 0; i <= int(ErrorCode::E_UNSUPPORTED); ++i)
    if (error_code_name(ErrorCode(i)) == name) return ErrorCode(i);
  return std::nullopt;
}

}  // namespace nvfp4::external::wire
