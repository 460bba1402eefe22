#include "checkpoint/hf_checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>

namespace nvfp4::checkpoint {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  if (!f) throw io::FormatError(fmt::format("{}: cannot open file", p.string()));
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw io::FormatError(fmt::format("{}: not JSON: {}", p.string(), e.what()));
  }
}

HfCheckpoint::HfCheckpoint(const fs::path& dir) : dir_(dir) {
  if (!fs::is_directory(dir)) throw io::FormatError(fmt::format("{}: not a directory", dir.string()));
  const fs::path index = dir / kIndexFile;
  if (fs::exists(index)) {
    sharded_ = true;
    const nlohmann::json j = read_json(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw io::FormatError(fmt::format("{}: no weight_map object", index.string()));
    std::set<std::string> seen;
    for (const auto& [tensor, file] : j["weight_map"].items()) {
      if (!file.is_string())
        throw io::FormatError(fmt::format("{}: weight_map[\"{}\"] is not a file name", index.string(), tensor));
      const std::string f = file.get<std::string>();
      if (f.find('/') != std::string::npos || f == ".." || f.empty())
        throw io::FormatError(
            fmt::format("{}: weight_map[\"{}\"] names {}, not a file of the directory", index.string(), tensor, f));
      weight_map_[tensor] = f;
      if (seen.insert(f).second) shard_names_.push_back(f);
    }
    std::sort(shard_names_.begin(), shard_names_.end());
    for (const std::string& f : shard_names_) {
      if (!fs::exists(dir / f)) throw io::FormatError(fmt::format("{}: names shard {}, which does not exist", index.string(), f));
      files_.emplace(f, io::LazyFile(dir / f));
    }
    for (const auto& [tensor, f] : weight_map_)
      if (!files_.at(f).header().tensors.count(tensor))
        throw io::FormatError(fmt::format("{}: names tensor {} in {}, which does not hold it", index.string(), tensor, f));
  } else if (fs::exists(dir / kSingleFile)) {
    shard_names_.push_back(kSingleFile);
    files_.emplace(kSingleFile, io::LazyFile(dir / kSingleFile));
    for (const auto& [tensor, info] : files_.at(kSingleFile).header().tensors) weight_map_[tensor] = kSingleFile;
  } else {
    throw io::FormatError(fmt::format("{}: neither {} nor {}", dir.string(), kSingleFile, kIndexFile));
  }
  if (fs::exists(dir / "config.json")) config_ = read_json(dir / "config.json");
}

std::vector<std::string> HfCheckpoint::tensors_of(const std::string& file) const {
  std::vector<std::string> out;
  for (const auto& [tensor, info] : files_.at(file).header().tensors)
    if (weight_map_.count(tensor) && weight_map_.at(tensor) == file) out.push_back(tensor);
  return out;
}

const io::TensorInfo& HfCheckpoint::info(const std::string& tensor) const {
  const auto it = weight_map_.find(tensor);
  if (it == weight_map_.end()) throw io::FormatError(fmt::format("{}: no tensor {}", dir_.string(), tensor));
  return files_.at(it->second).header().tensors.at(tensor);
}

io::Tensor HfCheckpoint::read(const std::string& tensor) const {
  const auto it = weight_map_.find(tensor);
  if (it == weight_map_.end()) throw io::FormatError(fmt::format("{}: no tensor {}", dir_.string(), tensor));
  return files_.at(it->second).read(tensor);
}

std::vector<std::string> HfCheckpoint::other_files() const {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name == kIndexFile || files_.count(name)) continue;
    out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace nvfp4::checkpoint
