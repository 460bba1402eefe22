// The layout family's seed cases: packed transposes (odd M included), swizzles and the 2D scale
// transpose.
#include <cstdint>
#include <vector>

#include "cases/seeds/families.h"
#include "cases/seeds/seed_builders.h"
#include "io/tensor_convert.h"
#include "reference/profiles.h"

namespace nvfp4::cases::seeds {

void add_layout_seeds(std::vector<CaseRecord>& out) {
  out.push_back(op_case("transpose_packed", "te", {{"data", random_bytes(2, 8, 1402)}},
                        "NUMERICS.md §3.14 nibble transpose with M=2: data [2, 8] -> [16, 1]"));
  out.push_back(op_case("transpose_packed", "te", {{"data", random_bytes(6, 5, 1403)}},
                        "NUMERICS.md §3.14 nibble transpose of a 6x10 tensor: data [6, 5] -> [10, 3]"));
  out.push_back(op_case("transpose_packed", "te", {{"data", random_bytes(3, 4, 1404)}},
                        "NUMERICS.md §3.14 / §3.22: nibble transpose with odd M=3: every backend must reject it (E_EVEN)"));
  out.push_back(op_case("swizzle", "te", {{"scale", random_bytes(256, 36, 2436)}},
                        "NUMERICS.md §2.4.2 / §3.21: swizzle of 256x36 random bytes (two 128-row bands, 9 column groups)"));
  out.push_back(op_case("unswizzle", "te", {{"scale", random_bytes(256, 36, 2437)}},
                        "NUMERICS.md §2.4.2 / §3.21: unswizzle of 256x36 random bytes"));
  {
    const FloatMatrix x = generate_values(recipe(Distribution::kRandn, 1414, 48, 80, io::DType::F32));
    QuantizeOptions o;
    o.profile = find_profile("te")->knobs;
    o.block = BlockShape::k2D;
    const Quantization q = quantize(x, o);
    CaseRecord r = op_case("transpose_scales_2d", "te", {{"scale", io::from_byte_matrix(q.rowwise->scale)}},
                           "NUMERICS.md §3.14: 2D scale transpose of a 48x80 tensor's rowwise scales [128, 8] -> [128, 4]");
    r.c.params.set("M", std::int64_t(48));
    r.c.params.set("K", std::int64_t(80));
    out.push_back(std::move(r));
  }
}

}  // namespace nvfp4::cases::seeds
