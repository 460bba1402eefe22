#include "cases/reference_backend.h"

#include "cases/registry.h"

namespace nvfp4::cases {

TensorMap ReferenceBackend::run(const Case& c) {
  validate_params(c);
  return operation(c.op).reference(c);
}

}  // namespace nvfp4::cases
