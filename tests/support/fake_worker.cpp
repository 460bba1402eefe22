// A worker for the harness's tests (docs/spec/worker-protocol.md): `nvfp4_fake_worker MODE`. In every
// mode it speaks protocol 2, declares the documented example's restrictions of quantize (with
// stochastic rounding, any seed and offset) plus amax_global, rejects (uncoded) any case outside
// them, and answers with the reference; each fault mode breaks that in one way, on cases that
// have one feature, so that shrinking has something to keep:
//   conform   nothing
//   v1        a worker written before the closed-world rule: protocol 1, the documented example's
//             declaration alone, and x of any rank but 2 rejected with E_RANK, as adapters written
//             before quantize's `experts` parameter do
//   trivial   answers every case at once with a one-byte tensor, computing nothing (overhead bench)
//   mismatch  flips the low bit of the first scale byte when direction == both
//   reject    rejects every amax_global case without a code
//   crash     abort()s on a quantize case with direction == both
//   exit      exits with status 3 on a quantize case with rounding == stochastic
//   hang      sleeps forever on a quantize case with direction == both
//   hang-all  sleeps forever on every case
//   close     closes its stdout on a quantize case with direction == both, then sleeps forever
//   close-exit  closes its stdout on a quantize case with direction == both, exits 0.2 s later
//   garbage   writes text to stdout on a quantize case with direction == both
//   wrong-id  answers a quantize case with direction == both under the next id
//   missing   leaves out "amax" when direction == both
//   extra     adds a tensor "bonus" when direction == both
//   dtype     returns "data" as I8 when direction == both
//   version   says hello with protocol 3
//   ulp1      also declares gemm (every parameter "*"), and answers it with the last element of d
//             one ULP above the reference's (below it for +inf; a NaN stays)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "cases/declaration.h"
#include "cases/reference_backend.h"
#include "cases/registry.h"
#include "compare/ulp.h"
#include "external/wire.h"

namespace {

using nlohmann::json;
using namespace nvfp4;

const json kImplements = json::parse(R"([
  {"op": "quantize", "params": {"profile": ["te"], "block": ["1d"], "direction": ["rowwise", "both"],
                                "row_scaled": [false], "scale_layout": ["compact"]},
   "dtype": ["F32", "BF16"]},
  {"op": "amax_global"}
])");

json implements(const std::string& mode) {
  json j = kImplements;
  if (mode != "v1") {
    json& quantize = j.at(0).at("params");
    quantize["rounding"] = {"nearest", "stochastic"};
    quantize["seed"] = quantize["offset"] = "*";
  }
  if (mode == "ulp1") {  // every gemm parameter, any value
    json params = json::object();
    for (const cases::ParamSpec& p : cases::find_operation("gemm")->params) params[std::string(p.name)] = "*";
    j.push_back({{"op", "gemm"}, {"params", std::move(params)}});
  }
  return j;
}

int protocol(const std::string& mode) {
  if (mode == "version") return 3;
  return mode == "v1" ? 1 : 2;
}

// The last element of t moved one step along the format's ordered line.
void move_last_by_one_ulp(io::Tensor& t) {
  const std::size_t size = io::dtype_size(t.dtype);
  if (t.bytes.empty()) return;
  std::uint8_t* last = t.bytes.data() + t.bytes.size() - size;
  std::uint32_t bits = 0;
  std::memcpy(&bits, last, size);
  const std::optional<std::int64_t> ordinal = compare::ulp_ordinal(t.dtype, bits);
  if (!ordinal) return;
  try {
    bits = compare::ulp_bits(t.dtype, *ordinal + 1);
  } catch (const std::out_of_range&) {  // +inf: nothing lies above it
    bits = compare::ulp_bits(t.dtype, *ordinal - 1);
  }
  std::memcpy(last, &bits, size);
}

bool both(const cases::Case& c) { return c.op == "quantize" && c.params.text("direction") == "both"; }

external::wire::Message answer(const std::string& mode, std::uint64_t id, const cases::Case& c, const cases::Declaration& d) {
  if (mode == "hang-all") std::this_thread::sleep_for(std::chrono::hours(1));
  if (const std::string why = d.outside(c); !why.empty())
    return external::wire::error_result(id, "outside my declaration: " + why, std::nullopt);
  if (mode == "v1" && c.op == "quantize" && c.inputs.at("x").shape.size() != 2)
    return external::wire::error_result(id, "quantize: x is not 2-D", ErrorCode::E_RANK);
  if (mode == "reject" && c.op == "amax_global")
    return external::wire::error_result(id, "amax_global is not implemented yet", std::nullopt);
  if (mode == "crash" && both(c)) std::abort();
  if (mode == "exit" && c.op == "quantize" && c.params.text("rounding") == "stochastic") std::exit(3);
  if (mode == "hang" && both(c)) std::this_thread::sleep_for(std::chrono::hours(1));
  if ((mode == "close" || mode == "close-exit") && both(c)) {
    std::fclose(stdout);
    std::this_thread::sleep_for(mode == "close" ? std::chrono::hours(1) : std::chrono::milliseconds(200));
    std::exit(0);
  }
  if (mode == "garbage" && both(c)) {
    std::fputs("debug: quantizing both directions\n", stdout);
    std::fflush(stdout);
  }
  if (mode == "wrong-id" && both(c)) ++id;
  cases::TensorMap out;
  try {
    out = cases::ReferenceBackend().run(c);
  } catch (const Error& e) {
    return external::wire::error_result(id, e.what(), e.code());
  }
  if (mode == "ulp1" && c.op == "gemm") move_last_by_one_ulp(out.at("d"));
  if (both(c)) {
    if (mode == "mismatch") out.at("scale").bytes.at(0) ^= 1;
    if (mode == "missing") out.erase("amax");
    if (mode == "extra") out["bonus"] = io::make_tensor(io::DType::U8, {1}, std::vector<std::uint8_t>{7});
    if (mode == "dtype") out.at("data").dtype = io::DType::I8;
  }
  return external::wire::ok_result(id, std::move(out));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "conform";
  const cases::Declaration declaration = cases::Declaration::parse(implements(mode), "fake worker");
  try {
    while (std::optional<external::wire::Message> m = external::wire::read_message(0)) {
      const std::string type = m->body.value("type", "");
      if (type == "bye") return 0;
      if (type == "hello") {
        external::wire::write_message(1, {{{"type", "hello"},
                                           {"protocol", protocol(mode)},
                                           {"worker", "fake worker " + mode},
                                           {"implements", implements(mode)}},
                                          {}});
        continue;
      }
      const std::uint64_t id = m->body.at("id").get<std::uint64_t>();
      if (mode == "trivial") {
        external::wire::write_message(
            1, external::wire::ok_result(id, {{"out", io::make_tensor(io::DType::U8, {1}, std::vector<std::uint8_t>{0})}}));
        continue;
      }
      external::wire::write_message(1, answer(mode, id, external::wire::case_of_request(*m), declaration));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake worker: %s\n", e.what());
    return 1;
  }
  return 0;
}
