// The CPU reference as a backend: each operation's reference function from the registry.
#pragma once

#include "cases/case.h"

namespace nvfp4::cases {

class ReferenceBackend : public Backend {
 public:
  std::string_view name() const override { return "reference"; }
  TensorMap run(const Case& c) override;  // validates c against the registry first
};

}  // namespace nvfp4::cases
