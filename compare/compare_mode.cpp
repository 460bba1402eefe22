#include "compare/compare_mode.h"

#include "cases/registry.h"

namespace nvfp4::compare {

bool is_gemm_operation(std::string_view op) { return op == "gemm" || op == "grouped_gemm"; }

std::vector<std::string> gemm_operation_names() {
  std::vector<std::string> ops;
  for (const cases::OperationSpec& spec : cases::operations())
    if (is_gemm_operation(spec.name)) ops.emplace_back(spec.name);
  return ops;
}

CompareMode compare_mode_for(const CompareMode& mode, std::string_view op) {
  return is_gemm_operation(op) ? mode : CompareMode{};
}

}  // namespace nvfp4::compare
