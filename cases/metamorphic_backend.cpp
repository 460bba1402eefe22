#include "cases/metamorphic_backend.h"

#include "cases/registry.h"

namespace nvfp4::cases {

TensorMap MetamorphicBackend::run(const Case& c) {
  validate_params(c);
  return operation(c.op).metamorphic(c);
}

}  // namespace nvfp4::cases
