// A drawn case before its tensors exist. RapidCheck keeps its generation state in globals, so its
// draws run on one thread at a time; building the inputs from the draws (random data, reference
// quantizations of it) is the costly part and runs on any thread (fuzz/campaign.cpp). The draws
// alone decide the case: building the same plan twice gives the same bytes.
#pragma once

#include <functional>
#include <vector>

#include "cases/case_io.h"

namespace nvfp4::fuzz {

struct CasePlan {
  // The operation, its parameters and the recipes of the inputs the case file keeps as recipes.
  cases::CaseRecord record;
  // What builds the other inputs, in order, after the recipes' inputs exist.
  std::vector<std::function<void(cases::CaseRecord&)>> steps;

  void then(std::function<void(cases::CaseRecord&)> step) { steps.push_back(std::move(step)); }
  // The whole case: every recipe's input generated (as a case file's loader does), then the steps.
  cases::CaseRecord build() const;
};

}  // namespace nvfp4::fuzz
