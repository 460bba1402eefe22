// The operation families; each returns its descriptors (one file per family in cases/ops/).
#pragma once

#include <vector>

#include "cases/operation.h"

namespace nvfp4::cases {

std::vector<OperationSpec> amax_operations();         // cases/ops/amax_ops.cpp
std::vector<OperationSpec> quantize_operations();     // cases/ops/quantize_ops.cpp
std::vector<OperationSpec> layout_operations();       // cases/ops/layout_ops.cpp
std::vector<OperationSpec> distributed_operations();  // cases/ops/distributed_ops.cpp
std::vector<OperationSpec> hadamard_operations();     // cases/ops/hadamard_ops.cpp
std::vector<OperationSpec> gemm_operations();         // cases/ops/gemm_ops.cpp
std::vector<OperationSpec> grouped_operations();      // cases/ops/grouped_ops.cpp

}  // namespace nvfp4::cases
