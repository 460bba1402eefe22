// The version of the specification the reference implements (docs/NUMERICS.md, "Version"):
// incremented when a rule changes the bits of any operation, so that a conformance vector pack
// (docs/vectors.md) says which rules its expected outputs follow.
#pragma once

namespace nvfp4 {

constexpr int kSpecificationVersion = 1;

}  // namespace nvfp4
