// Small device helpers of the CUDA codec: thread groups with their own barrier, group-wide
// reductions and scans, element access through the LL/LL128 line layout, and byte copies.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/layout.h"
#include "common/elements.h"
#include "batch.h"

namespace zipnet::codec::cuda::detail {

namespace cm = zipnet::codec::common;

// A group of `size` threads of a CTA with its own named barrier (ids 1..15), so that several
// groups of one CTA work on different blocks without waiting for each other. Id -1 with the whole
// CTA's size is the CTA itself (barrier 0, __syncthreads's).
struct Group {
  int id;    // group index in the CTA
  int tid;   // 0..size-1
  int size;  // a multiple of 32, at most 32 * 32
  __device__ int warp() const { return tid >> 5; }
  __device__ int lane() const { return tid & 31; }
  __device__ int warps() const { return size >> 5; }
  // A one-warp group needs no named barrier (there are only 16 of them).
  __device__ void sync() const {
    if (size == 32) __syncwarp();
    else asm volatile("bar.sync %0, %1;" ::"r"(id + 1), "r"(size) : "memory");
  }
};

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}
__device__ __forceinline__ uint32_t warp_or(uint32_t v) {
  for (int o = 16; o; o >>= 1) v |= __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}

__device__ __forceinline__ uint64_t warp_max64(uint64_t v) {
  for (int o = 16; o; o >>= 1) {
    uint64_t t = __shfl_xor_sync(0xFFFFFFFFu, v, o);
    v = t > v ? t : v;
  }
  return v;
}

// Sum over the group; every thread gets it. `red` is g.warps() words of shared memory.
__device__ inline uint64_t group_sum(const Group& g, uint64_t v, uint64_t* red) {
  v = warp_sum(v);
  if (g.lane() == 0) red[g.warp()] = v;
  g.sync();
  uint64_t t = 0;
  for (int w = 0; w < g.warps(); ++w) t += red[w];
  g.sync();
  return t;
}
__device__ inline uint64_t group_max(const Group& g, uint64_t v, uint64_t* red) {
  v = warp_max64(v);
  if (g.lane() == 0) red[g.warp()] = v;
  g.sync();
  uint64_t t = 0;
  for (int w = 0; w < g.warps(); ++w) t = red[w] > t ? red[w] : t;
  g.sync();
  return t;
}

// Exclusive prefix sum over the group in thread order; *total gets the sum.
__device__ inline uint32_t group_scan(const Group& g, uint32_t v, uint32_t* red, uint32_t* total) {
  uint32_t inc = v;
  for (int o = 1; o < 32; o <<= 1) {
    uint32_t t = __shfl_up_sync(0xFFFFFFFFu, inc, o);
    if (g.lane() >= o) inc += t;
  }
  if (g.lane() == 31) red[g.warp()] = inc;
  g.sync();
  uint32_t before = 0, all = 0;
  for (int w = 0; w < g.warps(); ++w) {
    if (w < g.warp()) before += red[w];
    all += red[w];
  }
  g.sync();
  *total = all;
  return before + inc - v;
}

// Offset in the original block of gathered byte `gb` (format §3).
__device__ __forceinline__ uint32_t original_offset(unsigned layout, uint32_t gb) {
  if (layout == cm::kLayoutLL) return (gb >> 3) * cm::kLLLine + (gb & 7) + ((gb & 4) ? 4 : 0);
  if (layout == cm::kLayoutLL128) return (gb / cm::kLL128Data) * cm::kLL128Line + gb % cm::kLL128Data;
  return gb;
}

// Element i of a block held in (16-byte aligned) shared memory. Elements never straddle a line's
// data words, so the load is always aligned to its size.
__device__ __forceinline__ uint32_t element_at(const uint8_t* blk, unsigned layout, unsigned esize, uint32_t i) {
  uint32_t o = original_offset(layout, i * esize);
  if (esize == 2) return *reinterpret_cast<const uint16_t*>(blk + o);
  if (esize == 4) return *reinterpret_cast<const uint32_t*>(blk + o);
  return blk[o];
}
__device__ __forceinline__ void store_element_at(uint8_t* blk, unsigned layout, unsigned esize, uint32_t i, uint32_t v) {
  uint32_t o = original_offset(layout, i * esize);
  if (esize == 2) *reinterpret_cast<uint16_t*>(blk + o) = uint16_t(v);
  else if (esize == 4) *reinterpret_cast<uint32_t*>(blk + o) = v;
  else blk[o] = uint8_t(v);
}

// Element i's residual from its block's residual planes (format §2; nullptr: an all-zero plane,
// left out of the payload). Only fp32 has planes 1 and 2.
template <unsigned dtype>
__device__ __forceinline__ uint32_t residual_from_planes(const uint8_t* r0, const uint8_t* r1, const uint8_t* r2, uint32_t i) {
  uint32_t v = r0 ? uint32_t(r0[i]) : 0;
  if constexpr (dtype == cm::kDtypeFp32) {
    if (r1) v |= uint32_t(r1[i]) << 8;
    if (r2) v |= uint32_t(r2[i]) << 16;
  }
  return v;
}

