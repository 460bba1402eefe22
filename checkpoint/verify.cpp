#include "checkpoint/verify.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "cases/reference_backend.h"
#include "checkpoint/weight_quantizer.h"
#include "reference/profiles.h"

namespace nvfp4::checkpoint {
namespace {

struct Stored {
  io::Tensor data, scale, global;
};

std::size_t count_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  if (a.size() != b.size()) return std::max(a.size(), b.size());
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

bool one_byte(io::DType d) { return io::dtype_size(d) == 1; }

class Checker {
 public:
  Checker(const HfCheckpoint& src, const HfCheckpoint& q, const CheckpointFormat& f) : src_(src), q_(q), f_(f) {
    const std::string bmm_suffix = kBmmScaleSuffix;
    for (const auto& [t, file] : q.weight_map())
      if (t.ends_with(f.scale_suffix)) {
        modules_.push_back(t.substr(0, t.size() - f.scale_suffix.size()));
      } else if (f.bmm_layout && t.ends_with(bmm_suffix)) {  // a BMM expert parameter <p>: <p>_weight_scale
        modules_.push_back(t.substr(0, t.size() - bmm_suffix.size()));
        bmm_.insert(modules_.back());
      }
    if (modules_.empty())
      throw io::FormatError(fmt::format("{}: no tensor named *{}: no quantized module to check (format {})", q.dir().string(),
                                        f.scale_suffix, f.name));
    for (const std::string& m : modules_) groups_[group_key(m)].push_back(m);
  }

  const std::vector<std::string>& modules() const { return modules_; }

  TensorVerdict check(const std::string& m, const std::string& profile, bool classify) {
    const Stored s = stored(m);
    if (stacked(m) && groups_.at(group_key(m)).size() > 1)
      throw io::FormatError(
          fmt::format("{}: {} is 3-D expert weights in a shared-amax group; format {} shares an amax for 2-D weights only",
                      q_.dir().string(), m, f_.name));
    const QuantizedWeight e = expect(profile, m, amax_for(profile, m));
    TensorVerdict v = compare(m, s, e, true);
    if (!v.match() && classify) v.fault = fault(m, s, e, v, profile);
    return v;
  }

 private:
  // A BMM-style 3-D expert parameter <p> ([E, in, out], stored as <p>, <p>_weight_scale,
  // <p>_weight_scale_2; docs/guides/checkpoints.md section 2.7), rather than a module <m> of <m>.weight.
  bool bmm(const std::string& m) const { return bmm_.count(m) != 0; }
  std::string source_name(const std::string& m) const { return bmm(m) ? m : m + ".weight"; }
  std::string data_name(const std::string& m) const { return bmm(m) ? m : m + f_.data_suffix; }
  std::string scale_name(const std::string& m) const { return m + (bmm(m) ? kBmmScaleSuffix : f_.scale_suffix); }
  std::string global_name(const std::string& m) const { return m + (bmm(m) ? kBmmGlobalSuffix : f_.global_suffix); }
  // A BMM parameter has its own amax, over all its experts.
  std::string group_key(const std::string& m) const { return bmm(m) ? "bmm:" + m : amax_group(f_, m); }

  const io::TensorInfo& source_info(const std::string& m) const {
    const std::string name = source_name(m);
    if (!src_.has(name))
      throw io::FormatError(fmt::format("{}: no tensor {} (the source of {})", src_.dir().string(), name, scale_name(m)));
    return src_.info(name);
  }

  io::Tensor source(const std::string& m) {
    source_info(m);
    const std::string name = source_name(m);
    io::Tensor w = src_.read(name);
    if (bmm(m) && w.shape.size() != 3)
      throw io::FormatError(
          fmt::format("{}: {} is not 3-D [E, in, out] (the source of {})", src_.dir().string(), name, scale_name(m)));
    if (!bmm(m) && w.shape.size() != 2 && !(w.shape.size() == 3 && f_.stacked_experts))
      throw io::FormatError(
          fmt::format("{}: {} is not 2-D{}", src_.dir().string(), name, f_.stacked_experts ? " or 3-D [E, N, K]" : ""));
    return w;
  }

  // Stacked 3-D expert weights [E, N, K]: quantized expert by expert, each with its own amax.
  bool stacked(const std::string& m) const { return !bmm(m) && source_info(m).shape.size() == 3; }

