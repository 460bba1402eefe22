// The amax family's seed cases: every amax operation on NaNs of both signs, -inf and -0.0 under
// each NaN rule the seeds cover.
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "cases/seeds/families.h"
#include "cases/seeds/seed_builders.h"

namespace nvfp4::cases::seeds {

void add_amax_seeds(std::vector<CaseRecord>& out) {
  Grid g(32, 48);
  SplitMix64 rng(301);
  fill_all(g, rng, 0x41000000);
  g.at(0, 0) = 0x7FC00000;   // NaN in block (0,0) / tile (0,0)
  g.at(5, 17) = 0xFFC00000;  // negative NaN
  g.at(20, 40) = 0x7FC00000;
  g.at(31, 2) = 0xFF800000;   // -inf: |-inf| is the amax of its row, column, block and tile
  g.at(9, 30) = 0x80000000u;  // -0.0
  const io::Tensor x = bf16_tensor(g);
  static const char* kOps[] = {"amax_global",      "amax_rows",        "amax_cols",
                               "amax_blocks_1x16", "amax_blocks_16x1", "amax_tiles_16x16"};
  for (const char* p : {"te", "te-pyref"})
    for (const char* op : kOps)
      out.push_back(op_case(op, p, {{"x", x}},
                            fmt::format("NUMERICS.md §3.1-§3.3: {} of a 32x48 BF16 tensor with NaNs of both signs, -inf "
                                        "and -0.0, NaN rule {} ({})",
                                        op, std::string_view(p) == "te" ? "IGNORE" : "PROPAGATE", p)));
}

}  // namespace nvfp4::cases::seeds