// The first statement of every kernel of the codec (launch_after_previous, kernels.h): waits until
// the previous kernel in the stream has finished and its writes are visible, then lets the next
// kernel's CTAs be scheduled. Launched this way, a kernel's launch overlaps the previous one's
// tail; nothing may touch memory before the wait.
__device__ __forceinline__ void start_after_previous_kernel() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// mbarrier (sm_90) in shared memory: a phase completes when `count` arrivals are in. A waiter
// sleeps in try_wait until the phase it names (by parity) has completed, and sees every write made
// before the arrivals that completed it (release / acquire, CTA scope).
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(uint32_t(__cvta_generic_to_shared(bar))), "r"(count)
               : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(uint32_t(__cvta_generic_to_shared(bar))) : "memory");
}
__device__ __forceinline__ void mbarrier_wait_parity(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(uint32_t(__cvta_generic_to_shared(bar))), "r"(parity)
        : "memory");
  } while (!done);
}

// Copies n <= kMax bytes from src (any alignment) to dst byte by byte, by kThreads threads (thread
// t of them), with every load issued before the first store: a plain byte loop waits a memory
// latency per iteration.
template <uint32_t kMax, uint32_t kThreads>
__device__ __forceinline__ void copy_bytes_one_round(uint8_t* dst, const uint8_t* src, uint32_t n, uint32_t t) {
  constexpr uint32_t kPer = (kMax + kThreads - 1) / kThreads;
  uint8_t v[kPer];
#pragma unroll
  for (uint32_t r = 0; r < kPer; ++r) v[r] = t + r * kThreads < n ? src[t + r * kThreads] : 0;
#pragma unroll
  for (uint32_t r = 0; r < kPer; ++r)
    if (t + r * kThreads < n) dst[t + r * kThreads] = v[r];
}

// Copies n bytes to a 4-byte aligned dst (with 3 bytes of slack after dst + n) from src at any
// alignment, by `nthreads` threads (thread t of them): aligned 4-byte loads joined with funnel
// shifts. It never loads an aligned word that holds none of src's bytes.
__device__ inline void copy_to_aligned(uint8_t* dst, const uint8_t* src, uint64_t n, int t, int nthreads) {
  const unsigned lead = unsigned(uintptr_t(src) & 3);
  const uint32_t* sw = reinterpret_cast<const uint32_t*>(uintptr_t(src) - lead);
  uint32_t* dw = reinterpret_cast<uint32_t*>(dst);
  const uint64_t nw = (n + 3) / 4;
  if (lead == 0) {
    for (uint64_t k = t; k < nw; k += nthreads) dw[k] = sw[k];
    return;
  }
  for (uint64_t k = t; k < nw; k += nthreads) {
    uint32_t lo = sw[k];
    uint32_t hi = (4 * k + 4 < lead + n) ? sw[k + 1] : 0;
    dw[k] = __funnelshift_r(lo, hi, lead * 8);
  }
}

// Copies n bytes between any two addresses with 16-byte stores: each thread builds a 16-byte
// chunk from the 4-byte words around it (a funnel shift), so neither side needs alignment. Reads
// whole aligned words, so up to 3 bytes before src and after src + n must be readable.
__device__ inline void copy_any(uint8_t* dst, const uint8_t* src, uint64_t n, int t, int nthreads) {
  const uint64_t lead = (16 - (uintptr_t(dst) & 15)) & 15, head = lead < n ? lead : n;
  for (uint64_t k = t; k < head; k += nthreads) dst[k] = src[k];
  dst += head;
  src += head;
  n -= head;
  const uint64_t nv = n / 16;
  const unsigned m = unsigned(uintptr_t(src) & 3), shift = 8 * m;
  const uint32_t* sw = reinterpret_cast<const uint32_t*>(src - m);
  uint4* dv = reinterpret_cast<uint4*>(dst);
  constexpr int U = 4;  // chunks of a thread in flight together
  for (uint64_t k0 = t; k0 < nv; k0 += U * uint64_t(nthreads)) {
    uint32_t w[U][5];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint64_t k = k0 + u * uint64_t(nthreads);
      if (k >= nv) break;
#pragma unroll
      for (int i = 0; i < 4; ++i) w[u][i] = sw[4 * k + i];
      w[u][4] = m ? sw[4 * k + 4] : 0;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint64_t k = k0 + u * uint64_t(nthreads);
      if (k >= nv) break;
      dv[k] = make_uint4(__funnelshift_r(w[u][0], w[u][1], shift), __funnelshift_r(w[u][1], w[u][2], shift),
                         __funnelshift_r(w[u][2], w[u][3], shift), __funnelshift_r(w[u][3], w[u][4], shift));
    }
  }
  for (uint64_t k = nv * 16 + t; k < n; k += nthreads) dst[k] = src[k];
}