  // The amax the module is quantized with: its group's, or (3-D) none, each expert having its own.
  float amax_for(const std::string& profile, const std::string& m) { return stacked(m) ? 0.0f : group_amax(profile, m); }

  Stored stored(const std::string& m) {
    Stored s{q_.read(data_name(m)), q_.read(scale_name(m)), q_.read(global_name(m))};
    const io::TensorInfo& w = source_info(m);
    const std::string where = q_.dir().string();
    if (bmm(m)) {
      // [E, in, out]; accepted besides ModelOpt's layout, to be reported as a mismatch: the data and
      // scales untransposed ([E, out, in/2], [E, out, in/16]) and one global scale per expert.
      if (w.shape.size() != 3)
        throw io::FormatError(fmt::format("{}: {} is not 3-D [E, in, out]", src_.dir().string(), source_name(m)));
      const std::int64_t E = w.shape.at(0), in = w.shape.at(1), out = w.shape.at(2);
      using Shape = std::vector<std::int64_t>;
      if (!one_byte(s.data.dtype) || (s.data.shape != Shape{E, in / 2, out} && s.data.shape != Shape{E, out, in / 2}))
        throw io::FormatError(fmt::format("{}: {} is not a byte tensor [{}, {}, {}] (docs/guides/checkpoints.md section 2.7)",
                                          where, data_name(m), E, in / 2, out));
      if (!one_byte(s.scale.dtype) || (s.scale.shape != Shape{E, in / 16, out} && s.scale.shape != Shape{E, out, in / 16}))
        throw io::FormatError(fmt::format("{}: {} is not a byte tensor [{}, {}, {}] (docs/guides/checkpoints.md section 2.7)",
                                          where, scale_name(m), E, in / 16, out));
      if (s.global.dtype != io::DType::F32 || (s.global.numel() != 1 && s.global.numel() != E))
        throw io::FormatError(fmt::format("{}: {} is not one F32 value", where, global_name(m)));
      return s;
    }
    if (w.shape.size() == 3 && f_.stacked_experts) {  // expert weights [E, N, K]
      const std::int64_t E = w.shape.at(0), n = w.shape.at(1), k = w.shape.at(2);
      if (!one_byte(s.data.dtype) || s.data.shape != std::vector<std::int64_t>{E, n, k / 2})
        throw io::FormatError(fmt::format("{}: {}{} is not a byte tensor [{}, {}, {}]", where, m, f_.data_suffix, E, n, k / 2));
      if (!one_byte(s.scale.dtype) || s.scale.shape.size() != 3 || s.scale.shape.at(0) != E)
        throw io::FormatError(fmt::format("{}: {}{} is not a 3-D byte tensor [{}, ...]", where, m, f_.scale_suffix, E));
      if (s.global.dtype != io::DType::F32 || s.global.numel() != E)
        throw io::FormatError(fmt::format("{}: {}{} is not {} F32 values (one per expert)", where, m, f_.global_suffix, E));
      return s;
    }
    if (w.shape.size() != 2) throw io::FormatError(fmt::format("{}: {}.weight is not 2-D", src_.dir().string(), m));
    if (!one_byte(s.data.dtype) || s.data.shape != std::vector<std::int64_t>{w.shape.at(0), w.shape.at(1) / 2})
      throw io::FormatError(
          fmt::format("{}: {}{} is not a byte tensor [{}, {}]", where, m, f_.data_suffix, w.shape.at(0), w.shape.at(1) / 2));
    if (!one_byte(s.scale.dtype) || s.scale.shape.size() != 2)
      throw io::FormatError(fmt::format("{}: {}{} is not a 2-D byte tensor", where, m, f_.scale_suffix));
    if (s.global.dtype != io::DType::F32 || s.global.numel() != 1)
      throw io::FormatError(fmt::format("{}: {}{} is not one F32 value", where, m, f_.global_suffix));
    return s;
  }

  float own_amax(const std::string& profile, const std::string& m) {
    const auto key = std::make_pair(profile, m);
    if (!amax_.count(key)) amax_[key] = weight_amax(ref_, source_name(m), source(m), profile);
    return amax_.at(key);
  }

  float group_amax(const std::string& profile, const std::string& m) {
    const std::vector<std::string>& members = groups_.at(group_key(m));
    float g = own_amax(profile, members.front());
    for (std::size_t i = 1; i < members.size(); ++i) g = combine_amax(profile, g, own_amax(profile, members[i]));
    return g;
  }

