#include "checkpoint/tensor_case.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "cases/reference_backend.h"
#include "cases/registry.h"

namespace nvfp4::checkpoint {
namespace {

io::Tensor source_weight(const HfCheckpoint& src, const std::string& m) {
  const std::string name = m + ".weight";
  if (!src.has(name)) throw io::FormatError(fmt::format("{}: no tensor {}", src.dir().string(), name));
  io::Tensor w = src.read(name);
  if (w.shape.size() != 2) throw io::FormatError(fmt::format("{}: {} is not 2-D", src.dir().string(), name));
  return w;
}

// The stored bytes in the expected tensor's dtype (a reinterpretation: both are 1-byte or F32).
io::Tensor as_expected(const io::Tensor& expected, const io::Tensor& stored) {
  return io::Tensor{expected.dtype, stored.shape, stored.bytes};
}

}  // namespace

TensorCase tensor_case(const HfCheckpoint& source, const HfCheckpoint& quantized, const CheckpointFormat& f,
                       const std::string& profile, const std::string& module) {
  cases::ReferenceBackend ref;
  // The group's amax over the quantized modules of `quantized` sharing the module's key, as
  // check_checkpoint computes it.
  const std::string key = amax_group(f, module);
  bool first = true;
  float amax = 0;
  for (const auto& [t, file] : quantized.weight_map()) {
    if (!t.ends_with(f.scale_suffix)) continue;
    const std::string m = t.substr(0, t.size() - f.scale_suffix.size());
    if (amax_group(f, m) != key) continue;
    const float a = weight_amax(ref, m + ".weight", source_weight(source, m), profile);
    amax = first ? a : combine_amax(profile, amax, a);
    first = false;
  }

  TensorCase out;
  out.c = cases::make_case("quantize");
  out.c.params.set("profile", profile);
  out.c.params.set("direction", std::string("rowwise"));
  out.c.params.set("amax", cases::F32Bits{std::bit_cast<std::uint32_t>(amax)});
  out.c.params.set("scale_layout", std::string(f.swizzled_scales ? "swizzled" : "compact"));
  out.c.inputs["x"] = source_weight(source, module);
  try {
    out.expected = ref.run(out.c);
  } catch (const Error& e) {
    throw Error(module + ".weight", e.code(), e.what());
  }

  out.actual = out.expected;
  const io::Tensor& w = out.c.inputs.at("x");
  const io::Tensor data = quantized.read(module + f.data_suffix), scale = quantized.read(module + f.scale_suffix);
  out.actual["data"] = as_expected(out.expected.at("data"), data);
  const io::Tensor& es = out.expected.at("scale");
  const std::int64_t rows = w.shape.at(0), cols = w.shape.at(1) / 16;
  if (scale.shape != es.shape && !f.swizzled_scales && scale.shape == std::vector<std::int64_t>{rows, cols} &&
      es.shape.size() == 2 && es.shape[0] >= rows && es.shape[1] >= cols && scale.bytes.size() == std::size_t(rows * cols)) {
    io::Tensor padded = es;
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(padded.bytes.data() + r * es.shape[1], scale.bytes.data() + r * cols, std::size_t(cols));
    out.actual["scale"] = std::move(padded);
  } else {
    out.actual["scale"] = as_expected(es, scale);
  }
  if (out.expected.count("global_scale") && quantized.has(module + f.global_suffix)) {
    const io::Tensor g = quantized.read(module + f.global_suffix);
    out.actual["global_scale"] =
        g.bytes.size() == out.expected.at("global_scale").bytes.size()
            ? io::Tensor{out.expected.at("global_scale").dtype, out.expected.at("global_scale").shape, g.bytes}
            : g;
  }
  return out;
}

}  // namespace nvfp4::checkpoint
