#include "checkpoint/convert.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>

#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/weight_quantizer.h"
#include "io/atomic_directory.h"
#include "io/atomic_file.h"
#include "reference/profiles.h"

namespace nvfp4::checkpoint {
namespace {

namespace fs = std::filesystem;

void write_json(const fs::path& p, const nlohmann::json& j) { io::write_file_atomic(p, j.dump(2) + "\n"); }

std::uint64_t byte_size(const io::TensorInfo& t) {
  std::uint64_t n = io::dtype_size(t.dtype);
  for (std::int64_t d : t.shape) n *= std::uint64_t(d);
  return n;
}

// The tensors a shard of the output declares, in the source shard's order.
std::vector<std::pair<std::string, io::TensorInfo>> declared(const HfCheckpoint& src, const std::string& file,
                                                             const std::map<std::string, std::string>& group_of,
                                                             const std::set<std::string>& bmm, const CheckpointFormat& f) {
  std::vector<std::pair<std::string, io::TensorInfo>> out;
  for (const std::string& t : src.tensors_of(file)) {
    const io::TensorInfo& in = src.info(t);
    if (!group_of.count(t)) {
      out.emplace_back(t, io::TensorInfo{in.dtype, in.shape, 0, 0});
      continue;
    }
    if (bmm.count(t)) {  // [E, in, out]: ModelOpt's layout (quantize_bmm_experts)
      const std::int64_t E = in.shape[0], k = in.shape[1], n = in.shape[2];
      out.emplace_back(t, io::TensorInfo{io::DType::U8, {E, k / 2, n}, 0, 0});
      out.emplace_back(t + kBmmScaleSuffix, io::TensorInfo{io::DType::F8_E4M3, {E, k / 16, n}, 0, 0});
      out.emplace_back(t + kBmmGlobalSuffix, io::TensorInfo{io::DType::F32, {}, 0, 0});
      continue;
    }
    const std::string m = module_of(t);
    // 2-D [N, K], or 3-D expert weights [E, N, K]: every stored tensor gains the leading E.
    std::vector<std::int64_t> lead(in.shape.begin(), in.shape.end() - 2);
    const std::int64_t n = in.shape.end()[-2], k = in.shape.back();
    auto shape = [&](std::vector<std::int64_t> tail) {
      std::vector<std::int64_t> s = lead;
      s.insert(s.end(), tail.begin(), tail.end());
      return s;
    };
    out.emplace_back(m + f.data_suffix, io::TensorInfo{io::DType::U8, shape({n, k / 2}), 0, 0});
    out.emplace_back(m + f.scale_suffix, io::TensorInfo{io::DType::F8_E4M3, shape({n, k / 16}), 0, 0});
    out.emplace_back(m + f.global_suffix, io::TensorInfo{io::DType::F32, global_shape(f, lead), 0, 0});
    if (!f.placeholder_input_suffix.empty())
      out.emplace_back(m + f.placeholder_input_suffix, io::TensorInfo{io::DType::F32, lead, 0, 0});
  }
  return out;
}

void write_output(const ConvertOptions& o, cases::Backend& backend, const HfCheckpoint& src,
                  const std::map<std::string, std::string>& group_of, const std::set<std::string>& bmm,
                  const std::map<std::string, float>& group_amax, const std::vector<std::string>& exclude_modules,
                  const fs::path& tmp, ConvertProgress& p, const std::function<void(const ConvertProgress&)>& progress,
                  ConvertSummary& s) {
  const CheckpointFormat& f = o.format;
  nlohmann::json weight_map = nlohmann::json::object();
  std::uint64_t total_size = 0;
  for (const std::string& file : src.shards()) {
    const auto decls = declared(src, file, group_of, bmm, f);
    for (const auto& [name, info] : decls) {
      weight_map[name] = file;
      total_size += byte_size(info);
    }
    io::FileWriter out(tmp / file, decls, {{"format", "pt"}});
    for (const std::string& t : src.tensors_of(file)) {
      io::Tensor w = src.read(t);
      p.bytes_done += w.bytes.size();
      if (!group_of.count(t)) {
        out.write(t, w);
        ++s.kept;
      } else if (bmm.count(t)) {
        const QuantizedWeight q = quantize_bmm_experts(backend, t, w, o.profile, group_amax.at(group_of.at(t)));
        out.write(t, q.data);
        out.write(t + kBmmScaleSuffix, q.scale);
        out.write(t + kBmmGlobalSuffix, *q.global_scale);
        ++s.quantized;
      } else {
        const std::string m = module_of(t);
        // Stacked 3-D expert weights: each expert its own amax, computed by the quantization itself.
        const float amax = w.shape.size() == 3 ? 0.0f : group_amax.at(group_of.at(t));
        QuantizedWeight q = quantize_for_format(backend, f, t, w, o.profile, amax);
        out.write(m + f.data_suffix, q.data);
        out.write(m + f.scale_suffix, q.scale);
        out.write(m + f.global_suffix, *q.global_scale);
        if (!f.placeholder_input_suffix.empty())  // no activation calibration: 1.0, as the format writes
          out.write(m + f.placeholder_input_suffix,
                    io::make_tensor_from<float>(io::DType::F32, q.global_scale->shape,
                                                std::vector<float>(std::size_t(q.global_scale->numel()), 1.0f)));
        ++s.quantized;
      }
      ++p.tensors_done;
      if (progress) progress(p);
    }
    out.commit();
    ++s.shards;
  }
  if (src.sharded()) write_json(tmp / kIndexFile, {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}});
  for (const std::string& name : src.other_files()) {
    if (name == "config.json")
      write_json(tmp / name, f.with_quantization_config(src.config(), exclude_modules));
    else if (name != "hf_quant_config.json")
      io::copy_file_atomic(src.dir() / name, tmp / name);  // tokenizer, generation config: as they are
  }
  if (f.hf_quant_config) write_json(tmp / "hf_quant_config.json", f.hf_quant_config(exclude_modules));
}

// Which tensors are quantized and in which shared-amax group, which are BMM-style experts, and the
// format's ignore list; refuses what the format cannot write.
struct ConvertPlan {
  std::map<std::string, std::string> group_of;  // quantized tensor -> its shared-amax group
  std::set<std::string> bmm;                    // those of them that are BMM-style 3-D experts
  std::vector<std::string> exclude_modules;     // the format's ignore list, without repeats
  ConvertProgress progress;                     // its totals: the bytes and tensors both passes read
};

ConvertPlan plan_conversion(const ConvertOptions& o, const HfCheckpoint& src) {
  ConvertPlan plan;
  auto& [group_of, bmm, exclude_modules, p] = plan;
  std::set<std::string> excluded;
  for (const auto& [t, file] : src.weight_map()) {
    const io::TensorInfo& info = src.info(t);
    p.bytes_total += byte_size(info);
    if (is_bmm_selected(o.format, t, info, o.excludes)) {
      if (!o.format.bmm_layout)
        throw io::FormatError(
            fmt::format("{}: {} is a 3-D expert tensor [E, in, out]; format {} stores experts as separate 2-D modules, and "
                        "convert-checkpoint does not split fused experts",
                        o.input.string(), t, o.format.name));
      if (!is_bmm_model(o.format, src.config()))
        throw io::FormatError(fmt::format(
            "{}: {} is a 3-D expert tensor of a model of type '{}'; format {} writes ModelOpt's transposed "
            "[E, in, out] layout only for the experts of model types {} (Llama-4, GPT-OSS; docs/guides/checkpoints.md "
            "section 2.7); ModelOpt splits other fused experts into 2-D modules, which convert-checkpoint does not do",
            o.input.string(), t, model_type_of(src.config()), o.format.name, fmt::join(o.format.bmm_model_types, ", ")));
      group_of[t] = "bmm:" + t;  // its own amax, over all experts
      bmm.insert(t);
      p.bytes_total += byte_size(info);  // read in both passes
      continue;
    }
    if (is_quantized(o.format, t, info, o.excludes)) {
      group_of[t] = amax_group(o.format, module_of(t));
      if (info.shape.size() == 2) p.bytes_total += byte_size(info);  // read in both passes
      continue;
    }
    if (!o.format.stacked_experts && info.shape.size() == 3 && is_selected(o.format, t, o.excludes))
      throw io::FormatError(fmt::format(
          "{}: {} is a 3-D expert tensor; format {} {}, so convert-checkpoint does not write it", o.input.string(), t,
          o.format.name,
          o.format.bmm_layout ? "stores 3-D experts only as the BMM parameters of Llama-4 / GPT-OSS (names without "
                                "\".weight\", docs/guides/checkpoints.md section 2.7); a 3-D \".weight\" has no documented layout"
                              : "stores experts as separate 2-D modules"));
    for (std::string& m : o.format.ignored(t, info))
      if (excluded.insert(m).second) exclude_modules.push_back(std::move(m));
  }
  p.tensors_total = src.weight_map().size();
  for (const auto& [t, g] : group_of)  // read in pass 1 too
    p.tensors_total += src.info(t).shape.size() == 2 || bmm.count(t);
  // A 3-D expert tensor has one amax per expert; miles rejects sharing an amax with a peer for it
  // ("global_amax override is only supported for 2D weights", docs/guides/checkpoints.md section 4.5).
  {
    std::map<std::string, std::vector<std::string>> members;
    for (const auto& [t, g] : group_of) members[g].push_back(t);
    for (const auto& [t, g] : group_of)
      if (src.info(t).shape.size() == 3 && !bmm.count(t) && members.at(g).size() > 1)
        throw io::FormatError(
            fmt::format("{}: {} is a 3-D expert tensor in a shared-amax group ({}); format {} shares an amax for 2-D weights "
                        "only",
                        o.input.string(), t, fmt::join(members.at(g), ", "), o.format.name));
  }
  return plan;
}

// Pass 1: every quantized weight's amax, combined per group under the profile's NaN rule (a BMM
// expert parameter's over all its experts).
std::map<std::string, float> group_amaxes(const ConvertOptions& o, cases::Backend& backend, const HfCheckpoint& src,
                                          const ConvertPlan& plan, ConvertProgress& p,
                                          const std::function<void(const ConvertProgress&)>& progress) {
  const std::map<std::string, std::string>& group_of = plan.group_of;
  const std::set<std::string>& bmm = plan.bmm;
  std::map<std::string, float> group_amax;
  for (const std::string& file : src.shards())
    for (const std::string& t : src.tensors_of(file)) {
      if (!group_of.count(t) || (src.info(t).shape.size() == 3 && !bmm.count(t)))
        continue;  // stacked 3-D: amax per expert, in pass 2
      const io::Tensor w = src.read(t);
      const float a = weight_amax(backend, t, w, o.profile);
      const auto [it, fresh] = group_amax.emplace(group_of.at(t), a);
      if (!fresh) it->second = combine_amax(o.profile, it->second, a);
      p.bytes_done += w.bytes.size();
      ++p.tensors_done;
      if (progress) progress(p);
    }
  return group_amax;
}

}  // namespace

