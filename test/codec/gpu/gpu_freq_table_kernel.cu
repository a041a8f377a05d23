// Device side of test_gpu_freq_table.cpp: the decoders' warp-parallel frequency-table parser, a
// warp per table.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "freq_table_warp.cuh"

namespace {
// Table i is buf[offs[i] .. offs[i] + avails[i]); out[i] gets ok, consumed and the 256 frequencies.
__global__ void parse_kernel(const uint8_t* buf, const uint32_t* offs, const uint32_t* avails, uint32_t count,
                             uint32_t* out) {
  __shared__ uint32_t freq[256];
  const uint32_t i = blockIdx.x;
  if (i >= count) return;
  uint32_t consumed = 0;
  const bool ok = zipnet::codec::cuda::detail::parse_freq_table_warp(buf + offs[i], avails[i], freq, &consumed);
  __syncwarp();
  uint32_t* o = out + size_t(i) * 258;
  if (threadIdx.x == 0) {
    o[0] = ok;
    o[1] = consumed;
  }
  for (uint32_t s = threadIdx.x; s < 256; s += 32) o[2 + s] = ok ? freq[s] : 0;
}
}  // namespace

// Parses every table on the GPU; out: 258 words per table (ok, consumed, freq[256]).
bool device_parse_freq_tables(const std::vector<uint8_t>& buf, const std::vector<uint32_t>& offs,
                              const std::vector<uint32_t>& avails, std::vector<uint32_t>* out) {
  uint8_t* d_buf = nullptr;
  uint32_t *d_offs = nullptr, *d_avails = nullptr, *d_out = nullptr;
  const size_t n = offs.size();
  bool ok = cudaMalloc(&d_buf, buf.size() + 1) == cudaSuccess && cudaMalloc(&d_offs, n * 4) == cudaSuccess &&
            cudaMalloc(&d_avails, n * 4) == cudaSuccess && cudaMalloc(&d_out, n * 258 * 4) == cudaSuccess;
  if (ok) {
    cudaMemcpy(d_buf, buf.data(), buf.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(d_offs, offs.data(), n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(d_avails, avails.data(), n * 4, cudaMemcpyHostToDevice);
    parse_kernel<<<unsigned(n), 32>>>(d_buf, d_offs, d_avails, uint32_t(n), d_out);
    ok = cudaDeviceSynchronize() == cudaSuccess;
    out->resize(n * 258);
    cudaMemcpy(out->data(), d_out, out->size() * 4, cudaMemcpyDeviceToHost);
  }
  cudaFree(d_buf);
  cudaFree(d_offs);
  cudaFree(d_avails);
  cudaFree(d_out);
  return ok;
}
