#include "fuzz/campaign_record.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/atomic_file.h"
#include "io/safetensors.h"
#include "reference/exception.h"

namespace nvfp4::fuzz {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFormat = "nvfp4-verify campaign";
// A record is a few hundred bytes per operation and failure: anything near this is not one.
constexpr std::uintmax_t kMaxRecordBytes = 64u << 20;

std::string compare_name(const compare::CompareMode& m) {
  if (!m.ulp) return "bitwise";
  return m.max_ulp ? fmt::format("ulp max-ulp={}", *m.max_ulp) : "ulp";
}

json identity_json(const CampaignIdentity& c) {
  return {{"seed", c.seed},
          {"shards", c.shards},
          {"cases", c.cases ? json(*c.cases) : json(nullptr)},
          {"time_seconds", c.seconds ? json(*c.seconds) : json(nullptr)},
          {"cases_per_round", c.cases_per_round},
          {"max_failures", c.max_failures},
          {"ops", c.ops},
          {"profiles", c.profiles},
          {"max_dim", c.max_dim},
          {"backends", c.backends},
          {"compare", c.compare}};
}

CampaignIdentity identity_from_json(const json& j) {
  CampaignIdentity c;
  c.seed = j.at("seed").get<std::uint64_t>();
  c.shards = j.at("shards").get<int>();
  if (!j.at("cases").is_null()) c.cases = j.at("cases").get<std::size_t>();
  if (!j.at("time_seconds").is_null()) c.seconds = j.at("time_seconds").get<double>();
  c.cases_per_round = j.at("cases_per_round").get<int>();
  c.max_failures = j.at("max_failures").get<std::size_t>();
  c.ops = j.at("ops").get<std::vector<std::string>>();
  c.profiles = j.at("profiles").get<std::vector<std::string>>();
  c.max_dim = j.at("max_dim").get<std::size_t>();
  c.backends = j.at("backends").get<std::string>();
  c.compare = j.at("compare").get<std::string>();
  if (c.shards < 1 || c.cases_per_round < 1) throw std::invalid_argument("shards and cases_per_round must be at least 1");
  return c;
}

// A saved case or page: "" or "<folder>/<file name>", never a path out of the shard's folder.
std::string shard_file(const json& j, const char* key, const std::string& folder) {
  const std::string p = j.at(key).get<std::string>();
  const std::string name = p.starts_with(folder + "/") ? p.substr(folder.size() + 1) : "";
  if (!p.empty() && (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
                     name.find('\0') != std::string::npos))
    throw std::invalid_argument(fmt::format("{} '{}' is not a file of the shard's {}/ folder", key, p, folder));
  return p;
}

FailureRecord failure_from_json(const json& j) {
  FailureRecord f;
  f.operation = j.at("operation").get<std::string>();
  f.profile = j.at("profile").get<std::string>();
  f.verdict = j.at("verdict").get<std::string>();
  f.problem = j.at("problem").get<std::string>();
  f.explanation = j.at("explanation").get<std::string>();
  f.causes = j.at("causes").get<std::vector<std::string>>();
  f.tied = j.at("tied").get<std::size_t>();
  f.shape = j.at("shape").get<std::vector<std::int64_t>>();
  f.round = j.at("round").get<std::uint64_t>();
  f.cases_to_detection = j.at("cases_to_detection").get<std::size_t>();
  f.case_file = shard_file(j, "case_file", "corpus");
  f.page = shard_file(j, "page", "report");
  return f;
}

// "seed 8, not 7": the first option in which two campaigns differ.
std::string difference(const CampaignIdentity& a, const CampaignIdentity& b) {
  const json ja = identity_json(a), jb = identity_json(b);
  for (const auto& [key, value] : ja.items())
    if (value != jb.at(key)) return fmt::format("{} {}, not {}", key, value.dump(), jb.at(key).dump());
  return "";
}

}  // namespace