ConvertSummary convert_checkpoint(const ConvertOptions& o, cases::Backend& backend,
                                  const std::function<void(const ConvertProgress&)>& progress) {
  // "OUT/" names OUT: its temporary sibling must not land inside it.
  fs::path output = o.output.lexically_normal();
  if (!output.has_filename()) output = output.parent_path();
  if (fs::exists(fs::symlink_status(output)))
    throw io::FormatError(fmt::format("{}: already exists; convert-checkpoint writes a new directory only", output.string()));
  const NamedProfile* profile = find_profile(o.profile);
  if (!profile)
    throw Error("convert-checkpoint", ErrorCode::E_UNSUPPORTED,
                fmt::format("unknown profile {} (profiles: {})", o.profile, profile_names(", ")));
  if (profile->knobs.exported == ExportedGlobal::NONE && o.format.stored_global == StoredGlobal::PROFILE)
    throw Error("convert-checkpoint", ErrorCode::E_UNSUPPORTED,
                fmt::format("profile {} exports no global scale; format {} stores one ({}*)", o.profile, o.format.name,
                            o.format.global_suffix));
  const HfCheckpoint src(o.input);

  ConvertPlan plan = plan_conversion(o, src);
  ConvertProgress& p = plan.progress;
  const std::map<std::string, float> group_amax = group_amaxes(o, backend, src, plan, p, progress);

  // Pass 2, into a temporary directory renamed onto the output at the end.
  io::AtomicDirectory out(output);
  ConvertSummary s;
  write_output(o, backend, src, plan.group_of, plan.bmm, group_amax, plan.exclude_modules, out.path(), p, progress, s);
  out.commit(io::AtomicDirectory::Existing::kRefuse);
  return s;
}

}  // namespace nvfp4::checkpoint
