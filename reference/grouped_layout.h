// The grouped (MoE) scale layout of NUMERICS.md §2.4.3: G groups concatenated along one axis,
// each group's compact scales swizzled on its own extent and the buffers concatenated.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "reference/tensor.h"

namespace nvfp4 {

// kOuter: groups along the scale rows (tokens of rowwise activations, M-grouped GEMM).
// kInner: groups along the scale columns (tokens of columnwise copies, K-grouped GEMM), where a
// whole-extent swizzle is wrong.
enum class GroupAxis : std::uint8_t { kOuter, kInner };

// Group extents in elements along the grouped axis (rows for kOuter, K elements for kInner):
// E_GROUPS (labelled op) unless each is a non-negative multiple of 16 and they sum to `total`.
void check_groups(std::string_view op, const std::vector<std::int64_t>& sizes, std::int64_t total);

// The shape rule of the whole compact matrix [rows, cols] of a grouped tensor: kOuter rows =
// roundup(Σ sizes, 128), cols a multiple of 4; kInner cols = roundup(Σ sizes / 16, 4), rows a
// multiple of 128. And the bytes of its grouped layout: Σ over groups of the group's padded block.
bool grouped_compact_fits(GroupAxis axis, const std::vector<std::int64_t>& sizes, std::int64_t rows, std::int64_t cols);
std::int64_t grouped_bytes(GroupAxis axis, const std::vector<std::int64_t>& sizes, std::int64_t rows, std::int64_t cols);

// Group g's own compact scale matrix, cut from the whole compact matrix and padded with 0x00:
// kOuter [roundup(M_g,128), C'], kInner [R', roundup(n_g/16,4)].
ByteMatrix group_scales(const ByteMatrix& compact, GroupAxis axis, const std::vector<std::int64_t>& sizes, std::size_t g);

// The whole compact matrix [R', C'] to the grouped swizzled bytes, and back. The compact matrix
// is that of the concatenated tensor: kOuter R' = roundup(Σ sizes, 128); kInner C' =
// roundup(Σ sizes / 16, 4); else E_SCALE_SHAPE. `extent` is the ungrouped axis's padded size
// (kOuter: C'; kInner: R'), which the bytes alone do not tell.
std::vector<std::uint8_t> grouped_swizzle(const ByteMatrix& compact, GroupAxis axis, const std::vector<std::int64_t>& sizes);
ByteMatrix grouped_unswizzle(const std::vector<std::uint8_t>& bytes, GroupAxis axis, const std::vector<std::int64_t>& sizes,
                             std::int64_t extent);

// Group g's compact scale matrix read from the grouped swizzled bytes (its own byte range).
ByteMatrix group_scales_of_grouped(const std::vector<std::uint8_t>& bytes, GroupAxis axis, const std::vector<std::int64_t>& sizes,
                                   std::int64_t extent, std::size_t g);

}  // namespace nvfp4
