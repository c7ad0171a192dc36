// The device function the kernel in kernel.cu calls: resolved at device link time (separable
// compilation), inlined by device LTO.
__device__ float scale_add(float a, float x, float y) { return a * x + y; }
