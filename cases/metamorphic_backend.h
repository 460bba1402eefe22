// A CPU backend that computes every operation through its registry metamorphic relation instead
// of the reference's own route (e.g. quantize(x) through quantize(x^T); `nvfp4-verify ops` lists
// each relation), so that a machine without a GPU still compares two computations.
#pragma once

#include "cases/case.h"

namespace nvfp4::cases {

class MetamorphicBackend : public Backend {
 public:
  std::string_view name() const override { return "metamorphic"; }
  TensorMap run(const Case& c) override;
};

}  // namespace nvfp4::cases
