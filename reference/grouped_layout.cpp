#include "reference/grouped_layout.h"

#include <numeric>

#include <xtensor/xview.hpp>

#include "reference/error.h"
#include "reference/layout.h"
#include "reference/scale_layout.h"

namespace nvfp4 {
namespace {

std::int64_t first_of(const std::vector<std::int64_t>& sizes, std::size_t g) {
  return std::accumulate(sizes.begin(), sizes.begin() + std::ptrdiff_t(g), std::int64_t(0));
}
std::int64_t sum_of(const std::vector<std::int64_t>& sizes) { return first_of(sizes, sizes.size()); }

// Group g's own padded compact shape: rows and columns.
std::pair<std::int64_t, std::int64_t> group_shape(GroupAxis axis, const std::vector<std::int64_t>& sizes, std::int64_t extent,
                                                  std::size_t g) {
  return axis == GroupAxis::kOuter ? std::pair{scale_rows(sizes[g]), extent} : std::pair{extent, scale_cols(sizes[g])};
}

void check_whole(std::string_view op, const ByteMatrix& compact, GroupAxis axis, const std::vector<std::int64_t>& sizes) {
  const std::int64_t rows = std::int64_t(compact.shape(0)), cols = std::int64_t(compact.shape(1)), total = sum_of(sizes);
  if (!grouped_compact_fits(axis, sizes, rows, cols))
    fail(op, ErrorCode::E_SCALE_SHAPE, "scale is [{}, {}]; groups of {} {} in all need [{}, {}]", rows, cols, total,
         axis == GroupAxis::kOuter ? "rows" : "elements along K",
         axis == GroupAxis::kOuter ? fmt::format("{}", scale_rows(total)) : "a multiple of 128",
         axis == GroupAxis::kOuter ? "a multiple of 4" : fmt::format("{}", scale_cols(total)));
}

}  // namespace

bool grouped_compact_fits(GroupAxis axis, const std::vector<std::int64_t>& sizes, std::int64_t rows, std::int64_t cols) {
  const std::int64_t total = sum_of(sizes);
  return axis == GroupAxis::kOuter ? rows == scale_rows(total) && cols % 4 == 0 : cols == scale_cols(total) && rows % 128 == 0;
}

std::int64_t grouped_bytes(GroupAxis axis, const std::vector<std::int64_t>& sizes, std::int64_t rows, std::int64_t cols) {
  const std::int64_t extent = axis == GroupAxis::kOuter ? cols : rows;
  std::int64_t n = 0;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    const auto [r, c] = group_shape(axis, sizes, extent, g);
    n += r * c;
  }
  return n;
}

void check_groups(std::string_view op, const std::vector<std::int64_t>& sizes, std::int64_t total) {
  std::int64_t sum = 0;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    if (sizes[g] < 0 || sizes[g] % 16)
      fail(op, ErrorCode::E_GROUPS, "group {} has extent {}: group extents are non-negative multiples of 16", g, sizes[g]);
    // Checked as it grows, so that hostile extents cannot overflow the sum.
    if (sizes[g] > total - sum)
      fail(op, ErrorCode::E_GROUPS, "the group extents up to group {} sum to more than the grouped axis's {}", g, total);
    sum += sizes[g];
  }
  if (sizes.empty() || sum != total)
    fail(op, ErrorCode::E_GROUPS, "the {} group extents sum to {}, the grouped axis has {}", sizes.size(), sum, total);
}

ByteMatrix group_scales(const ByteMatrix& compact, GroupAxis axis, const std::vector<std::int64_t>& sizes, std::size_t g) {
  const std::int64_t extent = std::int64_t(axis == GroupAxis::kOuter ? compact.shape(1) : compact.shape(0));
  const auto [rows, cols] = group_shape(axis, sizes, extent, g);
  ByteMatrix out = xt::zeros<std::uint8_t>({std::size_t(rows), std::size_t(cols)});
  const std::int64_t first = first_of(sizes, g);
  if (axis == GroupAxis::kOuter)
    xt::view(out, xt::range(0, sizes[g]), xt::all()) = xt::view(compact, xt::range(first, first + sizes[g]), xt::all());
  else
    xt::view(out, xt::all(), xt::range(0, sizes[g] / 16)) =
        xt::view(compact, xt::all(), xt::range(first / 16, (first + sizes[g]) / 16));
  return out;
}

std::vector<std::uint8_t> grouped_swizzle(const ByteMatrix& compact, GroupAxis axis, const std::vector<std::int64_t>& sizes) {
  check_whole("grouped_swizzle", compact, axis, sizes);
  std::vector<std::uint8_t> bytes;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    const ByteMatrix s = swizzle_scales(group_scales(compact, axis, sizes, g));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  return bytes;
}

ByteMatrix group_scales_of_grouped(const std::vector<std::uint8_t>& bytes, GroupAxis axis, const std::vector<std::int64_t>& sizes,
                                   std::int64_t extent, std::size_t g) {
  std::size_t offset = 0;
  for (std::size_t h = 0; h < g; ++h) {
    const auto [r, c] = group_shape(axis, sizes, extent, h);
    offset += std::size_t(r * c);
  }
  const auto [rows, cols] = group_shape(axis, sizes, extent, g);
  ByteMatrix s = xt::zeros<std::uint8_t>({std::size_t(rows), std::size_t(cols)});
  std::copy(bytes.begin() + std::ptrdiff_t(offset), bytes.begin() + std::ptrdiff_t(offset + s.size()), s.begin());
  return unswizzle_scales(s);
}

ByteMatrix grouped_unswizzle(const std::vector<std::uint8_t>& bytes, GroupAxis axis, const std::vector<std::int64_t>& sizes,
                             std::int64_t extent) {
  const std::int64_t total = sum_of(sizes);
  if (extent < 0 || extent % (axis == GroupAxis::kOuter ? 4 : 128))
    fail("grouped_unswizzle", ErrorCode::E_SCALE_SHAPE, "extent {} is not a multiple of {}", extent,
         axis == GroupAxis::kOuter ? 4 : 128);
  const std::size_t expected = std::size_t(axis == GroupAxis::kOuter ? grouped_bytes(axis, sizes, scale_rows(total), extent)
                                                                     : grouped_bytes(axis, sizes, extent, scale_cols(total)));
  if (bytes.size() != expected)
    fail("grouped_unswizzle", ErrorCode::E_SCALE_SHAPE, "{} bytes; these groups and extent {} take {}", bytes.size(), extent,
         expected);
  ByteMatrix out = axis == GroupAxis::kOuter
                       ? ByteMatrix(xt::zeros<std::uint8_t>({std::size_t(scale_rows(total)), std::size_t(extent)}))
                       : ByteMatrix(xt::zeros<std::uint8_t>({std::size_t(extent), std::size_t(scale_cols(total))}));
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    const ByteMatrix s = group_scales_of_grouped(bytes, axis, sizes, extent, g);
    const std::int64_t first = first_of(sizes, g);
    if (axis == GroupAxis::kOuter)
      xt::view(out, xt::range(first, first + sizes[g]), xt::all()) = xt::view(s, xt::range(0, sizes[g]), xt::all());
    else
      xt::view(out, xt::all(), xt::range(first / 16, (first + sizes[g]) / 16)) =
          xt::view(s, xt::all(), xt::range(0, sizes[g] / 16));
  }
  return out;
}

}  // namespace nvfp4
