// Shared by `fuzz` and `gate`: parsing durations, printing a campaign's summary table, and
// writing its failure pages.
#pragma once

#include <filesystem>
#include <string>

#include "fuzz/campaign.h"
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

// Failure pages for every failure into dir; adds an entry per failure to `summary`.
void report_failures(const fuzz::CampaignResult& r, const std::string& backends, const std::filesystem::path& dir,
                     reports::Summary& summary);

}  // namespace nvfp4::cli
