#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// Returns a cudaError_t (0: launched). `stream` is a cudaStream_t.
int tiny_conv_causal_conv1d_fwd_f32(const float* x, const float* weight, float* out, int batch,
                                    int dim, int seqlen, int width, void* stream);
const char* tiny_conv_error_string(int err);

#ifdef __cplusplus
}
#endif
