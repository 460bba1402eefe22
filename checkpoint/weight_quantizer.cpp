#include "checkpoint/weight_quantizer.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "cases/registry.h"
#include "reference/formulas.h"
#include "reference/profiles.h"

namespace nvfp4::checkpoint {
namespace {

// The registry's rowwise quantize of a weight under `profile` (its errors labelled with the
// tensor's name); `tune` sets the case's other parameters.
template <class Tune>
cases::TensorMap quantize_rowwise(cases::Backend& b, const std::string& name, const io::Tensor& w, const std::string& profile,
                                  bool swizzled, Tune tune) {
  cases::Case c = cases::make_case("quantize");
  c.params.set("profile", profile);
  c.params.set("direction", std::string("rowwise"));
  c.params.set("scale_layout", std::string(swizzled ? "swizzled" : "compact"));
  tune(c);
  c.inputs["x"] = w;
  try {
    return b.run(c);
  } catch (const Error& e) {
    throw Error(name, e.code(), e.what());
  }
}

}  // namespace

float weight_amax(cases::Backend& b, const std::string& name, const io::Tensor& w, const std::string& profile) {
  cases::Case c = cases::make_case("amax_global");
  c.params.set("profile", profile);
  c.inputs["x"] = w;
  if (w.shape.size() == 3)  // [E, N, K] as [E·N, K]: the same elements
    c.inputs["x"].shape = {w.shape[0] * w.shape[1], w.shape[2]};
  io::Tensor a;
  try {
    a = b.run(c).at("amax");
  } catch (const Error& e) {
    throw Error(name, e.code(), e.what());
  }
  float v;
  std::memcpy(&v, a.bytes.data(), 4);
  return v;
}

float combine_amax(const std::string& profile, float a, float b) {
  const NamedProfile* p = find_profile(profile);
  if (!p) throw Error("checkpoint", ErrorCode::E_UNSUPPORTED, fmt::format("unknown profile {}", profile));
  return amax_combine(p->knobs.amax, a, b);
}

QuantizedWeight quantize_weight(cases::Backend& b, const std::string& name, const io::Tensor& w, const std::string& profile,
                                float amax, bool swizzled) {
  cases::TensorMap out = quantize_rowwise(b, name, w, profile, swizzled, [&](cases::Case& c) {
    c.params.set("amax", cases::F32Bits{std::bit_cast<std::uint32_t>(amax)});
  });
  QuantizedWeight q;
  q.data = std::move(out.at("data"));
  io::Tensor& scale = out.at("scale");
  const std::int64_t rows = w.shape.at(0), cols = w.shape.at(1) / 16;
  if (swizzled) {
    q.scale = io::Tensor{io::DType::F8_E4M3, scale.shape, std::move(scale.bytes)};
  } else {  // the compact layout's unpadded [N, K/16] entries
    q.scale = io::Tensor{io::DType::F8_E4M3, {rows, cols}, std::vector<std::uint8_t>(std::size_t(rows * cols))};
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(q.scale.bytes.data() + r * cols, scale.bytes.data() + r * scale.shape.at(1), std::size_t(cols));
  }
  if (out.count("global_scale")) q.global_scale = io::Tensor{io::DType::F32, {}, out.at("global_scale").bytes};
  return q;
}

QuantizedWeight quantize_experts(cases::Backend& b, const std::string& name, const io::Tensor& w, const std::string& profile,
                                 bool swizzled) {
  if (w.shape.size() != 3) throw Error(name, ErrorCode::E_RANK, "expert weights are [E, N, K]");
  cases::TensorMap out = quantize_rowwise(b, name, w, profile, swizzled, [](cases::Case& c) { c.params.set("experts", true); });
  const std::int64_t E = w.shape.at(0), rows = w.shape.at(1), cols = w.shape.at(2) / 16;
  QuantizedWeight q;
  q.data = std::move(out.at("data"));
  io::Tensor& scale = out.at("scale");  // [E, roundup(N, 128), roundup(K/16, 4)]
  if (swizzled) {
    q.scale = io::Tensor{io::DType::F8_E4M3, scale.shape, std::move(scale.bytes)};
  } else {  // each expert's compact scales, unpadded: [E, N, K/16]
    const std::int64_t prow = scale.shape.at(1), pcol = scale.shape.at(2);
    q.scale = io::Tensor{io::DType::F8_E4M3, {E, rows, cols}, std::vector<std::uint8_t>(std::size_t(E * rows * cols))};
    for (std::int64_t e = 0; e < E; ++e)
      for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(q.scale.bytes.data() + (e * rows + r) * cols, scale.bytes.data() + (e * prow + r) * pcol, std::size_t(cols));
  }
  const io::Tensor& amax = out.at("amax");  // [E, 1]
  q.expert_amax.resize(std::size_t(E));
  std::memcpy(q.expert_amax.data(), amax.bytes.data(), std::size_t(E) * 4);
  if (out.count("global_scale")) q.global_scale = io::Tensor{io::DType::F32, {E}, out.at("global_scale").bytes};
  return q;
}

io::Tensor transpose_last2(const io::Tensor& t) {
  if (t.shape.size() != 3) throw Error("transpose_last2", ErrorCode::E_RANK, "expects a 3-D tensor");
  const std::int64_t A = t.shape[0], B = t.shape[1], C = t.shape[2];
  const std::size_t es = io::dtype_size(t.dtype);
  io::Tensor out{t.dtype, {A, C, B}, std::vector<std::uint8_t>(t.bytes.size())};
  for (std::int64_t a = 0; a < A; ++a)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t c = 0; c < C; ++c)
        std::memcpy(out.bytes.data() + std::size_t((a * C + c) * B + b) * es,
                    t.bytes.data() + std::size_t((a * B + b) * C + c) * es, es);
  return out;
}

QuantizedWeight quantize_bmm_experts(cases::Backend& b, const std::string& name, const io::Tensor& w, const std::string& profile,
                                     float amax) {
  if (w.shape.size() != 3) throw Error(name, ErrorCode::E_RANK, "BMM expert weights are [E, in, out]");
  const std::int64_t E = w.shape[0], in = w.shape[1], out = w.shape[2];
  io::Tensor rows = transpose_last2(w);  // [E, out, in], quantized as [E·out, in]
  rows.shape = {E * out, in};
  QuantizedWeight q = quantize_weight(b, name, rows, profile, amax, false);
  q.data.shape = {E, out, in / 2};
  q.scale.shape = {E, out, in / 16};
  q.data = transpose_last2(q.data);    // [E, in/2, out]
  q.scale = transpose_last2(q.scale);  // [E, in/16, out]
  return q;
}

}  // namespace nvfp4::checkpoint