CampaignRecord campaign_record(const CampaignOptions& o, const CampaignResult& r, const std::string& backends,
                               const fs::path& dir) {
  CampaignRecord rec;
  CampaignIdentity& c = rec.campaign;
  c.seed = o.seed;
  c.shards = o.shards;
  c.cases = o.cases;
  c.seconds = o.seconds;
  c.cases_per_round = o.cases_per_round;
  c.max_failures = o.max_failures;
  c.ops = o.space.ops;
  c.profiles = o.space.profiles;
  c.max_dim = o.space.max_dim;
  c.backends = backends;
  c.compare = compare_name(o.compare);
  rec.shard = o.shard;
  rec.cases = r.cases;
  rec.seconds = r.seconds;
  rec.per_operation = r.per_operation;
  for (const CampaignFailure& f : r.failures) {
    FailureRecord& x = rec.failures.emplace_back();
    x.operation = f.shrunk.c.op;
    x.profile = cases::case_profile_name(f.shrunk.c);
    x.verdict = std::string(compare::verdict_name(f.comparison.verdict));
    x.problem = f.comparison.problem;
    x.explanation = f.explanation.verdict;
    for (const compare::Explanation::Cause& cause : f.explanation.causes) x.causes.push_back(cause.name);
    x.tied = f.explanation.tied;
    if (!f.shrunk.c.inputs.empty()) x.shape = f.shrunk.c.inputs.begin()->second.shape;
    x.round = f.round;
    x.cases_to_detection = f.cases_to_detection;
    if (!f.saved.empty()) x.case_file = (dir.empty() ? f.saved : f.saved.lexically_relative(dir)).generic_string();
  }
  return rec;
}

json record_to_json(const CampaignRecord& r) {
  json ops = json::object(), failures = json::array();
  for (const auto& [op, s] : r.per_operation) ops[op] = {{"cases", s.cases}, {"failures", s.failures}, {"seconds", s.seconds}};
  for (const FailureRecord& f : r.failures)
    failures.push_back({{"operation", f.operation},
                        {"profile", f.profile},
                        {"verdict", f.verdict},
                        {"problem", f.problem},
                        {"explanation", f.explanation},
                        {"causes", f.causes},
                        {"tied", f.tied},
                        {"shape", f.shape},
                        {"round", f.round},
                        {"cases_to_detection", f.cases_to_detection},
                        {"case_file", f.case_file},
                        {"page", f.page}});
  return {{"format", kFormat},
          {"version", kCampaignRecordVersion},
          {"campaign", identity_json(r.campaign)},
          {"shard", r.shard},
          {"cases", r.cases},
          {"seconds", r.seconds},
          {"per_operation", ops},
          {"failures", failures}};
}

CampaignRecord record_from_json(const json& j, const std::string& where) {
  try {
    if (!j.is_object() || j.value("format", "") != kFormat)
      throw io::FormatError(fmt::format("{}: not a campaign record (no \"format\": \"{}\")", where, kFormat));
    if (const int v = j.at("version").get<int>(); v != kCampaignRecordVersion)
      throw io::FormatError(fmt::format("{}: version {}; this nvfp4-verify reads version {}", where, v, kCampaignRecordVersion));
    CampaignRecord r;
    r.campaign = identity_from_json(j.at("campaign"));
    r.shard = j.at("shard").get<int>();
    if (r.shard < 0 || r.shard >= r.campaign.shards)
      throw io::FormatError(fmt::format("{}: shard {} is not one of 0..{}", where, r.shard, r.campaign.shards - 1));
    r.cases = j.at("cases").get<std::size_t>();
    r.seconds = j.at("seconds").get<double>();
    for (const auto& [op, s] : j.at("per_operation").items())
      r.per_operation[op] = {s.at("cases").get<std::size_t>(), s.at("failures").get<std::size_t>(),
                             s.at("seconds").get<double>()};
    for (const json& f : j.at("failures")) {
      r.failures.push_back(failure_from_json(f));
      if (r.failures.back().round % std::uint64_t(r.campaign.shards) != std::uint64_t(r.shard))
        throw io::FormatError(
            fmt::format("{}: round {} is not one of shard {}/{}", where, r.failures.back().round, r.shard, r.campaign.shards));
    }
    return r;
  } catch (const json::exception& e) {
    throw io::FormatError(fmt::format("{}: not a campaign record: {}", where, e.what()));
  } catch (const std::invalid_argument& e) {
    throw io::FormatError(fmt::format("{}: not a campaign record: {}", where, e.what()));
  }
}

