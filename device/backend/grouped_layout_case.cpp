#include "device/backend/grouped_layout_case.h"

#include <numeric>

#include "device/backend/transfer.h"
#include "device/kernels/launch.h"
#include "device/runtime/check.h"
#include "io/tensor_convert.h"
#include "reference/error.h"
#include "reference/grouped_layout.h"
#include "reference/layout.h"

namespace nvfp4::device {
namespace {

// Group g's compact block inside the whole compact matrix [rows, cols]: its origin and extent,
// and the padded block [g_rows, g_cols] it is swizzled as.
struct GroupBlock {
  std::int64_t row0, col0, used_rows, used_cols, g_rows, g_cols;
};

GroupBlock block_of(GroupAxis axis, std::int64_t first, std::int64_t size, std::int64_t rows, std::int64_t cols) {
  if (axis == GroupAxis::kOuter) return {first, 0, size, cols, scale_rows(size), cols};
  return {0, first / 16, rows, size / 16, rows, scale_cols(size)};
}

}  // namespace

cases::TensorMap grouped_layout_case(const cases::Case& c, cudaStream_t s, bool swizzle) {
  const std::string_view op = c.op;
  const GroupAxis axis = c.params.text("axis") == "inner" ? GroupAxis::kInner : GroupAxis::kOuter;
  const std::vector<std::int64_t>& sizes = c.params.integers("group_sizes");
  const std::int64_t total = std::accumulate(sizes.begin(), sizes.end(), std::int64_t(0));
  check_groups(op, sizes, total);
  const io::Tensor& in = cases::case_input(c, "scale");
  io::require_dtype(in, io::DType::U8, op, "scale");
  std::int64_t rows, cols;  // the whole compact matrix
  if (swizzle) {
    io::require_rank(in, 2, op, "scale");
    rows = in.shape[0];
    cols = in.shape[1];
    if (!grouped_compact_fits(axis, sizes, rows, cols))
      fail(op, ErrorCode::E_SCALE_SHAPE, "scale is [{}, {}], which does not hold groups of {} in all", rows, cols, total);
  } else {
    io::require_rank(in, 1, op, "scale");
    const std::int64_t extent = c.params.integer("extent");
    if (extent < 0 || extent % (axis == GroupAxis::kOuter ? 4 : 128))
      fail(op, ErrorCode::E_SCALE_SHAPE, "extent {} is not a multiple of {}", extent, axis == GroupAxis::kOuter ? 4 : 128);
    rows = axis == GroupAxis::kOuter ? scale_rows(total) : extent;
    cols = axis == GroupAxis::kOuter ? extent : scale_cols(total);
  }
  const std::int64_t grouped = grouped_bytes(axis, sizes, rows, cols);
  if (!swizzle && grouped != in.numel())
    fail(op, ErrorCode::E_SCALE_SHAPE, "{} bytes; these groups and extent {} take {}", in.numel(), c.params.integer("extent"),
         grouped);

  const DeviceBuffer src = upload(in, s);
  DeviceBuffer result = poisoned(std::size_t(swizzle ? grouped : rows * cols), s);
  if (!swizzle) NVFP4_CUDA_CHECK(cudaMemsetAsync(result.get(), 0, std::size_t(rows * cols), s));  // padding
  std::uint8_t* const compact = swizzle ? src.get<std::uint8_t>() : result.get<std::uint8_t>();
  std::uint8_t* const grouped_buffer = swizzle ? result.get<std::uint8_t>() : src.get<std::uint8_t>();
  std::int64_t first = 0, offset = 0;
  for (const std::int64_t size : sizes) {
    const GroupBlock b = block_of(axis, first, size, rows, cols);
    if (b.g_rows * b.g_cols > 0) {
      DeviceBuffer block(std::size_t(b.g_rows * b.g_cols), s);
      std::uint8_t* const origin = compact + b.row0 * cols + b.col0;
      if (swizzle) {
        NVFP4_CUDA_CHECK(cudaMemsetAsync(block.get(), 0, std::size_t(b.g_rows * b.g_cols), s));
        NVFP4_CUDA_CHECK(cudaMemcpy2DAsync(block.get(), std::size_t(b.g_cols), origin, std::size_t(cols),
                                           std::size_t(b.used_cols), std::size_t(b.used_rows), cudaMemcpyDeviceToDevice, s));
        launch_swizzle_scales(block.get<std::uint8_t>(), b.g_rows, b.g_cols, grouped_buffer + offset, s);
      } else {
        launch_unswizzle_scales(grouped_buffer + offset, b.g_rows, b.g_cols, block.get<std::uint8_t>(), s);
        NVFP4_CUDA_CHECK(cudaMemcpy2DAsync(origin, std::size_t(cols), block.get(), std::size_t(b.g_cols),
                                           std::size_t(b.used_cols), std::size_t(b.used_rows), cudaMemcpyDeviceToDevice, s));
      }
      NVFP4_CUDA_CHECK(cudaStreamSynchronize(s));  // the block buffer is freed at the end of this iteration
    }
    first += size;
    offset += b.g_rows * b.g_cols;
  }
  cases::TensorMap out;
  out["scale"] = swizzle ? download(result, io::DType::U8, {grouped}, s) : download(result, io::DType::U8, {rows, cols}, s);
  return out;
}

}  // namespace nvfp4::device