  QuantizedWeight expect(const std::string& profile, const std::string& m, float amax) {
    if (bmm(m)) return quantize_bmm_experts(ref_, source_name(m), source(m), profile, amax);
    return quantize_for_format(ref_, f_, m + ".weight", source(m), profile, amax);
  }

  // With `global`: a profile that exports no global scale leaves it uncompared.
  TensorVerdict compare(const std::string& m, const Stored& s, const QuantizedWeight& e, bool global) {
    TensorVerdict v;
    v.module = m;
    v.global_name = f_.global_suffix.substr(1);  // without the leading '.'
    // Stored in another shape (a BMM parameter untransposed), every byte is in another place.
    v.data_total = e.data.bytes.size();
    v.data_diff = s.data.shape == e.data.shape ? count_diff(s.data.bytes, e.data.bytes) : v.data_total;
    v.scale_total = e.scale.bytes.size();
    v.scale_diff = s.scale.shape == e.scale.shape ? count_diff(s.scale.bytes, e.scale.bytes) : v.scale_total;
    if (global) v.global_differs = !e.global_scale || s.global.bytes != e.global_scale->bytes;
    return v;
  }

  std::string fault(const std::string& m, const Stored& s, const QuantizedWeight& e, const TensorVerdict& v,
                    const std::string& profile) {
    const bool data_ok = v.data_diff == 0, scale_ok = v.scale_diff == 0, global_ok = !v.global_differs;
    if (data_ok && scale_ok && e.global_scale && s.global.bytes.size() == e.global_scale->bytes.size()) {
      bool reciprocal = true;  // every value (one per expert for 3-D weights)
      for (std::size_t i = 0; i < s.global.bytes.size(); i += 4) {
        float g, stored;
        std::memcpy(&g, e.global_scale->bytes.data() + i, 4);
        std::memcpy(&stored, s.global.bytes.data() + i, 4);
        reciprocal = reciprocal && std::bit_cast<std::uint32_t>(stored) == std::bit_cast<std::uint32_t>(1.0f / g);
      }
      if (reciprocal) return "global scale stored as its reciprocal";
    }
    if (data_ok && global_ok && bmm(m)) {
      if (const auto swapped = experts_with_neighbours_scales(s, e)) return *swapped;
    } else if (data_ok && global_ok) {
      const QuantizedWeight other =
          stacked(m) ? quantize_experts(ref_, m + ".weight", source(m), profile, !f_.swizzled_scales)
                     : quantize_weight(ref_, m + ".weight", source(m), profile, group_amax(profile, m), !f_.swizzled_scales);
      if (s.scale.bytes == other.scale.bytes)
        return f_.swizzled_scales ? "scales linear where the format stores them swizzled"
                                  : "scales swizzled where the format stores them linear";
      if (stacked(m)) {
        if (const auto swapped = experts_with_neighbours_scales(s, e)) return *swapped;
      } else if (const auto e2 = neighbour_with_scales(m, s, profile)) {
        return "scales of expert " + *e2;
      }
    }
    if (bmm(m))
      if (const auto layout = bmm_layout_fault(m, s, e, profile)) return *layout;
    const std::vector<std::string>& members = groups_.at(group_key(m));
    const float own = own_amax(profile, m);
    if (members.size() > 1 && std::bit_cast<std::uint32_t>(own) != std::bit_cast<std::uint32_t>(group_amax(profile, m)) &&
        compare(m, s, expect(profile, m, own), true).match()) {
      std::string peers;
      for (const std::string& p : members)
        if (p != m) peers += (peers.empty() ? "" : ", ") + p;
      return "separate amax (not shared with " + peers + ")";
    }
    for (const NamedProfile& p : all_profiles()) {
      const std::string name(p.name);
      if (name == profile) continue;
      const bool exports = p.knobs.exported != ExportedGlobal::NONE || f_.stored_global != StoredGlobal::PROFILE;
      if (compare(m, s, expect(name, m, amax_for(name, m)), exports).match()) return "another profile: " + name;
    }
    return "";
  }

