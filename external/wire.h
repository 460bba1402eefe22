// The worker protocol's frames (docs/spec/worker-protocol.md): a u64 little-endian byte count, then a
// safetensors image whose tensors are the message's tensors and whose metadata key "nvfp4-verify"
// holds the message JSON. Used by the harness (WorkerBackend) and by workers written in C++.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/case.h"

namespace nvfp4::external::wire {

// The harness speaks protocol 2 and accepts workers of protocol 1 as well: version 2 made a
// parameter the declaration does not name accept only its default (closed world); that rule
// narrows what a protocol 1 worker receives and so applies to it too.
constexpr int kProtocolVersion = 2;
constexpr int kOldestProtocolVersion = 1;
constexpr std::uint64_t kMaxFrameBytes = std::uint64_t(1) << 31;
constexpr const char* kMetadataKey = "nvfp4-verify";

struct Message {
  nlohmann::json body;  // {"type": ..., ...}
  cases::TensorMap tensors;
};

// A frame that breaks the protocol: malformed length, image, metadata or JSON.
class ProtocolError : public InputError {
 public:
  using InputError::InputError;
};

// The whole frame, length prefix included.
std::vector<std::uint8_t> encode(const Message& m);

// Accumulates bytes read from a stream and cuts them into messages.
class FrameReader {
 public:
  void feed(std::span<const std::uint8_t> bytes);
  // The next complete message, or nullopt until more bytes arrive. Throws ProtocolError.
  std::optional<Message> next();

 private:
  std::vector<std::uint8_t> buffer_;
  std::size_t pos_ = 0;  // start of the first unread frame
};

// Blocking I/O for workers in C++: nullopt at end of file (between frames). Throw ProtocolError
// (write: std::runtime_error on an I/O error).
std::optional<Message> read_message(int fd);
void write_message(int fd, const Message& m);

// Run requests and their answers, as in the protocol.
Message run_request(std::uint64_t id, const cases::Case& c);
cases::Case case_of_request(const Message& request);  // throws ProtocolError naming what is wrong
Message ok_result(std::uint64_t id, cases::TensorMap outputs);
Message error_result(std::uint64_t id, const std::string& message, std::optional<ErrorCode> code);

std::optional<ErrorCode> error_code_from_name(std::string_view name);

}  // namespace nvfp4::external::wire
