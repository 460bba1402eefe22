// A Hugging Face model directory: `model.safetensors`, or shards listed by
// `model.safetensors.index.json` (weight_map), plus config.json and other files. Only headers are
// read on opening; tensors are read one at a time (checkpoints larger than memory).
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace nvfp4::checkpoint {

inline constexpr const char* kIndexFile = "model.safetensors.index.json";
inline constexpr const char* kSingleFile = "model.safetensors";

class HfCheckpoint {
 public:
  // Throws io::FormatError naming the file: no model.safetensors nor index, an index naming a
  // missing shard or a tensor its shard lacks, a truncated or corrupt shard, bad JSON.
  explicit HfCheckpoint(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  bool sharded() const { return sharded_; }
  const std::vector<std::string>& shards() const { return shard_names_; }  // file names, in order
  const io::LazyFile& shard(const std::string& file) const { return files_.at(file); }
  // Tensor names of one shard, in its header's order (sorted).
  std::vector<std::string> tensors_of(const std::string& file) const;
  // Every tensor name -> its shard's file name.
  const std::map<std::string, std::string>& weight_map() const { return weight_map_; }
  bool has(const std::string& tensor) const { return weight_map_.count(tensor) != 0; }
  const io::TensorInfo& info(const std::string& tensor) const;  // FormatError naming an unknown tensor
  io::Tensor read(const std::string& tensor) const;             // likewise
  // config.json, or null when absent.
  const nlohmann::json& config() const { return config_; }
  // Files of the directory that are neither shards nor the index (tokenizer, config.json, ...).
  std::vector<std::string> other_files() const;

 private:
  std::filesystem::path dir_;
  bool sharded_ = false;
  std::vector<std::string> shard_names_;
  std::map<std::string, io::LazyFile> files_;
  std::map<std::string, std::string> weight_map_;
  nlohmann::json config_;
};

// Reads a JSON file; FormatError naming it when unreadable or not JSON.
nlohmann::json read_json(const std::filesystem::path& p);

}  // namespace nvfp4::checkpoint