  // A BMM expert parameter stored in another converter's layout: the data and/or the scales
  // untransposed ([E, out, in/2], [E, out, in/16]: the orientation ModelOpt quantizes in, not
  // transposed back), and/or one global scale per expert (each expert quantized with its own amax)
  // instead of one for the whole tensor. `e` is the reference in ModelOpt's layout.
  std::optional<std::string> bmm_layout_fault(const std::string& m, const Stored& s, const QuantizedWeight& e,
                                              const std::string& profile) {
    const auto same = [](const io::Tensor& a, const io::Tensor& b) { return a.shape == b.shape && a.bytes == b.bytes; };
    // "" when q (in ModelOpt's layout) reproduces s with its data and scales as they are or
    // untransposed, naming those untransposed; nullopt when it does not.
    const auto layout = [&](const QuantizedWeight& q) -> std::optional<std::string> {
      if (!q.global_scale || s.global.bytes != q.global_scale->bytes) return std::nullopt;
      const bool data = same(s.data, q.data), scale = same(s.scale, q.scale);
      const bool data_t = !data && same(s.data, transpose_last2(q.data));
      const bool scale_t = !scale && same(s.scale, transpose_last2(q.scale));
      if (!(data || data_t) || !(scale || scale_t)) return std::nullopt;
      std::vector<std::string> parts;
      if (data_t) parts.push_back("data untransposed [E, out, in/2] (ModelOpt's layout: [E, in/2, out])");
      if (scale_t) parts.push_back("scales untransposed [E, out, in/16] (ModelOpt's layout: [E, in/16, out])");
      return fmt::format("{}", fmt::join(parts, ", "));
    };
    if (const auto d = layout(e); d && !d->empty()) return *d;
    // quantize_experts of [E, out, in], each expert with its own amax, transposed back.
    QuantizedWeight per_expert = quantize_experts(ref_, source_name(m), transpose_last2(source(m)), profile, false);
    per_expert.data = transpose_last2(per_expert.data);
    per_expert.scale = transpose_last2(per_expert.scale);
    if (const auto d = layout(per_expert))
      return "one weight_scale_2 per expert (each expert quantized with its own amax), where ModelOpt stores one for "
             "the whole 3-D tensor" +
             (d->empty() ? "" : "; " + *d);
    return std::nullopt;
  }

  // The expert e' (e - 1 or e + 1) whose reference scales `m` (expert e) holds.
  std::optional<std::string> neighbour_with_scales(const std::string& m, const Stored& s, const std::string& profile) {
    static const std::regex expert(R"((.*\.experts\.)(\d+)(\..*))");
    std::smatch g;
    if (!std::regex_match(m, g, expert)) return std::nullopt;
    const long e = std::stol(g[2].str());
    for (long other : {e - 1, e + 1}) {
      if (other < 0) continue;
      const std::string n = g[1].str() + std::to_string(other) + g[3].str();
      if (!q_.has(n + f_.scale_suffix) || !src_.has(n + ".weight")) continue;
      if (expect(profile, n, group_amax(profile, n)).scale.bytes == s.scale.bytes) return std::to_string(other);
    }
    return std::nullopt;
  }

  // 3-D expert weights: every expert whose scales differ holds expert e - 1's or e + 1's (inside
  // the stacked tensor); "expert <e>: scales of expert <e'>; ..." naming each, or nullopt.
  static std::optional<std::string> experts_with_neighbours_scales(const Stored& s, const QuantizedWeight& e) {
    const std::int64_t E = s.scale.shape.at(0);
    if (e.scale.bytes.size() != s.scale.bytes.size() || E < 2) return std::nullopt;
    const std::size_t n = s.scale.bytes.size() / std::size_t(E);
    auto slice = [n](const io::Tensor& t, std::int64_t i) {
      return std::vector<std::uint8_t>(t.bytes.begin() + std::ptrdiff_t(i * n), t.bytes.begin() + std::ptrdiff_t((i + 1) * n));
    };
    std::string out;
    for (std::int64_t i = 0; i < E; ++i) {
      const auto mine = slice(s.scale, i);
      if (mine == slice(e.scale, i)) continue;
      std::optional<std::int64_t> from;
      for (std::int64_t other : {i - 1, i + 1})
        if (other >= 0 && other < E && mine == slice(e.scale, other)) {
          from = other;
          break;
        }
      if (!from) return std::nullopt;
      out += fmt::format("{}expert {}: scales of expert {}", out.empty() ? "" : "; ", i, *from);
    }
    return out.empty() ? std::nullopt : std::optional<std::string>(out);
  }

