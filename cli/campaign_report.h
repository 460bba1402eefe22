// Shared by `fuzz` and `gate`: parsing durations, printing a campaign's summary table, and
// writing its failure pages.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fuzz/campaign.h"
#include "fuzz/campaign_record.h"
#include "reports/junit.h"
#include "reports/report.h"

namespace nvfp4::cli {

// "60s", "2m", "90" (seconds), "1.5h" -> seconds; throws UsageError.
double parse_duration(const std::string& text);

// Terminal progress line on stderr (only when stderr is a terminal).
std::function<void(const fuzz::CampaignProgress&)> terminal_progress();

// The space a campaign on these backends covers, printed as `command: space: ...` lines and added
// to the summary page's facts: one line per operation when a backend declares what it implements,
// else one line saying the whole registry.
void state_space(const std::string& command, fuzz::CaseSpace space, const cases::Backend& expected, const cases::Backend& actual,
                 reports::Summary& summary);

// Prints per-operation cases, cases/s and failures, then one line per failure.
void print_campaign_summary(const fuzz::CampaignResult& r, const std::string& backends);
// The per-operation table alone (fuzz, gate and merge).
void print_operation_table(const std::map<std::string, fuzz::OperationStats>& per_operation);

// The campaign's cases per operation on the summary page, which then counts every case it ran
// (fuzz, gate and merge); its failures are the entries that report_failures adds.
void count_generated(const std::map<std::string, fuzz::OperationStats>& per_operation, reports::Summary& summary);

// Failure pages for every failure into dir; adds an entry per failure to `summary` (a generated
// one: count_generated counts it). Returns the pages' file names, one per failure.
std::vector<std::string> report_failures(const fuzz::CampaignResult& r, const std::string& backends,
                                         const std::filesystem::path& dir, reports::Summary& summary);

// A campaign's JUnit suite: one testcase per operation ("quantize (25 cases)"), failing with its
// failures' problems and saved cases (their paths under `dir`, the directory the record's paths
// are relative to). fuzz, gate and merge (a suite per shard) write it.
reports::JunitSuite campaign_suite(const fuzz::CampaignRecord& r, const std::string& name, const std::filesystem::path& dir);

}  // namespace nvfp4::cli