void write_campaign_record(const fs::path& dir, const CampaignRecord& r) {
  io::write_file_atomic(dir / kCampaignRecordFile, record_to_json(r).dump(2) + "\n");
}

CampaignRecord read_campaign_record(const fs::path& dir) {
  const fs::path file = dir / kCampaignRecordFile;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw io::FormatError(fmt::format("{}: not a directory", dir.string()));
  if (!fs::exists(file, ec))
    throw io::FormatError(
        fmt::format("{}: no {} (not the --out directory of a finished fuzz campaign)", dir.string(), kCampaignRecordFile));
  if (!fs::is_regular_file(file, ec) || fs::file_size(file, ec) > kMaxRecordBytes || ec)
    throw io::FormatError(fmt::format("{}: not a regular file of at most {} bytes", file.string(), kMaxRecordBytes));
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw io::FormatError(fmt::format("{}: cannot read the file", file.string()));
  const json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) throw io::FormatError(fmt::format("{}: not JSON", file.string()));
  return record_from_json(j, file.string());
}

MergedCampaign merge_shards(const std::vector<fs::path>& dirs) {
  if (dirs.empty()) throw UsageError("merge: no shard directory given");
  MergedCampaign m;
  for (const fs::path& dir : dirs) m.shards.push_back({dir, read_campaign_record(dir)});
  const ShardRecord& first = m.shards.front();
  m.campaign = first.record.campaign;
  for (const ShardRecord& s : m.shards)
    if (s.record.campaign != m.campaign)
      throw UsageError(fmt::format("{} is a shard of another campaign than {}: {}", s.dir.string(), first.dir.string(),
                                   difference(s.record.campaign, m.campaign)));
  std::map<int, const ShardRecord*> given;
  for (const ShardRecord& s : m.shards)
    if (const auto [it, fresh] = given.emplace(s.record.shard, &s); !fresh)
      throw UsageError(fmt::format("{} and {} are both shard {}/{}", it->second->dir.string(), s.dir.string(), s.record.shard,
                                   m.campaign.shards));
  if (given.size() < std::size_t(m.campaign.shards)) {
    std::vector<int> missing;  // the first ten
    for (int k = 0; k < m.campaign.shards && missing.size() < 10; ++k)
      if (!given.count(k)) missing.push_back(k);
    const std::size_t more = std::size_t(m.campaign.shards) - given.size() - missing.size();
    throw UsageError(fmt::format("{} {}{} of {} {} missing: give each of shards 0..{} once",
                                 missing.size() + more == 1 ? "shard" : "shards", fmt::join(missing, ", "),
                                 more ? fmt::format(" and {} more", more) : "", m.campaign.shards,
                                 missing.size() + more == 1 ? "is" : "are", m.campaign.shards - 1));
  }
  std::sort(m.shards.begin(), m.shards.end(),
            [](const ShardRecord& a, const ShardRecord& b) { return a.record.shard < b.record.shard; });
  for (const ShardRecord& s : m.shards) {
    m.cases += s.record.cases;
    m.seconds_sum += s.record.seconds;
    m.seconds_max = std::max(m.seconds_max, s.record.seconds);
    for (const auto& [op, st] : s.record.per_operation) {
      OperationStats& t = m.per_operation[op];
      t.cases += st.cases;
      t.failures += st.failures;
      t.seconds += st.seconds;
    }
    for (const FailureRecord& f : s.record.failures) m.failures.push_back({&s, f});
  }
  std::stable_sort(m.failures.begin(), m.failures.end(),
                   [](const MergedFailure& a, const MergedFailure& b) { return a.failure.round < b.failure.round; });
  return m;
}

}  // namespace nvfp4::fuzz