  const HfCheckpoint &src_, &q_;
  const CheckpointFormat& f_;
  cases::ReferenceBackend ref_;
  std::vector<std::string> modules_;
  std::set<std::string> bmm_;  // the modules that are BMM expert parameters
  std::map<std::string, std::vector<std::string>> groups_;
  std::map<std::pair<std::string, std::string>, float> amax_;
};

}  // namespace

std::string TensorVerdict::counts() const {
  return fmt::format("data: {} of {} bytes differ; weight_scale: {} of {} bytes differ; {} {}", data_diff, data_total, scale_diff,
                     scale_total, global_name, global_differs ? "differs" : "matches");
}

std::string TensorVerdict::line() const {
  if (match()) return module + ": match";
  const std::string s = fmt::format("{}: MISMATCH ({})", module, counts());
  return fault.empty() ? s : s + ": " + fault;
}

std::size_t CheckpointCheck::mismatches() const {
  return std::size_t(std::count_if(tensors.begin(), tensors.end(), [](const TensorVerdict& v) { return !v.match(); }));
}

CheckpointCheck check_checkpoint(const HfCheckpoint& source, const HfCheckpoint& quantized, const CheckpointFormat& f,
                                 const std::string& profile, bool classify) {
  if (!find_profile(profile))
    throw Error("check-checkpoint", ErrorCode::E_UNSUPPORTED,
                fmt::format("unknown profile {} (profiles: {})", profile, profile_names(", ")));
  Checker c(source, quantized, f);
  CheckpointCheck out;
  out.profile = profile;
  for (const std::string& m : c.modules()) out.tensors.push_back(c.check(m, profile, classify));
  return out;
}

namespace {

// Formats A and C declare themselves alike (quant_method "modelopt", hf_quant_config.json of the
// same shape, producer "modelopt" in both upstream tools), so the tensors decide: format C writes
// an `input_scale` of exactly 1.0 for every quantized module and quantizes MoE expert linears only;
// format A writes calibrated input scales (ModelOpt) or none (nvfp4-verify).
std::string modelopt_or_miles(const HfCheckpoint& q) {
  const CheckpointFormat& c = *find_format("miles");
  std::size_t modules = 0, placeholders = 0;
  bool experts_only = true;
  for (const auto& [t, file] : q.weight_map()) {
    if (!t.ends_with(c.scale_suffix)) continue;
    const std::string m = t.substr(0, t.size() - c.scale_suffix.size());
    ++modules;
    experts_only = experts_only && is_selected(c, m + ".weight", {});
    const std::string in = m + c.placeholder_input_suffix;
    if (!q.has(in)) continue;
    const io::Tensor v = q.read(in);
    bool ones = v.dtype == io::DType::F32 && v.numel() >= 1 && v.bytes.size() == std::size_t(v.numel()) * 4;
    for (std::size_t i = 0; ones && i < v.bytes.size(); i += 4) {  // one value, or one per expert (3-D)
      std::uint32_t b;
      std::memcpy(&b, v.bytes.data() + i, 4);
      ones = b == std::bit_cast<std::uint32_t>(1.0f);
    }
    placeholders += ones;
  }
  if (modules == 0 || placeholders == 0 || !experts_only) return "modelopt";
  if (placeholders == modules) return "miles";
  throw io::FormatError(
      fmt::format("{}: cannot tell format modelopt (A) from miles (C): {} of {} quantized modules have input_scale 1.0 (format C "
                  "writes it for all, format A for none): give --format",
                  q.dir().string(), placeholders, modules));
}

}  // namespace

std::string detect_format(const HfCheckpoint& quantized) {
  const nlohmann::json& c = quantized.config();
  std::string method;
  if (c.is_object() && c.contains("quantization_config") && c["quantization_config"].is_object() &&
      c["quantization_config"].value("quant_method", nlohmann::json()).is_string())
    method = c["quantization_config"]["quant_method"].get<std::string>();
  if (method == "modelopt_fp4") return "miles";  // miles' first version (docs/guides/checkpoints.md section 4.5)
  if (method == "compressed-tensors") return "compressed-tensors";
  if (method == "modelopt" || std::filesystem::exists(quantized.dir() / "hf_quant_config.json"))
    return modelopt_or_miles(quantized);
  if (method.empty())
    throw io::FormatError(fmt::format("{}: no hf_quant_config.json and no quantization_config.quant_method: give --format",
                                      quantized.dir().string()));
  throw io::FormatError(fmt::format("{}: quant_method {} is not a supported format (supported: {})", quantized.dir().string(),
                                    method, supported_formats()));
}

}  // namespace nvfp4::checkpoint
