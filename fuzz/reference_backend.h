// The CPU reference as a backend.
#pragma once

#include "fuzz/case.h"

namespace nvfp4 {

class ReferenceBackend : public Backend {
 public:
  std::string_view name() const override { return "reference"; }
  TensorMap run(const Case& c) override;
};

// The named profile's knobs; throws nvfp4::Error(E_UNSUPPORTED) for an unknown name.
const Profile& case_profile(const CaseParams& params);

// The quantize options a case's parameters describe.
QuantizeOptions quantize_options(const CaseParams& params);

}  // namespace nvfp4
