// Each operation family's seed cases (cases/seeds/<family>.cpp), for the table in seed_corpus.cpp.
#pragma once

#include <vector>

#include "cases/case_io.h"

namespace nvfp4::cases::seeds {

void add_amax_seeds(std::vector<CaseRecord>& out);
void add_quantize_seeds(std::vector<CaseRecord>& out);
void add_quantize_worked_examples(std::vector<CaseRecord>& out);  // part of add_quantize_seeds
void add_layout_seeds(std::vector<CaseRecord>& out);
void add_distributed_seeds(std::vector<CaseRecord>& out);
void add_hadamard_seeds(std::vector<CaseRecord>& out);
void add_gemm_seeds(std::vector<CaseRecord>& out);
void add_grouped_seeds(std::vector<CaseRecord>& out);

}  // namespace nvfp4::cases::seeds