// Copies n bytes from src (4-byte aligned, readable up to 8 bytes past src + n: shared memory or
// padded scratch) to dst at any alignment, by `nthreads` threads. Writes exactly dst[0..n), with
// 16-byte stores where both are 16-byte aligned.
__device__ inline void copy_from_aligned(uint8_t* dst, const uint8_t* src, uint64_t n, int t, int nthreads) {
  if (((uintptr_t(dst) | uintptr_t(src)) & 15) == 0) {
    const uint64_t nv = n / 16;
    constexpr int U = 4;
    for (uint64_t k0 = t; k0 < nv; k0 += U * uint64_t(nthreads)) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint64_t k = k0 + u * uint64_t(nthreads);
        if (k < nv) v[u] = reinterpret_cast<const uint4*>(src)[k];
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint64_t k = k0 + u * uint64_t(nthreads);
        if (k < nv) reinterpret_cast<uint4*>(dst)[k] = v[u];
      }
    }
    for (uint64_t k = nv * 16 + t; k < n; k += nthreads) dst[k] = src[k];
    return;
  }
  const uint64_t head = (4 - (uintptr_t(dst) & 3)) & 3;
  if (head >= n) {
    for (uint64_t k = t; k < n; k += nthreads) dst[k] = src[k];
    return;
  }
  for (uint64_t k = t; k < head; k += nthreads) dst[k] = src[k];
  const uint64_t nw = (n - head) / 4;
  uint32_t* dw = reinterpret_cast<uint32_t*>(dst + head);
  const unsigned shift = unsigned(head) * 8;  // src is aligned, so src + head is off by head
  const uint32_t* sw = reinterpret_cast<const uint32_t*>(src);
  constexpr int U = 4;  // loads of a thread in flight together
  for (uint64_t k0 = t; k0 < nw; k0 += U * uint64_t(nthreads)) {
    uint32_t lo[U], hi[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint64_t k = k0 + u * uint64_t(nthreads);
      lo[u] = k < nw ? sw[k] : 0;
      hi[u] = k < nw ? sw[k + 1] : 0;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const uint64_t k = k0 + u * uint64_t(nthreads);
      if (k < nw) dw[k] = shift ? __funnelshift_r(lo[u], hi[u], shift) : lo[u];
    }
  }
  for (uint64_t k = head + nw * 4 + t; k < n; k += nthreads) dst[k] = src[k];
}

// Calls f(dtype, layout) with both as std::integral_constant, so that the hot loops are compiled
// once per (dtype, layout) and their element and layout arithmetic folds to constants.
template <class F>
__device__ __forceinline__ void dispatch_dtype_layout(unsigned dtype, unsigned layout, F&& f) {
  using std::integral_constant;
#define ZIPNET_CASE(D, L)                                                  \
  case D * 3 + L:                                                          \
    f(integral_constant<unsigned, D>{}, integral_constant<unsigned, L>{}); \
    break;
  switch (dtype * 3 + layout) {
    ZIPNET_CASE(0, 0) ZIPNET_CASE(0, 1) ZIPNET_CASE(0, 2)
    ZIPNET_CASE(1, 0) ZIPNET_CASE(1, 1) ZIPNET_CASE(1, 2)
    ZIPNET_CASE(2, 0) ZIPNET_CASE(2, 1) ZIPNET_CASE(2, 2)
    ZIPNET_CASE(3, 0) ZIPNET_CASE(3, 1) ZIPNET_CASE(3, 2)
    default: break;
  }
#undef ZIPNET_CASE
}
__host__ __device__ constexpr unsigned esize_of(unsigned dtype) { return dtype == 3 ? 4u : dtype == 0 ? 1u : 2u; }

// Index of the message that owns flat work item `item`: the last m < count with first[m] <= item
// (messages without blocks share their successor's first, so the last one is the owner). Called by
// every lane of a full warp with the same item: each round, the lanes probe 32 evenly spaced
// descriptors at once and the ballot narrows the range 32-fold, so a batch of up to 32 messages
// takes one round of loads and up to 1024 two. (A binary search was log2(count) dependent global
// loads for every block in every kernel: 16% of analyse_kernel's stall samples on 16 x 512 KiB,
// ncu 2026-11-30.) first_of(k): message k's first item (the DevMsgs', or the fused decoders' copy in
// shared memory).
template <class FirstOf>
__device__ inline uint32_t owner_by_first(FirstOf first_of, uint32_t count, uint32_t item) {
  const uint32_t lane = threadIdx.x & 31;
  uint32_t lo = 0, n = count;  // the owner is in [lo, lo + n), and first[lo] <= item
  while (n > 1) {
    const uint32_t stride = (n + 31) / 32, k = lo + lane * stride;
    const bool at_or_before = k < lo + n && first_of(k) <= item;
    const uint32_t top = 31 - __clz(__ballot_sync(0xFFFFFFFFu, at_or_before));  // lane 0 always holds
    const uint32_t next = lo + top * stride;
    n = (lo + n - next) < stride ? (lo + n - next) : stride;
    lo = next;
  }
  return lo;
}
__device__ inline uint32_t owner_of(const DevMsg* msgs, uint32_t count, uint32_t item) {
  return owner_by_first([msgs](uint32_t k) { return msgs[k].first_block; }, count, item);
}

}  // namespace zipnet::codec::cuda::detail
