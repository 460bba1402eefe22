// campaign.json: the statistics of one shard of a campaign, which `fuzz --out DIR` writes last (a
// directory without it holds a shard that did not finish), and all that `merge` reads of a shard.
// Merging checks that the shards are those of one campaign, each given once and none missing, and
// adds them up: the rounds of shard K of N are K, K + N, ... (fuzz/campaign.h), so the merged
// shards of a campaign bounded by --cases are the one-process campaign when each shard found
// fewer failures than the failure limit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz/campaign.h"

namespace nvfp4::fuzz {

inline constexpr int kCampaignRecordVersion = 2;  // 2: failures name their causes
inline constexpr const char* kCampaignRecordFile = "campaign.json";

// What makes shards parts of one campaign: equal in every shard's record.
struct CampaignIdentity {
  std::uint64_t seed = 0;
  int shards = 1;
  std::optional<std::size_t> cases;  // --cases
  std::optional<double> seconds;     // --time
  int cases_per_round = 25;
  std::size_t max_failures = 8;
  std::vector<std::string> ops, profiles;  // as the campaign drew them; empty: all
  std::size_t max_dim = 256;
  std::string backends;  // "reference vs worker"
  std::string compare;   // "bitwise", "ulp" or "ulp max-ulp=N"

  bool operator==(const CampaignIdentity&) const = default;
};

struct FailureRecord {
  std::string operation, profile, verdict, problem;
  std::string explanation;             // the explanation's verdict: the named cause, or that none reproduces it
  std::vector<std::string> causes;     // the fault catalogue's names (or profiles, knob variants) that reproduce it, best first
  std::size_t tied = 0;                // how many leading causes the case cannot tell apart
  std::vector<std::int64_t> shape;     // the shrunk case's first input's shape
  std::uint64_t round = 0;             // the campaign's round that found it
  std::size_t cases_to_detection = 0;  // the shard's generated cases before it
  std::string case_file;               // the saved case, relative to the shard's directory ("" = not saved)
  std::string page;                    // its failure page, relative to the shard's directory ("" = none)
};

struct CampaignRecord {
  CampaignIdentity campaign;
  int shard = 0;
  std::size_t cases = 0;
  double seconds = 0;
  std::map<std::string, OperationStats> per_operation;
  std::vector<FailureRecord> failures;  // in round order
};

// The record of a finished campaign; the saved cases' paths made relative to `dir` (as given when
// `dir` is empty). The pages are the caller's to fill in.
CampaignRecord campaign_record(const CampaignOptions& o, const CampaignResult& r, const std::string& backends,
                               const std::filesystem::path& dir);

nlohmann::json record_to_json(const CampaignRecord& r);
// Throws io::FormatError "<where>: ..." for anything but a record of kCampaignRecordVersion, and
// for a saved case or page that is not a file of the shard's corpus/ or report/ folder.
CampaignRecord record_from_json(const nlohmann::json& j, const std::string& where);

// dir/campaign.json, written atomically (io/atomic_file.h). Throws OutputError.
void write_campaign_record(const std::filesystem::path& dir, const CampaignRecord& r);
// dir/campaign.json. Throws io::FormatError naming the file: missing, not a regular file, not JSON,
// not a record.
CampaignRecord read_campaign_record(const std::filesystem::path& dir);

struct ShardRecord {
  std::filesystem::path dir;
  CampaignRecord record;
};

struct MergedFailure {
  const ShardRecord* shard;
  FailureRecord failure;
};

struct MergedCampaign {
  CampaignIdentity campaign;
  std::vector<ShardRecord> shards;  // in shard order
  std::size_t cases = 0;
  double seconds_sum = 0, seconds_max = 0;  // over the shards
  std::map<std::string, OperationStats> per_operation;
  std::vector<MergedFailure> failures;  // in round order (points into `shards`)

  MergedCampaign() = default;
  MergedCampaign(const MergedCampaign&) = delete;  // `failures` points into `shards`
  MergedCampaign(MergedCampaign&&) = default;
};

// The shards' records read and added up. Throws io::FormatError for an unreadable record and
// UsageError for shards of another campaign, a shard given twice or a missing shard (naming them).
MergedCampaign merge_shards(const std::vector<std::filesystem::path>& dirs);

}  // namespace nvfp4::fuzz
