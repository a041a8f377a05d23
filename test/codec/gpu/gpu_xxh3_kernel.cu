// Device side of test_gpu_xxh3.cpp: the warp XXH3 and the scalar reference run on the GPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "xxh3_warp.cuh"

namespace xxh3 = zipnet::codec::xxh3;

namespace {
__global__ void hash_kernel(const uint8_t* buf, const uint32_t* lens, uint32_t count, uint32_t off, uint64_t* out) {
  const uint32_t i = blockIdx.x;
  if (i >= count) return;
  const uint8_t* p = buf + off;
  const uint64_t h = off % 8 == 0 ? xxh3::warp_hash64<true>(p, lens[i]) : xxh3::warp_hash64<false>(p, lens[i]);
  if (threadIdx.x == 0) out[i] = h;
  if (threadIdx.x == 1) out[count + i] = xxh3::hash64(p, lens[i]);
  // The short hash's word loads where the start and length allow them (warp_hash64 takes the
  // byte loads' branch at odd offsets).
  const uint64_t w = lens[i] <= 240 && (off | lens[i]) % 4 == 0 ? xxh3::warp_hash_short_as<true>(p, lens[i]) : h;
  if (threadIdx.x == 2) out[2 * count + i] = w;
}
}  // namespace

// Hashes buf[off .. off + lens[i]) for every i: [0, n) the warp version, [n, 2n) the scalar one,
// [2n, 3n) warp_hash_short_as<true> where the start and length are multiples of 4 (else the warp
// version's result again).
bool device_hashes(const std::vector<uint8_t>& buf, const std::vector<uint32_t>& lens, uint32_t off,
                   std::vector<uint64_t>* out) {
  uint8_t* d_buf = nullptr;
  uint32_t* d_lens = nullptr;
  uint64_t* d_out = nullptr;
  bool ok = cudaMalloc(&d_buf, buf.size()) == cudaSuccess && cudaMalloc(&d_lens, lens.size() * 4) == cudaSuccess &&
            cudaMalloc(&d_out, lens.size() * 24) == cudaSuccess;
  if (ok) {
    cudaMemcpy(d_buf, buf.data(), buf.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(d_lens, lens.data(), lens.size() * 4, cudaMemcpyHostToDevice);
    hash_kernel<<<unsigned(lens.size()), 32>>>(d_buf, d_lens, uint32_t(lens.size()), off, d_out);
    ok = cudaDeviceSynchronize() == cudaSuccess;
    out->resize(3 * lens.size());
    cudaMemcpy(out->data(), d_out, out->size() * 8, cudaMemcpyDeviceToHost);
  }
  cudaFree(d_buf);
  cudaFree(d_lens);
  cudaFree(d_out);
  return ok;
}
