// The tile a persistent CTA works on: CTA b visits tiles b, b + gridDim.x, ... of a grid of
// tiles in row-major order (the quantize tile kernel, device/kernels/quantize.cu).
#pragma once

namespace nvfp4::device {

// A CTA's current tile (ty, tx). The cursor steps without a division per tile (in the quantize
// kernel a division and the copies' address arithmetic per tile once cost a third of its
// instructions).
struct TileCursor {
  int ty, tx;
  int step_y, step_x;  // gridDim.x as whole tile rows and a remainder
  __device__ TileCursor(int tile, int tiles_x)
      : ty(tile / tiles_x), tx(tile % tiles_x), step_y(int(gridDim.x) / tiles_x), step_x(int(gridDim.x) % tiles_x) {}
  __device__ void next(int tiles_x) {
    ty += step_y;
    tx += step_x;
    if (tx >= tiles_x) {
      tx -= tiles_x;
      ++ty;
    }
  }
};

}  // namespace nvfp4::device
