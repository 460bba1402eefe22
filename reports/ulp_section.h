// The ULP sections of the report pages (docs/guides/gemm-ulp.md): for each GEMM output, a heatmap of its
// elements' distances to EXACT (at most 128 x 128 cells, each coloured by log2 of the largest
// distance in it), the histogram and the worst elements; for a run, the totals over every case.
#pragma once

#include <string>
#include <vector>

#include "compare/ulp_report.h"

namespace nvfp4::reports {

// <section id="ulp">, or "" without reports.
std::string render_ulp_reports(const std::vector<compare::UlpReport>& reports);

// <section id="ulp-totals">: the run's histogram and worst elements with the case of each.
std::string render_ulp_totals(const compare::UlpTotals& totals);

}  // namespace nvfp4::reports
