// Batched encoder (format §4, §6). Five launches cover every message of a batch:
//  1. analyse_kernel (a CTA per message's dtype detection, a warp per block's line checks): clears
//     the LL/LL128 candidates that a block's lines rule out, and detects each message's dtype from
//     its block 0, flat and for each layout still possible when the flat detection ends;
//  2. stats_kernel (a 128-thread group per block): histogram, zero planes, window, rANS table: the
//     block's plan, and its smallest mode but rANS;
//  3. rans_kernel (a warp per block, 8 or 16 per CTA): the rANS recurrence of each of the block's
//     streams in turn, words written back to front at the end of the block's scratch slot, and RANS
//     chosen if it is smaller; on small batches its warps without a recurrence compute the blocks'
//     XXH3 meanwhile;
//  4. encode_kernel (a group per block): XXH3 (unless rans_kernel did), the payload written
//     straight to its place in the frame (every block's size is known by then), and the table entry;
//  5. header_kernel (a CTA per message): the table checksum and the header.
// Small batches (fused_encode_fits: the blocks fit one wave of its groups) take three launches
// instead: analyse_kernel, then fused_encode_kernel, which does the work of 2-4 with a group per
// block and no grid-wide wait between the phases (section 2'), then header_kernel.
// Every rule that decides output bytes comes from codec/common, as in the CPU codec.
#include <cuda_pipeline.h>

#include <type_traits>

#include "common/block.h"
#include "common/detect.h"
#include "common/frame.h"
#include "common/layout.h"
#include "common/rans.h"
#include "device_util.cuh"
#include "kernels.h"
#include "xxh3_warp.cuh"

namespace zipnet::codec::cuda::detail {
namespace {

using namespace zipnet::codec::common;

// ---- per-message layout and dtype, as analyse_kernel left them ----
__device__ unsigned final_layout(const DevMsg& m) {
  return (m.layout_ok & 2) ? kLayoutLL128 : (m.layout_ok & 1) ? kLayoutLL : kLayoutFlat;
}
__device__ uint64_t final_flag(const DevMsg& m, unsigned layout) {
  if (layout == kLayoutLL128) return load_u64(m.src + kLL128Data);
  if (layout == kLayoutLL) return load_u32(m.src + kLLFlag1);
  return 0;
}
__device__ unsigned final_dtype(const EncodeArgs& a, const DevMsg& m, unsigned layout) {
  return a.forced_dtype >= 0 ? unsigned(a.forced_dtype) : m.dtype_by_layout[layout];
}

// Block b of a message of `size` bytes: where it starts and how long it is (a message's last
// block may be short).
struct BlockSpan {
  uint64_t off, len;
};
__device__ __forceinline__ BlockSpan block_span(uint64_t size, uint32_t b, unsigned block_log2) {
  const uint64_t bs = uint64_t(1) << block_log2, off = uint64_t(b) * bs;
  return {off, size - off < bs ? size - off : bs};
}

// Element i of a block in global memory (any alignment when !aligned).
__device__ __forceinline__ uint32_t load_elem(const uint8_t* blk, bool aligned, unsigned layout, unsigned es,
                                              uint32_t i) {
  if (aligned) return element_at(blk, layout, es, i);
  return load_element(es, blk + original_offset(layout, i * es));
}

// ============================== 1. analyse ==============================

// common::log2_q16 of 0..kDetectSampleBytes (every count and element count of a sample), filled
// by configure_encode from the same function: a lookup instead of 16 dependent 64-bit multiplies,
// which put about 20 us of latency into every batch's dtype detection.
__device__ uint32_t g_log2_q16[kDetectSampleBytes + 1];
// v <= kDetectSampleBytes: a sample holds at most that many bytes, so every count does too.
__device__ __forceinline__ uint32_t log2_q16_lookup(uint32_t v) { return g_log2_q16[v]; }

// Rows of DetectShared::hist. An fp16 symbol is the odd byte of its element, so the odd bytes'
// row is the fp16 histogram as well, and the opaque histogram is the even row plus the odd row:
// 7 atomics per 4 sample bytes instead of 9.
constexpr unsigned kRowEvenBytes = kDtypeOpaque, kRowBf16 = kDtypeBf16, kRowOddBytes = kDtypeFp16,
                   kRowFp32 = kDtypeFp32;

// analyse_kernel's shared state: a detection's sample, histograms and sums.
struct DetectShared {
  uint32_t hist[kNumDtypes][256];
  __align__(16) uint8_t sample[kDetectSampleBytes];
  uint32_t res_or[kNumDtypes][kAnalyseThreads / 32];  // a warp's residual bits (opaque's unused)
  uint64_t red[kNumDtypes][kAnalyseThreads / 32];     // a warp's entropy terms
  uint32_t skip;  // the layouts not to detect: those the line checks ruled out before the flat detection's end
};

// Residual bits of the complete elements of a sample, by dtype (opaque has none).
struct ResidualOr {
  uint32_t bf16 = 0, fp16 = 0, fp32 = 0;
};

// Counts the 4 sample bytes of little-endian word u (at a 4-byte aligned offset, all inside the
// sample) into every dtype's histogram at once.
__device__ __forceinline__ void count_sample_word(uint32_t (*hist)[256], uint32_t u, ResidualOr& ro) {
  atomicAdd(&hist[kRowEvenBytes][u & 0xFF], 1u);
  atomicAdd(&hist[kRowEvenBytes][(u >> 16) & 0xFF], 1u);
  atomicAdd(&hist[kRowOddBytes][(u >> 8) & 0xFF], 1u);
  atomicAdd(&hist[kRowOddBytes][u >> 24], 1u);
  atomicAdd(&hist[kRowBf16][symbol_of(kDtypeBf16, u & 0xFFFF)], 1u);
  atomicAdd(&hist[kRowBf16][symbol_of(kDtypeBf16, u >> 16)], 1u);
  atomicAdd(&hist[kRowFp32][symbol_of(kDtypeFp32, u)], 1u);
  ro.bf16 |= residual_of(kDtypeBf16, u & 0xFFFF) | residual_of(kDtypeBf16, u >> 16);
  ro.fp16 |= residual_of(kDtypeFp16, u & 0xFFFF) | residual_of(kDtypeFp16, u >> 16);
  ro.fp32 |= residual_of(kDtypeFp32, u);
}

// This thread's 16 bytes of a sample at p (16-byte aligned, in global or shared memory): those
// at offset 16 * threadIdx.x. One 16-byte load when all are inside the first len bytes; bytes at
// or past len read as zero (count_sample_chunk leaves them out).
__device__ __forceinline__ uint4 load_sample_chunk(const uint8_t* p, uint32_t len) {
  const uint32_t off = threadIdx.x * 16u;
  if (off + 16 <= len) return *reinterpret_cast<const uint4*>(p + off);
  uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
  for (uint32_t k = 0; k < 16; ++k)
    if (off + k < len) w[k / 4] |= uint32_t(p[off + k]) << (8 * (k % 4));
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Counts a chunk from load_sample_chunk: every byte inside the sample, and every element that
// lies whole inside it (the chunk that holds the sample's end may be partial).
__device__ __forceinline__ void count_sample_chunk(uint4 chunk, uint32_t len, uint32_t (*hist)[256], ResidualOr& ro) {
  const uint32_t off = threadIdx.x * 16u;
  const uint32_t word[4] = {chunk.x, chunk.y, chunk.z, chunk.w};
  if (off + 16 <= len) {
#pragma unroll
    for (int k = 0; k < 4; ++k) count_sample_word(hist, word[k], ro);
    return;
  }
#pragma unroll
  for (uint32_t k = 0; k < 4; ++k) {
    const uint32_t o = off + 4 * k, u = word[k];  // o is even: byte j's parity is j's
#pragma unroll
    for (uint32_t j = 0; j < 4; ++j)
      if (o + j < len) atomicAdd(&hist[(j & 1) ? kRowOddBytes : kRowEvenBytes][(u >> (8 * j)) & 0xFF], 1u);
#pragma unroll
    for (uint32_t j = 0; j < 4; j += 2)
      if (o + j + 2 <= len) {
        const uint32_t v = (u >> (8 * j)) & 0xFFFF;
        atomicAdd(&hist[kRowBf16][symbol_of(kDtypeBf16, v)], 1u);
        ro.bf16 |= residual_of(kDtypeBf16, v);
        ro.fp16 |= residual_of(kDtypeFp16, v);
      }
    if (o + 4 <= len) {
      atomicAdd(&hist[kRowFp32][symbol_of(kDtypeFp32, u)], 1u);
      ro.fp32 |= residual_of(kDtypeFp32, u);
    }
  }
}

// Zeroes the histograms for the next detect_parallel (a barrier must come between).
__device__ __forceinline__ void clear_detect_histograms(DetectShared& sh) {
  for (int k = threadIdx.x; k < kNumDtypes * 256; k += kAnalyseThreads) (&sh.hist[0][0])[k] = 0;
}

// common::detect_dtype on a sample of len bytes, each thread's chunk of it from
// load_sample_chunk, with the histograms and the entropy sums spread over the CTA (integer sums:
// the result is exactly the serial one). A thread counts 16 bytes for every dtype, then owns one
// symbol of every histogram; each warp leaves its residual bits and entropy terms in its own
// slots, so two barriers do. The histograms must be zero on entry (clear_detect_histograms, then a
// barrier); they are zero again on return. With layout_ok (the flat sample's detection), thread 0
// also reads the layouts still possible between the barriers, as late as it can while the second
// barrier still publishes them, and leaves those ruled out in sh.skip.
__device__ unsigned detect_parallel(DetectShared& sh, uint32_t len, uint4 chunk, const uint32_t* layout_ok) {
  static_assert(kDetectSampleBytes == 16 * kAnalyseThreads, "16 sample bytes per thread");
  uint32_t(*hist)[256] = sh.hist;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  ResidualOr ro;
  count_sample_chunk(chunk, len, hist, ro);
  ro.bf16 = warp_or(ro.bf16);
  ro.fp16 = warp_or(ro.fp16);
  ro.fp32 = warp_or(ro.fp32);
  if (lane == 0) {
    sh.res_or[kDtypeBf16][warp] = ro.bf16;
    sh.res_or[kDtypeFp16][warp] = ro.fp16;
    sh.res_or[kDtypeFp32][warp] = ro.fp32;
  }
  __syncthreads();
  if (layout_ok && tid == 0) sh.skip = ~*static_cast<const volatile uint32_t*>(layout_ok) & 3u;
  uint32_t count[kNumDtypes];
  count[kDtypeOpaque] = hist[kRowEvenBytes][tid] + hist[kRowOddBytes][tid];
  count[kDtypeBf16] = hist[kRowBf16][tid];
  count[kDtypeFp16] = hist[kRowOddBytes][tid];
  count[kDtypeFp32] = hist[kRowFp32][tid];
#pragma unroll
  for (unsigned d = 0; d < kNumDtypes; ++d) {
    const uint32_t n = len / element_size(d), c = count[d];
    const uint64_t term = warp_sum(n && c ? uint64_t(c) * (log2_q16_lookup(n) - log2_q16_lookup(c)) : 0);
    if (lane == 0) sh.red[d][warp] = term;
  }
  __syncthreads();
  clear_detect_histograms(sh);  // every read of them is behind the barrier
  uint64_t bits[kNumDtypes];
#pragma unroll
  for (unsigned d = 0; d < kNumDtypes; ++d) {
    const unsigned es = element_size(d);
    const uint32_t n = len / es;
    uint64_t entropy = 0;
    uint32_t res_or = 0;
    for (int w = 0; w < kAnalyseThreads / 32; ++w) {
      entropy += sh.red[d][w];
      if (d != kDtypeOpaque) res_or |= sh.res_or[d][w];
    }
    uint32_t nonzero_planes = 0;
    for (unsigned j = 0; j < residual_planes(d); ++j) nonzero_planes += ((res_or >> (8 * j)) & 0xFF) != 0;
    const uint64_t raw_bits = uint64_t(nonzero_planes) * n * 8 + uint64_t(len % es) * 8;
    bits[d] = entropy + (raw_bits << 16);
  }
  // The selection of common::detect_dtype.
  if (len == 0) return kDtypeOpaque;
  unsigned best = kDtypeOpaque;
  uint64_t best_bits = bits[0];
  for (unsigned d = kDtypeBf16; d < kNumDtypes; ++d)
    if (bits[d] < best_bits) {
      best = d;
      best_bits = bits[d];
    }
  const uint64_t raw_bits_q16 = (uint64_t(len) * 8) << 16;
  if (best_bits * 100 >= raw_bits_q16 * kDetectPercent) return kDtypeOpaque;
  return best;
}

// The layouts among `cand` (bit 0 LL, bit 1 LL128) that common::detect_layout's line rules (the
// flag words of common::ll_line_matches and ll128_line_matches) rule out in one block (bytes
// [off, off + blen) of the message at src), found by the lanes of one warp. A round loads
// kLineRounds lines of each layout still possible per lane, every load before any compare (the
// compiler kept each line's compare before the next line's loads: a memory latency per line), so a
// block of ordinary data is ruled out for both layouts in one round of loads.
// kAligned: src is 8-byte aligned, so each flag is one load.
constexpr int kLineRounds = 4;
template <bool kAligned>
__device__ uint32_t block_layout_fails(const uint8_t* src, uint64_t off, uint64_t blen, uint32_t cand) {
  const uint32_t lane = threadIdx.x & 31;
  auto u64_at = [](const uint8_t* p) { return kAligned ? *reinterpret_cast<const uint64_t*>(p) : load_u64(p); };
  auto u32_at = [](const uint8_t* p) { return kAligned ? *reinterpret_cast<const uint32_t*>(p) : load_u32(p); };
  const uint64_t flag128 = (cand & 2) ? u64_at(src + kLL128Data) : 0;
  const uint32_t flag_ll = (cand & 1) ? u32_at(src + kLLFlag1) : 0;
  // A zero flag rules its layout out too, but is tested after the first round's loads, so that
  // the flags' loads and the lines' go out together.
  const uint32_t zero_flag = ((cand & 2) && flag128 == 0 ? 2u : 0u) | ((cand & 1) && flag_ll == 0 ? 1u : 0u);
  uint32_t fail = 0;
  const uint64_t lines128 = blen / kLL128Line, lines_ll = blen / kLLLine;
  for (uint64_t k0 = 0;; k0 += 32 * kLineRounds) {
    const bool do128 = (cand & ~fail & 2) && k0 < lines128, do_ll = (cand & ~fail & 1) && k0 < lines_ll;
    if (!do128 && !do_ll) break;
    uint64_t f128[kLineRounds];
    uint32_t f1[kLineRounds], f2[kLineRounds];
#pragma unroll
    for (int u = 0; u < kLineRounds; ++u) {
      const uint64_t k = k0 + 32 * u + lane;
      const uint8_t* line128 = src + off + k * kLL128Line;
      const uint8_t* line_ll = src + off + k * kLLLine;
      f128[u] = do128 && k < lines128 ? u64_at(line128 + kLL128Data) : flag128;
      const bool ll = do_ll && k < lines_ll;
      f1[u] = ll ? u32_at(line_ll + kLLFlag1) : flag_ll;
      f2[u] = ll ? u32_at(line_ll + kLLFlag2) : flag_ll;
    }
    fail |= zero_flag;
    bool bad128 = false, bad_ll = false;
#pragma unroll
    for (int u = 0; u < kLineRounds; ++u) {
      bad128 |= f128[u] != flag128;
      bad_ll |= f1[u] != flag_ll || f2[u] != flag_ll;
    }
    fail |= (__any_sync(0xFFFFFFFFu, bad128) ? 2u : 0u) | (__any_sync(0xFFFFFFFFu, bad_ll) ? 1u : 0u);
  }
  return (fail | zero_flag) & cand;
}
__device__ uint32_t block_layout_fails(const uint8_t* src, uint64_t off, uint64_t blen, uint32_t cand) {
  return (uintptr_t(src) & 7) == 0 ? block_layout_fails<true>(src, off, blen, cand)
                                   : block_layout_fails<false>(src, off, blen, cand);
}

// Detection jobs go to CTAs [0, detect_ctas) and the other blocks' line checks to the rest, so that
// neither waits for the other (when the grid has at least two CTAs).
__device__ uint32_t detect_ctas(const EncodeArgs& a) {
  if (a.forced_dtype >= 0) return 0;
  const uint32_t half = gridDim.x / 2 ? gridDim.x / 2 : 1;
  return a.count < half ? a.count : half;
}

// One message's dtype detection (CTA-wide): common::detect_dtype for the flat layout, then for each
// of LL and LL128 that the line checks (the other CTAs', block 0's among them) have not ruled out
// by the time the flat detection is done. A layout ruled out later costs a detection never used;
// one still possible when the checks end was detected (layout_ok's bits are only ever cleared).
// A 16-byte aligned flat sample goes straight from global memory into each thread's registers
// (else through shared memory).
__device__ void detect_message(const EncodeArgs& a, DevMsg& m, DetectShared& sh) {
  const int tid = threadIdx.x;
  const uint64_t blen = block_span(m.size, 0, a.block_log2).len;
  const uint8_t* src = m.src;
  const uint32_t flat_len = uint32_t(blen < kDetectSampleBytes ? blen : kDetectSampleBytes);
  const bool direct = (uintptr_t(src) & 15) == 0;
  uint4 chunk = make_uint4(0, 0, 0, 0);
  if (direct) chunk = load_sample_chunk(src, flat_len);
  else copy_bytes_one_round<kDetectSampleBytes, kAnalyseThreads>(sh.sample, src, flat_len, tid);
  if (!direct) {
    __syncthreads();
    chunk = load_sample_chunk(sh.sample, flat_len);
  }
  uint32_t skip = 0;  // read from sh.skip after the flat detection, before the barrier after it
  for (unsigned layout = kLayoutFlat; layout <= kLayoutLL128; ++layout) {
    uint32_t len = flat_len;
    if (layout != kLayoutFlat) {
      if (skip & (layout == kLayoutLL ? 1u : 2u)) continue;
      const uint64_t glen = gathered_size(layout, blen);
      len = uint32_t(glen < kDetectSampleBytes ? glen : kDetectSampleBytes);
#pragma unroll 8
      for (uint32_t k = tid; k < len; k += blockDim.x) sh.sample[k] = src[original_offset(layout, k)];
      __syncthreads();
      chunk = load_sample_chunk(sh.sample, len);
    }
    const unsigned d = detect_parallel(sh, len, chunk, layout == kLayoutFlat ? &m.layout_ok : nullptr);
    if (layout == kLayoutFlat) skip = sh.skip;
    if (tid == 0) m.dtype_by_layout[layout] = uint8_t(d);
    __syncthreads();  // before the next detection's writes to sh
  }
}

// fused_encode_kernel's published sizes start from zero (its ticket is its own: it runs beside
// this kernel).
__device__ __forceinline__ void reset_published_sizes(const EncodeArgs& a) {
  for (uint32_t i = blockIdx.x * kAnalyseThreads + threadIdx.x; i < a.total_blocks; i += gridDim.x * kAnalyseThreads)
    a.published[i] = 0;
}

// Detection jobs (a CTA per message, unless the dtype is forced), and the line checks of every
// block, a warp per block: each clears from its message's layout_ok the candidates its block
// rules out. (A CTA per block, one block after another, took a round of loads per block, and a CTA
// could hold several messages' detections in a row: 38 us on 128 x 512 KiB, H200 2026-11-30.)
__global__ void __launch_bounds__(kAnalyseThreads) analyse_kernel(EncodeArgs a) {
  start_after_previous_kernel();
  static_assert(kAnalyseThreads == 256, "one thread per symbol in detect_parallel");
  __shared__ DetectShared sh;
  if (a.fused) reset_published_sizes(a);
  const uint32_t ndetect = detect_ctas(a);
  if (blockIdx.x < ndetect) {
    clear_detect_histograms(sh);
    __syncthreads();
    for (uint32_t mi = blockIdx.x; mi < a.count; mi += ndetect)
      if (a.msgs[mi].nblk) detect_message(a, a.msgs[mi], sh);
  }
  // The checks: over the CTAs after the detection ones, or over all when there are none.
  const uint32_t first_cta = gridDim.x > ndetect ? ndetect : 0;
  if (blockIdx.x < first_cta) return;
  constexpr uint32_t kWarps = kAnalyseThreads / 32;
  const uint32_t ctas = gridDim.x - first_cta;
  const uint32_t warp = threadIdx.x >> 5;
  for (uint32_t item = (blockIdx.x - first_cta) + warp * ctas; item < a.total_blocks; item += ctas * kWarps) {
    DevMsg& m = a.msgs[owner_of(a.msgs, a.count, item)];
    const uint32_t b = item - m.first_block;
    // A stale read only costs a redundant check; the lanes must agree (block_layout_fails' votes).
    const uint32_t cand = __shfl_sync(0xFFFFFFFFu, *static_cast<volatile uint32_t*>(&m.layout_ok), 0);
    if (!cand) continue;
    const BlockSpan span = block_span(m.size, b, a.block_log2);
    const uint32_t fail = block_layout_fails(m.src, span.off, span.len, cand);
    if ((threadIdx.x & 31) == 0 && fail) atomicAnd(&m.layout_ok, ~fail);
  }
}

// ============================== 2. encode ==============================

// A group's shared state in stats_kernel: the histogram and the plan made from it.
struct StatsShared {
  uint32_t hist[256];
  uint32_t freq[256];
  uint64_t red64[kEncodeGroupThreads / 32];
  uint32_t res_or;
  uint32_t present[kEncodeGroupThreads / 32][8];  // each warp's PresentSymbols
};

// A group's shared state in encode_kernel: the hash, rans_kernel's result and the payload writer's.
// (fused_encode_kernel uses all but hash_parts. Moved out into encode_kernel's own state, the same
// instructions at other shared-memory offsets encoded 64 MiB 0.99x as fast, H200 2026-12-01.)
struct BlockShared {
  uint32_t freq[256];
  uint64_t hash_parts[(1u << kMaxStagedLog2) / xxh3::kBlockLen][8];  // XXH3 stripe sums
  uint64_t red64[kEncodeGroupThreads / 32];
  uint32_t red32[kEncodeGroupThreads / 32];
  uint32_t states[kLanes * kMaxStreams];      // final states, global lane order
  uint32_t state_bit_words[kLanes * kMaxStreams];  // write_state_area's bit stream (at most 62 words)
  uint32_t hash_lo;
  uint32_t present[kEncodeGroupThreads / 32][8];  // each warp's PresentSymbols
};

// Which of the 256 symbols have a frequency (bit s % 32 of word s / 32), built by every lane of a
// full warp from the frequencies in shared memory, into 8 words of shared memory of the warp's own.
// The table's symbol range and its zero runs come from it with bit operations:
// common::zero_entry_run walks back to a run's start a symbol at a time, and where a block's
// symbols have a gap (the sign bit splits a bf16 block's exponents in two) that walk was 16% of
// stats_kernel's stall samples (16 x 512 KiB, ncu 2026-11-30). The words are in shared memory, not
// registers, so that the searches below index them: unrolled over 8 registers, the searches
// inlined at every table-size call were 710 of the fused encoder's ~7,900 instructions run per
// dtype, fetched cold once a block (ncu 2026-12-02).
struct PresentSymbols {
  const uint32_t* bits;
  __device__ PresentSymbols(const uint32_t* freq, uint32_t (&store)[8]) : bits(store) {
    const uint32_t lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t b = __ballot_sync(0xFFFFFFFFu, freq[32 * j + lane] != 0);
      if (lane == uint32_t(j)) store[j] = b;
    }
    __syncwarp();
  }
  // The last present symbol below s (-1: none; 0 <= s <= 256), and the first above s (256: none;
  // -1 <= s <= 255): word s / 32 first, then whole words.
  __device__ int last_below(int s) const {
    int j = s >> 5;
    uint32_t m = j < 8 ? bits[j] & ((1u << (s & 31)) - 1u) : 0u;
#pragma unroll 1
    while (m == 0 && j > 0) m = bits[--j];
    return m ? 32 * j + 31 - __clz(m) : -1;
  }
  __device__ int first_above(int s) const {
    int j = (s + 1) >> 5;
    uint32_t m = j < 8 ? bits[j] & (~0u << ((s + 1) & 31)) : 0u;
#pragma unroll 1
    while (m == 0 && j < 7) m = bits[++j];
    return m ? 32 * j + __ffs(m) - 1 : 256;
  }
  // common::table_entry_bytes of s for the table of [lo, hi), and in *run the zero_entry_run that
  // common::write_freq_entry needs.
  __device__ uint32_t entry_bytes(const uint32_t* freq, int s, int lo, int hi, int* run) const {
    *run = 0;
    if (s < lo || s >= hi) return 0;
    const uint32_t f = freq[s];
    if (!f) *run = zero_entry_run_in(s, last_below(s) + 1, first_above(s));
    return freq_entry_bytes(f, *run);
  }
};

// Histogram of the symbols and OR of the residuals of n elements, by `nthreads` threads.
// dtype and layout are template parameters: decided per element at run time, they made this loop
// mostly branches (ncu, 2026-11-29). syms: where a flat block's symbols go, one byte each
// (rans_kernel reads them instead of re-reading the block's elements), or nullptr. U: 16-byte
// loads in flight per thread before the atomics.
template <unsigned dtype, unsigned layout, int U>
__device__ __forceinline__ void histogram_pass(StatsShared& sh, const uint8_t* src, bool aligned16, uint32_t n,
                                               uint64_t blen, int t, int nthreads, uint8_t* syms) {
  constexpr unsigned es = esize_of(dtype);
  constexpr bool kFlat = layout == kLayoutFlat;
  uint32_t ro = 0;
  uint32_t done = 0;  // elements covered by the vector path
  // The vector path ORs the raw words and takes residual_of once at the end: residual_of only
  // shifts and masks bits, so it commutes with OR (per element, it was 13% of this kernel's stall
  // samples on 64 MiB, ncu 2026-11-30).
  uint32_t raw_or = 0;
  if (aligned16) {
    // 16 original bytes at a time; the data words of a line are those the layout keeps.
    const uint64_t nvec = kFlat ? (uint64_t(n) * es) / 16 : blen / 16;
    const uint4* v4 = reinterpret_cast<const uint4*>(src);
    for (uint64_t q0 = t; q0 < nvec; q0 += U * nthreads) {
      uint4 vu[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (q0 + u * nthreads < nvec) vu[u] = v4[q0 + u * nthreads];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint64_t q = q0 + u * nthreads;
        if (q >= nvec) break;
        const uint4 v = vu[u];
        uint32_t w[4] = {v.x, v.y, v.z, v.w};
        uint32_t packed[4] = {0, 0, 0, 0};  // flat: the 16 / es symbols of these 16 bytes
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          if (layout == kLayoutLL && (k & 1)) continue;
          if (layout == kLayoutLL128 && (q & 7) == 7 && k >= 2) continue;
          if (es == 4) {
            const uint32_t s0 = symbol_of(dtype, w[k]);
            atomicAdd(&sh.hist[s0], 1u);
            raw_or |= w[k];
            packed[0] |= s0 << (8 * k);
          } else if (es == 2) {
            const uint32_t s0 = symbol_of(dtype, w[k] & 0xFFFF), s1 = symbol_of(dtype, w[k] >> 16);
            atomicAdd(&sh.hist[s0], 1u);
            atomicAdd(&sh.hist[s1], 1u);
            raw_or |= w[k];
            packed[k / 2] |= (s0 | (s1 << 8)) << (16 * (k & 1));
          } else {
#pragma unroll
            for (int b = 0; b < 4; ++b) atomicAdd(&sh.hist[(w[k] >> (8 * b)) & 0xFF], 1u);
            packed[k] = w[k];
          }
        }
        if (kFlat && syms) {
          if constexpr (es == 4) reinterpret_cast<uint32_t*>(syms)[q] = packed[0];
          else if constexpr (es == 2) reinterpret_cast<uint2*>(syms)[q] = make_uint2(packed[0], packed[1]);
          else reinterpret_cast<uint4*>(syms)[q] = v;
        }
      }
    }
    done = kFlat ? uint32_t(nvec * 16 / es) : n;
    ro = residual_of(dtype, es == 2 ? (raw_or & 0xFFFF) | (raw_or >> 16) : raw_or);
  }
  for (uint32_t i = done + t; i < n; i += nthreads) {
    uint32_t v = load_elem(src, false, layout, es, i);
    atomicAdd(&sh.hist[symbol_of(dtype, v)], 1u);
    ro |= residual_of(dtype, v);
    if (kFlat && syms) syms[i] = symbol_of(dtype, v);
  }
  ro = warp_or(ro);
  if ((t & 31) == 0 && ro) atomicOr(&sh.res_or, ro);
}

// common::quantize_freqs with 256 / g.size symbols per thread (2 in a 128-thread group, 8 in a
// warp). The fix-up of the sum is the serial rule's: the largest f (ties: lowest symbol) takes a
// shortfall or gives up the excess; when it cannot give up all of it (rare), thread 0 runs the
// serial rule itself.
__device__ __forceinline__ void quantize_parallel(const Group& g, StatsShared& sh, uint32_t n) {
  const int per = 256 / g.size;
  uint64_t key = 0, sum = 0;
  for (int h = 0; h < per; ++h) {
    const uint32_t s = g.tid + h * g.size, c = sh.hist[s];
    uint32_t f = c ? uint32_t((uint64_t(c) * kProbScale + n / 2) / n) : 0;
    if (c && f == 0) f = 1;
    sh.freq[s] = f;
    sum += f;
    if (f) {
      const uint64_t k = (uint64_t(f) << 8) | (255 - s);
      key = k > key ? k : key;
    }
  }
  sum = group_sum(g, sum, sh.red64);
  if (sum == kProbScale) return;
  key = group_max(g, key, sh.red64);
  const uint32_t top = 255 - uint32_t(key & 0xFF), ftop = uint32_t(key >> 8);
  if (sum < kProbScale) {
    if (g.tid == 0) sh.freq[top] = ftop + uint32_t(kProbScale - sum);
  } else if (ftop - 1 >= sum - kProbScale) {
    if (g.tid == 0) sh.freq[top] = ftop - uint32_t(sum - kProbScale);
  } else if (g.tid == 0) {
    quantize_freqs(sh.hist, n, sh.freq);
  }
  g.sync();
}

struct BlockPlan {
  BlockStats st;
  unsigned dtype, layout, es, rp;
  uint32_t base;
  uint64_t window_section;
  uint32_t lo, hi, ftab;
};

// Blocks whose symbols stats_kernel writes to the front of their scratch slot for rans_kernel:
// flat ones. (rans_kernel's words fill the slot from the far end, at most a block's size of them;
// encode_kernel copies them into the frame.)
__device__ __forceinline__ bool symbols_in_slot(const BlockPlan& pl, unsigned modes) {
  return (modes & (1u << kModeRans)) && pl.layout == kLayoutFlat && pl.st.n <= kRansSymStage;
}

// common::rans_divisor of every frequency 0..M, filled by configure_encode: a lookup instead of a
// 64-bit division (a software routine on the GPU) for each of a block's 256 symbols.
__device__ RansDivisor g_rans_divisors[kProbScale + 1];

// A symbol's encoder constants, packed for one 16-byte shared-memory load (common::rans_divisor):
// x: the divisor's magic; y: the renormalisation bound f << 21 (a lane emits a word when
// x >= bound); z: (M - f) << 5 | post_shift (rans_divide reads only its low 5 bits); w: cum. Each
// is an operand as loaded but M - f, which takes one shift: the step is a chain of few operations.
__device__ __forceinline__ uint4 pack_enc_symbol(uint32_t f, uint32_t cum) {
  const RansDivisor d = g_rans_divisors[f];
  const uint32_t bound = f >= kProbScale ? 0xFFFFFFFFu : f << kRenormShift;  // f = M: x never grows
  return make_uint4(d.magic, bound, ((kProbScale - f) << 5) | d.post_shift, cum);
}
// The entry of a step where a lane has no element: no word, x unchanged (x + q * 0 + 0). Only
// used before a lane's first element, where x < 2^17 is below the bound.
constexpr unsigned kNoSymbol = 256;
__device__ __forceinline__ uint4 enc_no_symbol() { return make_uint4(0, 0xFFFFFFFFu, 0, 0); }

struct RansWarpShared {
  uint4 enc[257];  // pack_enc_symbol of each symbol, then enc_no_symbol
};

// The packed encoder table of the frequencies freq[0..255] into enc, by one warp: 8 symbols per
// lane, a warp scan places their cum. Ends with the warp synchronised.
template <class T>
__device__ __forceinline__ void build_enc_table(uint4* enc, const T* freq, int lane) {
  uint32_t f[8], local = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    f[k] = freq[8 * lane + k];
    local += f[k];
  }
  uint32_t inc = local;
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t t = __shfl_up_sync(0xFFFFFFFFu, inc, o);
    if (lane >= o) inc += t;
  }
  uint32_t c = inc - local;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    enc[8 * lane + k] = pack_enc_symbol(f[k], c);
    c += f[k];
  }
  if (lane == 0) enc[kNoSymbol] = enc_no_symbol();
  __syncwarp();
}

// A block's mode and payload size once its recurrences have run, by the CPU codec's rule
// (common::mode_sizes, common::choose_mode). ok: every stream was coded (none stopped at the
// limit); state_bytes: the state area's size; run_bytes: rans_run_bytes of all the words; st:
// with the plan's plane mask.
__device__ __forceinline__ BlockRec mode_after_rans(const BlockStats& st, uint64_t window_section, uint32_t ftab, bool ok,
                                                    uint32_t state_bytes, uint32_t run_bytes, unsigned modes) {
  const uint64_t rans_section = ok ? uint64_t(ftab) + state_bytes + run_bytes : 0;
  const ModeSizes sizes = mode_sizes(st, window_section, rans_section);
  const unsigned mode = choose_mode(sizes, modes | 1u);
  return BlockRec{uint32_t(sizes.size[mode]), mode};
}

// How rans_encode_warp's warp takes its block's streams:
//  - kOne: a block's only stream (fused_rans);
//  - kInTurn: all of a block's streams, one or two, stream 1 first (rans_kernel);
//  - kPaired: one of two streams, while another warp codes the other (fused_rans).
// Each is its own loop. kOne is format 2's recurrence, with none of the others' bookkeeping (with
// kPaired's in its loop, 16 x 512 KiB of fp32, a stream a block, encoded 0.93x as fast; H200
// 2026-12-01). kInTurn is one loop over both streams' groups, not a loop over the streams around
// the recurrence: what that loop kept for its next turn cost rans_kernel's wide form (128
// registers) spills inside the recurrence, and as a call, spills around it (0.96x on 64 MiB).
enum class StreamRun { kOne, kInTurn, kPaired };
// rans_encode_warp's arguments beyond one stream's (unused with kOne).
struct TwoStreams {
  // kInTurn: the elements from `split` are stream 1's (none when split = n: one stream); x0 is
  // stream 1's lane start state and x0_stream0 stream 0's (both stream 0's when there is one).
  // Out: stream 1's final state and words (x_out, words_out: stream 0's state, all words).
  uint32_t split, x0_stream0, x_stream1, words_stream1;
  // kPaired: the k-th word goes to first_word[word_step * k], and both warps count their words in
  // words_total (shared memory) and stop on the sum (fused_rans says why their words then fit).
  int word_step;
  uint32_t* words_total;
};

// rANS encode of one stream, elements [e0, e0 + n) of a block, by one warp (format §4.2): lane l
// starts at x0 and codes the elements e0 + 32t + l in descending steps t; before coding, lanes
// whose state is too large emit a word; within a step lanes emit in descending order, and the
// k-th word emitted goes to first_word[-k]: back to front (first_word just below the words' end)
// leaves them in the order the decoder reads them. Stops early (returns false) once the section
// would reach `limit` bytes (prefix: the bytes besides these words): it cannot win then.
// kInTurn: [e0, e0 + n) is the whole block (e0 = 0), and its streams are coded as one run of
// groups: stream 1's, then stream 0's with each lane's state restarted at x0_stream0. Stream 0's
// words go on below stream 1's, and the stop counts both. The run is over virtual steps: stream
// 0's steps, padded at the top to an even number of groups (base1 steps, the padding `gap`
// elements), then stream 1's, padded likewise. So a group lies in one stream, stream 1's last
// group ends a turn of the main loop (the restart costs the loop nothing), and each stream's
// padding comes before its first element (enc_no_symbol's condition).
// The recurrence is the only sequential part of encoding, and a small batch has about two warps
// per SM, so each step's instruction count is its latency. The loop therefore does no loads and
// no branches: symbols are fetched two groups of G steps ahead and their packed constants one
// group ahead, into registers (fully unrolled, constant indices), and groups are aligned so that
// the top one is the only one with steps past the end (those take enc_no_symbol).
// Where rans_encode_warp reads a block's symbols: computed from its elements at src; bytes at syms
// in shared memory; or bytes at syms in global memory (the block's slot), streamed through the
// warp's ring in shared memory (kRansRingGroups groups of steps, each copied with cp.async
// kRansRingGroups - 1 groups before the recurrence needs it: read straight from global memory,
// two groups ahead, the symbol loads were 21% of rans_kernel's stall samples on 64 MiB, ncu
// 2026-11-30).
enum class SymbolSource { kElements, kShared, kRing };
constexpr int kRansGroupSteps = 8;  // G: steps per group of rans_encode_warp
constexpr int kRansRingGroups = 8;
constexpr uint32_t kRansRingBytes = kRansRingGroups * kRansGroupSteps * 32;

template <unsigned dtype, unsigned layout, SymbolSource kSource, StreamRun kRun>
__device__ __forceinline__ bool rans_encode_warp(const uint4* enc, const uint8_t* src, bool aligned, const uint8_t* syms,
                                                 uint8_t* ring, uint32_t e0, uint32_t n, uint32_t x0, uint16_t* first_word,
                                                 TwoStreams& two, uint64_t prefix, uint64_t limit, uint32_t* x_out,
                                                 uint32_t* words_out) {
  const int lane = threadIdx.x & 31;
  constexpr unsigned es = esize_of(dtype);
  constexpr bool kInTurn = kRun == StreamRun::kInTurn, kPaired = kRun == StreamRun::kPaired;
  if constexpr (kSource != SymbolSource::kElements) syms += e0;  // e0 is whole steps: the ring's copies stay aligned
  constexpr int G = kRansGroupSteps, R = kRansRingGroups;
  const auto pad_pairs = [](uint32_t elements) { return int((elements + 32 * 2 * G - 1) / (32 * 2 * G)) * (2 * G); };
  const int base1 = kInTurn ? pad_pairs(two.split) : 0;  // stream 1's first virtual step
  const uint32_t gap = kInTurn ? 32 * uint32_t(base1) - two.split : 0;
  const int steps = kInTurn ? base1 + pad_pairs(n - two.split) : int((n + 31) / 32);
  const int gtop = (steps - 1) / G * G + G - 1;  // top step of the first group
  const int groups = (gtop + 1) / G;
  // A group's elements: virtual step t's lane l is element 32t + l - shift, one of the group's
  // stream if below `end`.
  const auto shift_of = [&](int top) { return kInTurn && top >= base1 ? gap : 0u; };
  const auto end_of = [&](int top) { return kInTurn && top < base1 ? two.split : n; };
  // kRing: group k (top step gtop - G k, bytes from 32 (gtop - G k - G + 1)) goes to ring slot
  // k % R; each lane copies 8 of its 256 bytes. One cp.async commit per group, empty past the last.
  const auto ring_copy = [&](int k) {
    if (k < groups) {
      const int top = gtop - G * k;
      const uint32_t at = 32 * uint32_t(top - G + 1) - shift_of(top) + 8 * lane;  // one 64-bit add
      __pipeline_memcpy_async(ring + (k % R) * (G * 32) + 8 * lane, syms + at, 8);
    }
    __pipeline_commit();
  };
  if constexpr (kSource == SymbolSource::kRing)
    for (int k = 0; k < R - 1; ++k) ring_copy(k);
  auto load_symbols = [&](int top, uint32_t (&v)[G]) {
    const uint8_t* from = syms;  // where element i's symbol byte is, at from[i - first]
    const uint32_t shift = shift_of(top), end = end_of(top);
    uint32_t first = 0;
    if constexpr (kSource == SymbolSource::kRing) {
      const int k = (gtop - top) / G;  // the calls come in this order, k = 0, 1, ...
      if (k >= groups) {                // past the last group: never coded
#pragma unroll
        for (int j = 0; j < G; ++j) v[j] = kNoSymbol;
        return;
      }
      __pipeline_wait_prior(R - 2);  // groups 0..k have arrived (R - 1 + k committed)
      __syncwarp();                  // and every lane's copies are visible
      from = ring + (k % R) * (G * 32);
      first = uint32_t(top - G + 1) * 32 - shift;
      ring_copy(k + R - 1);  // into group k - 1's slot, which the previous call has read
    }
    const auto symbol = [&](uint32_t i) {
      if constexpr (kSource == SymbolSource::kElements) return symbol_of(dtype, load_elem(src, aligned, layout, es, e0 + i));
      else return uint32_t(from[i - first]);
    };
    if (top >= G - 1 && uint32_t(top) * 32 + 31 - shift < end) {  // the whole group is in its stream: no checks
#pragma unroll
      for (int j = 0; j < G; ++j) v[j] = symbol(uint32_t(top - j) * 32 + lane - shift);
      return;
    }
#pragma unroll
    for (int j = 0; j < G; ++j) {
      const int t = top - j;
      const uint32_t i = uint32_t(t) * 32 + lane - shift;
      v[j] = t >= 0 && i < end ? symbol(i) : kNoSymbol;  // t < 0: past the last group, never coded
    }
  };
  auto look_up = [&](const uint32_t (&sym)[G], uint4 (&e)[G]) {
#pragma unroll
    for (int j = 0; j < G; ++j) e[j] = enc[sym[j]];
  };
  uint32_t sym_ahead[G];  // symbols of the group after the next
  uint4 ea[G], eb[G];     // constants of this group and the next, alternately
  const uint32_t above = ~((2u << lane) - 1u);  // lanes that emit before this one in a step
  const int step = kPaired ? two.word_step : -1;
  uint32_t x = x0, wpos = 0;  // x0: L + this lane's seed
  // kPaired: the next word's index times the stream's direction, kept so that a word's store
  // address is one operation from its index (a run-time multiply by the direction before each
  // store was on its issue path).
  int spos = 0;
  uint32_t added = 0, other_words = 0;  // kPaired: this warp's words in words_total; lane 0: the other stream's
  auto code_group = [&](const uint4 (&cur)[G]) {
    // A step's word is stored K steps later: in-order issue would otherwise wait at each store
    // for its address (ballot, popcount, add), which is off the recurrence's chain.
    constexpr int K = 4;
    uint32_t word[K], at[K];
    bool has[K];
#pragma unroll
    for (int j = 0; j < G; ++j) {
      const uint4 e = cur[j];
      const bool emit = x >= e.y;
      const uint32_t mask = __ballot_sync(0xFFFFFFFFu, emit);
      if (j >= K && has[j % K]) first_word[kPaired ? int(at[j % K]) : -int(at[j % K])] = uint16_t(word[j % K]);
      has[j % K] = emit;
      word[j % K] = x;
      at[j % K] = kPaired ? uint32_t(spos + step * int(__popc(mask & above))) : wpos + __popc(mask & above);
      x = emit ? x >> 16 : x;
      if constexpr (kPaired) spos += step * int(__popc(mask));
      else wpos += __popc(mask);
      // x' = (q << 11) + (x - q f) + cum = (x + cum) + q (M - f), with q = x / f; x + cum is
      // added beside the division, off the chain.
      const uint32_t x_cum = x + e.w;
      const uint32_t q = rans_divide(x, RansDivisor{e.x, e.z});
      x = x_cum + q * (e.z >> 5);
    }
#pragma unroll
    for (int k = 0; k < K; ++k)
      if (has[(G + k) % K]) first_word[kPaired ? int(at[(G + k) % K]) : -int(at[(G + k) % K])] = uint16_t(word[(G + k) % K]);
    if constexpr (!kPaired) return prefix + 2ull * wpos < limit;  // else rANS cannot win: stop
    // Both streams' words: the other's as of this warp's previous add, so that the add's latency
    // stays off the chain (a lower bound on its words all the same).
    wpos = uint32_t(step * spos);
    const uint32_t other = __shfl_sync(0xFFFFFFFFu, other_words, 0);
    // Every lane adds, lane 0 this warp's new words to the total (words_total[0]) and the others 0
    // to slots of their own: no branch around the add. (Lane 0's add alone, and the multiply by
    // the direction before each store, made a two-stream block's step 1.18x slower than a
    // one-stream block's; without them 16 x 512 KiB of bf16 encoded 1.029x faster, fp16 1.041x,
    // H200 2026-12-01.)
    other_words = atomicAdd(two.words_total + lane, lane ? 0u : wpos - added) - added;
    added = wpos;
    return prefix + 2ull * (wpos + other) < limit;
  };
  load_symbols(gtop, sym_ahead);
  look_up(sym_ahead, ea);
  load_symbols(gtop - G, sym_ahead);
  bool ok = true;
  int top = gtop;
  // kInTurn: stream 1's groups down to base1, then stream 0's (bottom 0); else the one pass.
  for (int bottom = base1;; bottom = 0) {
    // Two groups per iteration, so that the constants alternate between ea and eb without copies.
    for (; top >= bottom; top -= 2 * G) {
      look_up(sym_ahead, eb);
      load_symbols(top - 2 * G, sym_ahead);
      if (!(ok = code_group(ea)) || top - G < bottom) break;
      look_up(sym_ahead, ea);
      load_symbols(top - 3 * G, sym_ahead);
      if (!(ok = code_group(eb))) break;
    }
    if (!kInTurn || !ok || bottom == 0) break;
    two.x_stream1 = x;  // stream 1 is done: stream 0 next
    two.words_stream1 = wpos;
    x = two.x0_stream0;
  }
  if constexpr (kSource == SymbolSource::kRing) __pipeline_wait_prior(0);  // no copy may land in the next block's ring
  *x_out = x;
  *words_out = wpos;
  return ok;
}

// Elements 0..3 at p (aligned to 4 * es) by one load of 4, 8 or 16 bytes.
template <unsigned es>
__device__ __forceinline__ void load_4_elements(const uint8_t* p, uint32_t (&v)[4]) {
  if constexpr (es == 4) {
    const uint4 w = *reinterpret_cast<const uint4*>(p);
    v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
  } else if constexpr (es == 2) {
    const uint2 w = *reinterpret_cast<const uint2*>(p);
    v[0] = w.x & 0xFFFF, v[1] = w.x >> 16, v[2] = w.y & 0xFFFF, v[3] = w.y >> 16;
  } else {
    const uint32_t w = *reinterpret_cast<const uint32_t*>(p);
    v[0] = w & 0xFF, v[1] = (w >> 8) & 0xFF, v[2] = (w >> 16) & 0xFF, v[3] = w >> 24;
  }
}

// The low min(4, count) bytes of word at p: one store when they are 4 and p is aligned. (The byte
// stores spelled out: as a loop they compiled to about 100 instructions a call.)
__device__ __forceinline__ void store_up_to_4(uint8_t* p, uint32_t word, uint32_t count) {
  if (count >= 4 && (uintptr_t(p) & 3) == 0) {
    *reinterpret_cast<uint32_t*>(p) = word;
    return;
  }
  if (count > 0) p[0] = uint8_t(word);
  if (count > 1) p[1] = uint8_t(word >> 8);
  if (count > 2) p[2] = uint8_t(word >> 16);
  if (count > 3) p[3] = uint8_t(word >> 24);
}

// Residual plane 0 of 16 consecutive bf16/fp16 elements as one 16-byte word. w: 12 words of the
// stage from a 16-byte boundary; the elements start at byte 4 * W + 2 * H of them (H = 0 or 1).
template <unsigned dtype, int W>
__device__ __forceinline__ uint4 plane0_of_16(const uint32_t (&w)[12], unsigned half_shift) {
  uint32_t out[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint32_t lo = __funnelshift_r(w[W + 2 * k], w[W + 2 * k + 1], half_shift);
    const uint32_t hi = __funnelshift_r(w[W + 2 * k + 1], w[W + 2 * k + 2], half_shift);
    // The four elements' low bytes, and (bf16) their high bytes, each gathered with one byte
    // permute: residual_of is the low byte (fp16), or its low 7 bits and the sign (bf16). (Shifts
    // and masks per element took 86 instructions a 16-byte turn, these 33: 16 x 512 KiB of bf16
    // encoded 1.013x faster, 64 MiB 1.017x; H200 2026-12-01.)
    const uint32_t lows = __byte_perm(lo, hi, 0x6420);
    if constexpr (dtype == kDtypeBf16) out[k] = (lows & 0x7F7F7F7Fu) | (__byte_perm(lo, hi, 0x7531) & 0x80808080u);
    else out[k] = lows;
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

// The plane writers below are not inlined, so the compiler cannot tell that the stage is shared
// memory and the frame global memory: it emits generic loads and stores. kSpaces: a shared-memory
// load from the stage and global stores to the frame instead (the stage is not written while the
// writers run: a barrier comes before them). encode_kernel takes them (a 64 MiB encode's block
// kernels 1.012x faster), fused_encode_kernel not (there 16 x 512 KiB measured 0.994x; H200
// 2026-11-30).
template <bool kSpaces>
__device__ __forceinline__ uint4 stage_load16(const void* p) {
  if constexpr (!kSpaces) return *static_cast<const uint4*>(p);
  uint4 v;
  asm("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "r"(uint32_t(__cvta_generic_to_shared(p))));
  return v;
}
template <bool kSpaces>
__device__ __forceinline__ void frame_store(uint4* p, uint4 v) {
  if constexpr (!kSpaces) *p = v;
  else asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
template <bool kSpaces>
__device__ __forceinline__ void frame_store(uint32_t* p, uint32_t v) {
  if constexpr (!kSpaces) *p = v;
  else asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// bf16 and fp16 from the stage (one residual plane): plane bytes [head, head + 16 * chunks) with
// 16-byte stores, head being where the plane reaches a 16-byte boundary. Each thread takes 16
// elements a turn, from three 16-byte shared-memory loads; the element offset within them (a
// multiple of 2 bytes, the same for the whole block) picks one of four unrolled forms. Reads at
// most 14 bytes past the last element it codes: the stage has 16 bytes of slack. Not inlined (nor
// write_planes_fp32 in encode_kernel): inlined, they cost encode_kernel spills, and a 64 MiB encode
// ran at 263 instead of 292 GB/s (H200 2026-11-30). The fused encoder inlines the fp32 writer
// alone (write_planes_fp32_inline): 16 x 512 KiB of fp32 1.018x, bf16 unchanged; this one inlined
// there measured 0.998x on bf16 (H200 2026-11-30).
template <unsigned dtype, bool kSpaces>
__device__ __noinline__ void write_plane0_16(const uint8_t* stage, uint8_t* plane, uint32_t head, uint32_t chunks, int t) {
  const uint32_t first = 2 * head;  // byte of the stage where element `head` starts
  const uint32_t base16 = first / 16, within = first % 16;
  const unsigned half_shift = 8 * (within & 3);
  const uint4* s4 = reinterpret_cast<const uint4*>(stage) + base16;
  uint4* d4 = reinterpret_cast<uint4*>(plane + head);
  const auto run = [&](auto word_offset) {
    constexpr int W = decltype(word_offset)::value;
    const auto turn = [&](uint32_t c) {
      const uint4 a = stage_load16<kSpaces>(s4 + 2 * c), b = stage_load16<kSpaces>(s4 + 2 * c + 1);
      const uint4 e = W || half_shift ? stage_load16<kSpaces>(s4 + 2 * c + 2) : make_uint4(0, 0, 0, 0);
      const uint32_t w[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, e.x, e.y, e.z, e.w};
      frame_store<kSpaces>(d4 + c, plane0_of_16<dtype, W>(w, half_shift));
    };
    if constexpr (kSpaces) {
#pragma unroll 2
      for (uint32_t c = t; c < chunks; c += kEncodeGroupThreads) turn(c);
    } else {
      for (uint32_t c = t; c < chunks; c += kEncodeGroupThreads) turn(c);
    }
  };
  switch (within / 4) {
    case 0: run(std::integral_constant<int, 0>{}); break;
    case 1: run(std::integral_constant<int, 1>{}); break;
    case 2: run(std::integral_constant<int, 2>{}); break;
    default: run(std::integral_constant<int, 3>{}); break;
  }
}

// fp32 from the stage (three residual planes, each at its own alignment): 4-byte stores between
// each plane's unaligned ends. Plane j's word w holds elements h + 4w .. h + 4w + 3, h being the
// elements before the plane's first 4-byte boundary: the last 4 - h of element quad w and the
// first h of quad w + 1, so a thread loads those two quads (two 16-byte shared-memory loads) and
// serves every plane from them with a funnel shift. The quad after the last may be read: the
// stage has 16 bytes of slack. The up to 3 elements at each end of a plane take one thread each.
template <unsigned dtype, bool kSpaces>
__device__ __forceinline__ void write_planes_fp32_inline(const uint8_t* stage, uint8_t* const (&plane)[3],
                                                         const uint32_t (&keep)[3], int t) {
  const uint4* quads = reinterpret_cast<const uint4*>(stage);
  uint32_t h[3], words[3], most = 0;
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    h[j] = min(uint32_t((4 - (uintptr_t(plane[j]) & 3)) & 3), keep[j]);
    words[j] = plane[j] ? (keep[j] - h[j]) / 4 : 0;
    most = max(most, words[j]);
  }
  // Byte b of each of the 4 elements of a quad, by byte permutes (as plane0_of_16; 64 MiB of fp32
  // encoded 1.03x faster than with shifts and masks per element, H200 2026-12-01).
  const auto gather = [](const uint4& q, unsigned b) {
    const unsigned sel = b | ((4 + b) << 4);
    return __byte_perm(__byte_perm(q.x, q.y, sel), __byte_perm(q.z, q.w, sel), 0x5410);
  };
  static_assert(dtype == kDtypeFp32, "residual_of(fp32): bytes 0 and 1, then the low 7 bits of byte 2 and the sign");
  const auto plane_bytes = [&](const uint4& q, int j) {  // byte j of the 4 residuals of a quad
    return j < 2 ? gather(q, unsigned(j)) : (gather(q, 2) & 0x7F7F7F7Fu) | (gather(q, 3) & 0x80808080u);
  };
  for (uint32_t w = t; w < most; w += kEncodeGroupThreads) {
    const uint4 q0 = stage_load16<kSpaces>(quads + w), q1 = stage_load16<kSpaces>(quads + w + 1);
#pragma unroll
    for (int j = 0; j < 3; ++j)
      if (w < words[j])
        frame_store<kSpaces>(reinterpret_cast<uint32_t*>(plane[j] + h[j]) + w,
                             __funnelshift_r(plane_bytes(q0, j), plane_bytes(q1, j), 8 * h[j]));
  }
  // The ends: thread 8 j + k takes element k of plane j's head (k < 3) or of its tail (k >= 4).
  if (t < 24) {
    const int j = t / 8, k = t % 8;
    const uint32_t i = k < 4 ? uint32_t(k) : h[j] + 4 * words[j] + uint32_t(k - 4);
    const bool in_end = k < 4 ? uint32_t(k) < h[j] : i < keep[j];
    if (plane[j] && in_end) plane[j][i] = uint8_t(residual_of(dtype, reinterpret_cast<const uint32_t*>(stage)[i]) >> (8 * j));
  }
}

template <unsigned dtype, bool kSpaces>
__device__ __noinline__ void write_planes_fp32(const uint8_t* stage, uint8_t* const (&plane)[3], const uint32_t (&keep)[3],
                                                  int t) {
  write_planes_fp32_inline<dtype, kSpaces>(stage, plane, keep, t);
}

// The state area (§4.2, common::write_states) of the final states x[0 .. 32 streams) at out, by
// one warp: lane l takes global lanes l and 32 + l; a scan of the value bits places each state's
// bits, which the lanes OR into bit_words (2 x 32 words) and then store a byte at a time. x and
// bit_words are in shared memory. Returns the area's size.
__device__ __forceinline__ uint32_t write_state_area(const uint32_t* x, unsigned streams, uint32_t* bit_words, uint8_t* out) {
  const uint32_t lane = threadIdx.x & 31, codes = state_codes_bytes(kLanes * streams);
  if (lane < codes) out[lane] = uint8_t(state_length_code(x[2 * lane]) | (state_length_code(x[2 * lane + 1]) << 4));
  bit_words[lane] = 0;
  bit_words[lane + kLanes] = 0;
  __syncwarp();
  uint32_t off = 0;  // bits of the streams before
  for (unsigned s = 0; s < streams; ++s) {
    const uint32_t v = x[kLanes * s + lane], nb = state_value_bits(state_length_code(v));
    uint32_t inc = nb;
    for (int o = 1; o < 32; o <<= 1) {
      const uint32_t t = __shfl_up_sync(0xFFFFFFFFu, inc, o);
      if (lane >= uint32_t(o)) inc += t;
    }
    const uint32_t at = off + inc - nb, w = at / 32, sh = at % 32, bits = v & ((1u << nb) - 1u);  // nb <= 31
    atomicOr(&bit_words[w], bits << sh);
    if (sh + nb > 32) atomicOr(&bit_words[w + 1], bits >> (32 - sh));
    off += __shfl_sync(0xFFFFFFFFu, inc, 31);
  }
  __syncwarp();
  const uint32_t bytes = (off + 7) / 8;  // the padding bits stay zero
  for (uint32_t k = lane; k < bytes; k += 32) out[codes + k] = uint8_t(bit_words[k / 4] >> (8 * (k % 4)));
  return codes + bytes;
}

// dst (any alignment) gets the `count` u16 words at src in reverse order: 4-byte stores between
// its unaligned ends, each byte gathered from src (shared memory).
__device__ __forceinline__ void copy_words_reversed(uint8_t* dst, const uint16_t* src, uint32_t count, int t, int nthreads) {
  const uint8_t* from = reinterpret_cast<const uint8_t*>(src);
  const uint32_t bytes = 2 * count;
  const auto byte = [&](uint32_t j) { return uint32_t(from[2 * (count - 1 - j / 2) + j % 2]); };  // of the output
  const uint32_t head = min(uint32_t((4 - (uintptr_t(dst) & 3)) & 3), bytes), body = (bytes - head) / 4;
  if (uint32_t(t) < head) dst[t] = uint8_t(byte(t));
  for (uint32_t c = t; c < body; c += nthreads) {
    const uint32_t j = head + 4 * c;
    reinterpret_cast<uint32_t*>(dst + head)[c] = byte(j) | (byte(j + 1) << 8) | (byte(j + 2) << 16) | (byte(j + 3) << 24);
  }
  for (uint32_t j = head + 4 * body + t; j < bytes; j += nthreads) dst[j] = uint8_t(byte(j));
}

// Writes the payload of a non-RAW mode at p, at any alignment (format §4). staged: src is the
// group's stage in shared memory (16-byte aligned, 16 bytes of slack). kSpaces: stage_load16's.
// RANS: the table and the state area (sh.states); write_block copies w0 and the words.
template <bool kSpaces>
__device__ __forceinline__ void write_payload(const Group& g, BlockShared& sh, const BlockPlan& pl, unsigned mode, uint8_t* p,
                              const uint8_t* src, bool aligned, bool staged) {
  const uint32_t n = pl.st.n;
  const uint8_t mask = mode == kModePlanes ? pl.st.plane_mask : uint8_t(pl.st.plane_mask | 1);
  if (g.tid == 0) {
    p[0] = uint8_t(mode);
    p[1] = mask;
  }
  uint8_t* q = p + 2;
  uint8_t* plane[3] = {nullptr, nullptr, nullptr};
  uint32_t keep[3] = {0, 0, 0};  // bytes of each plane the payload holds (the rest: lane seeds)
  const uint32_t seed = mode == kModeRans ? rans_seed_bytes(pl.st, mask) : 0;
  const uint64_t stored = uint64_t(popcount32(mask >> 1)) * n - seed;
#pragma unroll
  for (int j = 0; j < 3; ++j)
    if (unsigned(j) < pl.rp && (mask & (2u << j))) {
      plane[j] = q;
      const uint64_t before = uint64_t(q - (p + 2));
      keep[j] = stored > before ? uint32_t(stored - before < n ? stored - before : n) : 0;
      q += n;
    }
  q -= seed;
  const bool want_sym = mode == kModePlanes && (mask & 1);
  if (plane[0] || plane[1] || plane[2] || want_sym) {
    uint8_t* sym = q + pl.st.tail;
    // Four consecutive elements per thread and turn, one store of up to 4 bytes per plane (one
    // 4-byte store where the plane is aligned); dtype and layout fixed at compile time
    // (histogram_pass). The staged bf16, fp16 and fp32 planes have wider writers below.
    dispatch_dtype_layout(pl.dtype, pl.layout, [&](auto dt, auto ly) {
      constexpr unsigned dtype = decltype(dt)::value, layout = decltype(ly)::value, es = esize_of(dtype);
      const bool vec = layout == kLayoutFlat && (uintptr_t(src) & 15) == 0;  // the stage always is
      // Elements [i0, min(i0 + 4, to)).
      const auto put_4 = [&](uint32_t i0, uint32_t to) {
        const uint32_t cnt = to - i0 < 4 ? to - i0 : 4;
        uint32_t v[4];
        if (vec && cnt == 4 && i0 % 4 == 0) {
          load_4_elements<es>(src + uint64_t(i0) * es, v);
        } else {
#pragma unroll
          for (int u = 0; u < 4; ++u) v[u] = uint32_t(u) < cnt ? load_elem(src, aligned, layout, es, i0 + u) : 0;
        }
        uint32_t r[4], sy = 0;
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          r[u] = residual_of(dtype, v[u]);
          sy |= uint32_t(symbol_of(dtype, v[u])) << (8 * u);
        }
        // Only the dtype's planes: the others' stores were code inlined into every copy of put_4.
#pragma unroll
        for (int j = 0; j < int(residual_planes(dtype)); ++j)
          if (plane[j] && i0 < keep[j]) {
            const uint32_t word = ((r[0] >> (8 * j)) & 0xFF) | (((r[1] >> (8 * j)) & 0xFF) << 8) |
                                  (((r[2] >> (8 * j)) & 0xFF) << 16) | (((r[3] >> (8 * j)) & 0xFF) << 24);
            store_up_to_4(plane[j] + i0, word, min(cnt, keep[j] - i0));
          }
        if (want_sym) store_up_to_4(sym + i0, sy, cnt);
      };
      if constexpr (es == 2 && layout == kLayoutFlat) {
        // bf16 and fp16 from the stage: 16-byte stores between the plane's unaligned ends, whose
        // (at most 15) elements each take the threads just after the ones before them.
        if (staged && !want_sym && plane[0]) {
          const uint32_t head = min(uint32_t((16 - (uintptr_t(plane[0]) & 15)) & 15), keep[0]);
          const uint32_t chunks = (keep[0] - head) / 16, rest = head + 16 * chunks;
          write_plane0_16<dtype, kSpaces>(src, plane[0], head, chunks, g.tid);
          // One put_4 for both ends (inlined twice, it was two cold copies of the same code).
          const uint32_t i = 4 * uint32_t(g.tid), head_threads4 = (head + 3) / 4 * 4;
          const bool in_head = i < head, in_tail = !in_head && i - head_threads4 < keep[0] - rest;
          if (in_head || in_tail) put_4(in_head ? i : rest + i - head_threads4, in_head ? head : keep[0]);
          return;
        }
      }
      if constexpr (es == 4 && layout == kLayoutFlat) {
        if (staged && !want_sym) {
          if constexpr (kSpaces) write_planes_fp32<dtype, kSpaces>(src, plane, keep, g.tid);  // encode_kernel
          else write_planes_fp32_inline<dtype, kSpaces>(src, plane, keep, g.tid);             // the fused encoder
          return;
        }
      }
      for (uint32_t i0 = 4 * g.tid; i0 < n; i0 += 4 * kEncodeGroupThreads) put_4(i0, n);
    });
  }
  for (uint32_t k = g.tid; k < pl.st.tail; k += kEncodeGroupThreads)
    q[k] = src[original_offset(pl.layout, n * pl.es + k)];
  q += pl.st.tail;
  if (mode == kModePlanes) return;

  if (mode == kModeWindow) {
    const uint32_t nb8 = (n + 7) / 8, base = pl.base;
    if (g.tid == 0) q[0] = uint8_t(base);
    uint8_t* c0 = q + 1;
    for (uint32_t k = g.tid; k < nb8; k += kEncodeGroupThreads) {
      uint32_t b0 = 0, b1 = 0, b2 = 0;
      for (uint32_t bit = 0; bit < 8 && 8 * k + bit < n; ++bit) {
        const uint32_t d = symbol_of(pl.dtype, load_elem(src, aligned, pl.layout, pl.es, 8 * k + bit)) - base;
        const uint32_t c = d < kWindowWidth ? d + 1 : 0;
        b0 |= (c & 1) << bit;
        b1 |= ((c >> 1) & 1) << bit;
        b2 |= ((c >> 2) & 1) << bit;
      }
      c0[k] = uint8_t(b0);
      c0[nb8 + k] = uint8_t(b1);
      c0[2 * nb8 + k] = uint8_t(b2);
    }
    // Escapes in element order: each thread takes a contiguous run, a scan places the runs.
    uint8_t* esc = c0 + 3 * nb8;
    const uint32_t run = (n + kEncodeGroupThreads - 1) / kEncodeGroupThreads;
    const uint32_t i0 = g.tid * run, i1 = i0 + run < n ? i0 + run : n;
    uint32_t cnt = 0;
    for (uint32_t i = i0; i < i1; ++i)
      cnt += symbol_of(pl.dtype, load_elem(src, aligned, pl.layout, pl.es, i)) - base >= kWindowWidth;
    uint32_t total;
    uint32_t at = group_scan(g, cnt, sh.red32, &total);
    for (uint32_t i = i0; i < i1; ++i) {
      const uint32_t s = symbol_of(pl.dtype, load_elem(src, aligned, pl.layout, pl.es, i));
      if (s - base >= kWindowWidth) esc[at++] = uint8_t(s);
    }
    return;
  }

  // RANS: frequency table and states (write_block then copies w0 and the words).
  static_assert(kEncodeGroupThreads == 128, "two symbols per thread");
  const int s0 = 2 * g.tid, lo = int(pl.lo), hi = int(pl.hi);
  const PresentSymbols present(sh.freq, sh.present[g.warp()]);
  int run0, run1;
  const uint32_t nb0 = present.entry_bytes(sh.freq, s0, lo, hi, &run0), nb1 = present.entry_bytes(sh.freq, s0 + 1, lo, hi, &run1);
  uint32_t total;
  const uint32_t at = 2 + group_scan(g, nb0 + nb1, sh.red32, &total);
  if (nb0) write_freq_entry(sh.freq[s0], run0, q + at);
  if (nb1) write_freq_entry(sh.freq[s0 + 1], run1, q + at + nb0);
  if (g.tid == 0) {
    q[0] = uint8_t(pl.lo);
    q[1] = uint8_t(pl.hi - pl.lo);
  }
  if (g.warp() == 0) write_state_area(sh.states, rans_streams(n), sh.state_bit_words, q + pl.ftab);
}

// A block's payload (choice: its mode and size) at its place in the frame, after `before` bytes of
// its message's earlier payloads, then its table entry (with sh.hash_lo). RAW's bytes and a RANS
// payload's `run_bytes` after its state area (w0 if any, then the words in order, ending at
// words_end) take one copy_any for both: inlined twice, it cost encode_kernel spills. A RANS
// payload's last `words_after` words are then those at after_emitted reversed (the fused
// encoder's stream 1, emitted front to back): run_bytes then end with stream 0's words. src as
// for write_payload.
template <bool kSpaces>
__device__ __forceinline__ void write_block(const Group& g, BlockShared& sh, const BlockPlan& pl, BlockRec choice,
                                            uint32_t run_bytes, const uint8_t* words_end, uint32_t words_after, const uint16_t* after_emitted,
                                            uint8_t* frame, uint32_t nblk, uint32_t index, uint64_t before, const uint8_t* src,
                                            bool aligned, bool staged) {
  const unsigned mode = choice.mode;
  uint8_t* const out = frame + kHeaderSize + uint64_t(kEntrySize) * nblk + before;
  if (mode == kModeRaw) {
    if (g.tid == 0) out[0] = kModeRaw;
  } else {
    write_payload<kSpaces>(g, sh, pl, mode, out, src, aligned, staged);
  }
  const uint32_t run = mode == kModeRans ? run_bytes : 0, after_bytes = mode == kModeRans ? 2 * words_after : 0;
  if (mode == kModeRaw || mode == kModeRans)
    copy_any(mode == kModeRaw ? out + 1 : out + choice.size - after_bytes - run, mode == kModeRaw ? src : words_end - run,
             mode == kModeRaw ? pl.st.original_bytes : run, g.tid, kEncodeGroupThreads);
  if (after_bytes) copy_words_reversed(out + choice.size - after_bytes, after_emitted, words_after, g.tid, kEncodeGroupThreads);
  if (g.tid == 0) write_entry(frame, index, uint32_t(before + choice.size), sh.hash_lo);
}

// Starts loading the block's original bytes into shared memory. From a 16-byte aligned block, as
// asynchronous copies (cp.async): every copy of the group in flight at once, no registers held,
// and the caller's other loads overlap them until finish_stage. (Through registers, 8 loads at a
// time, the stage's stores waiting on them were 11% of this kernel's stall samples on 64 MiB, ncu
// 2026-11-30.) Other blocks are copied here, with funnel shifts.
__device__ __forceinline__ void start_stage(const Group& g, uint8_t* stage, const uint8_t* src, uint64_t blen) {
  if ((uintptr_t(src) & 15) == 0) {
    const uint32_t nv = uint32_t(blen / 16);
    for (uint32_t k = g.tid; k < nv; k += kEncodeGroupThreads) __pipeline_memcpy_async(stage + 16 * k, src + 16 * k, 16);
    __pipeline_commit();
    for (uint32_t k = nv * 16 + g.tid; k < blen; k += kEncodeGroupThreads) stage[k] = src[k];
  } else {
    copy_to_aligned(stage, src, blen, g.tid, kEncodeGroupThreads);
  }
}
// This thread's copies are done (the caller's barrier then makes the whole stage visible).
__device__ __forceinline__ void finish_stage() { __pipeline_wait_prior(0); }

// A block of the batch: its message, bytes, scratch slot, and the plan's geometry.
struct BlockRef {
  const DevMsg* m;
  const uint8_t* src;  // the block's original bytes (global memory)
  uint64_t blen;
  uint8_t* slot;       // its scratch slot
};
__device__ __forceinline__ BlockRef block_ref(const EncodeArgs& a, uint32_t item, BlockPlan& pl) {
  const DevMsg& m = a.msgs[owner_of(a.msgs, a.count, item)];
  const BlockSpan span = block_span(m.size, item - m.first_block, a.block_log2);
  const uint64_t off = span.off, blen = span.len;
  pl.layout = final_layout(m);
  pl.dtype = final_dtype(a, m, pl.layout);
  pl.es = element_size(pl.dtype);
  pl.rp = residual_planes(pl.dtype);
  const uint64_t glen = gathered_size(pl.layout, blen);
  pl.st.original_bytes = blen;
  pl.st.n = uint32_t(glen / pl.es);
  pl.st.tail = uint32_t(glen % pl.es);
  pl.st.residual_planes = pl.rp;
  return {&m, m.src + off, blen, a.scratch + uint64_t(item) * a.slot_bytes};
}

// Pass 2, from sh.hist and sh.res_or (format §6): statistics, and the smallest mode but rANS
// (*best, its size *limit: the one rANS must beat); when rANS is allowed (the return value) also
// its table (sh.freq), symbol range and table size, and the bytes before its words. Any group size
// that divides 256 (each thread takes 256 / g.size consecutive symbols).
__device__ __forceinline__ bool plan_block(const Group& g, StatsShared& sh, BlockPlan& pl, unsigned allowed,
                                           uint64_t* rans_prefix, uint64_t* limit, unsigned* best) {
  const uint32_t n = pl.st.n;
  pl.st.plane_mask = uint8_t((sh.hist[0] != n ? 1 : 0) | residual_plane_bits(sh.res_or, pl.rp));
  pl.base = 0;
  pl.window_section = kNoSize;
  if (allowed & (1u << kModeWindow)) {
    // common::window_base / window_escapes, summed over the group.
    uint64_t sc = 0;
    for (int s = g.tid; s < 256; s += g.size)
      if (s) sc += (uint64_t(s) * sh.hist[s] << 24) | sh.hist[s];
    sc = group_sum(g, sc, sh.red64);
    const uint64_t sum = sc >> 24, cnt = sc & 0xFFFFFF;
    const uint64_t mean = cnt ? (sum + cnt / 2) / cnt : 0;
    int64_t base = int64_t(mean) - 4;
    base = base < 0 ? 0 : base > int64_t(kMaxWindowBase) ? int64_t(kMaxWindowBase) : base;
    pl.base = uint32_t(base);
    uint64_t in = 0;
    for (int s = g.tid; s < 256; s += g.size)
      if (uint32_t(s) - pl.base < kWindowWidth) in += sh.hist[s];
    in = group_sum(g, in, sh.red64);
    pl.window_section = window_section_size(n, n - uint32_t(in));
  }
  const ModeSizes others = mode_sizes(pl.st, pl.window_section, 0);
  *best = choose_mode(others, allowed & ~(1u << kModeRans));
  *limit = others.size[*best];
  const bool try_rans = (allowed & (1u << kModeRans)) && n > 0;
  *rans_prefix = 0;
  if (try_rans) {
    quantize_parallel(g, sh, n);
    // symbol range (common::symbol_range: n > 0, so some symbol is present) and table size
    const PresentSymbols present(sh.freq, sh.present[g.warp()]);
    pl.lo = uint32_t(present.first_above(-1));
    pl.hi = uint32_t(present.last_below(256));
    const int per = 256 / g.size, s0 = per * g.tid;
    uint64_t fb = 0;
    for (int k = 0; k < per; ++k) {
      int run;
      fb += present.entry_bytes(sh.freq, s0 + k, int(pl.lo), int(pl.hi), &run);
    }
    pl.ftab = 2 + uint32_t(group_sum(g, fb, sh.red64));
    const uint8_t mask = uint8_t(pl.st.plane_mask | 1);
    // With the fewest state bytes and a w0 of one byte (common::min_rans_head_bytes, spelled out:
    // the call changed this kernel's code): the recurrence stops only once rANS cannot win
    // whatever they are.
    const unsigned streams = rans_streams(n);
    *rans_prefix = planes_prefix_size(pl.st, mask) + pl.ftab + min_state_area_bytes(kLanes * streams) + (streams == 2 ? 1 : 0) -
                   rans_seed_bytes(pl.st, mask);
  }
  g.sync();
  return try_rans;
}

// Kernel 2a: a 128-thread group per block: histogram and plan, into the block's BlockPlanRec.
// 8 groups per CTA: with 4, a 64 MiB batch's 2048 blocks took 4 waves of this latency-bound pass.
__global__ void __launch_bounds__(kEncodeGroupThreads* kStatsGroups) stats_kernel(EncodeArgs a) {
  start_after_previous_kernel();
  __shared__ StatsShared shared[kStatsGroups];
  const int gid = threadIdx.x / kEncodeGroupThreads;
  const Group g{gid, int(threadIdx.x % kEncodeGroupThreads), kEncodeGroupThreads};
  StatsShared& sh = shared[gid];
  for (uint32_t item = gid * gridDim.x + blockIdx.x; item < a.total_blocks; item += gridDim.x * kStatsGroups) {
    BlockPlan pl;
    const BlockRef br = block_ref(a, item, pl);
    for (int s = g.tid; s < 256; s += g.size) sh.hist[s] = 0;
    if (g.tid == 0) sh.res_or = 0;
    g.sync();
    dispatch_dtype_layout(pl.dtype, pl.layout, [&](auto dt, auto ly) {
      // 8 loads in flight: one at a time, a 32 KiB block took 16 global-memory latencies per thread.
      histogram_pass<decltype(dt)::value, decltype(ly)::value, 8>(sh, br.src, (uintptr_t(br.src) & 15) == 0, pl.st.n,
                                                               br.blen, g.tid, g.size,
                                                               symbols_in_slot(pl, a.modes) ? br.slot : nullptr);
    });
    g.sync();
    uint64_t prefix, limit;
    unsigned best;
    const bool try_rans = plan_block(g, sh, pl, a.modes | 1u, &prefix, &limit, &best);
    BlockPlanRec& rec = a.plans[item];
    for (int s = g.tid; s < 256; s += g.size) rec.freq[s] = try_rans ? uint16_t(sh.freq[s]) : 0;
    if (g.tid == 0) {
      rec.try_rans = try_rans;
      rec.rans_prefix = prefix;
      rec.window_section = pl.window_section;
      rec.window_base = pl.base;
      rec.lo = pl.lo;
      rec.hi = pl.hi;
      rec.ftab = pl.ftab;
      rec.plane_mask = pl.st.plane_mask;
      a.recs[item] = BlockRec{uint32_t(limit), best};  // rans_kernel replaces it if RANS is smaller
    }
    g.sync();  // shared state is reused by the next block
  }
}

// The block's symbols into shared memory (n <= kRansSymStage) from the block itself: LL, LL128
// and opaque blocks, whose symbols stats_kernel does not write out.
template <unsigned dtype, unsigned layout>
__device__ __forceinline__ void stage_symbols(uint8_t* syms, const uint8_t* src, uint32_t n, int lane) {
  constexpr unsigned es = esize_of(dtype);
  const bool aligned = (uintptr_t(src) & 3) == 0;
  for (uint32_t i = lane; i < n; i += 32) syms[i] = uint8_t(symbol_of(dtype, load_elem(src, aligned, layout, es, i)));
}

// stats_kernel's symbol bytes from the block's slot into shared memory: asynchronous 16-byte
// copies, all in flight at once (staging from the block itself took 8 rounds of loads per warp).
__device__ __forceinline__ void copy_symbols_async(uint8_t* syms, const uint8_t* from, uint32_t n, int lane) {
  for (uint32_t c = lane; c < (n + 15) / 16; c += 32) __pipeline_memcpy_async(syms + 16 * c, from + 16 * c, 16);
  __pipeline_commit();
  __pipeline_wait_prior(0);
}

// The XXH3 of blocks w gridDim + blockIdx, stepping by n gridDim, by one warp, from global memory
// (L2: stats_kernel has just read them), into their BlockPlanRec. Inlined, it takes the staging
// rans_kernel from 128 to 174 registers, which its one CTA per SM has room for; as a call, the
// kernel spilled.
__device__ __forceinline__ void hash_blocks(const EncodeArgs& a, uint32_t w, uint32_t n) {
  for (uint32_t item = w * gridDim.x + blockIdx.x; item < a.total_blocks; item += gridDim.x * n) {
    BlockPlan pl;
    const BlockRef br = block_ref(a, item, pl);
    const uint64_t h = (uintptr_t(br.src) & 7) == 0 ? xxh3::warp_hash64<true>(br.src, br.blen)
                                                    : xxh3::warp_hash64<false>(br.src, br.blen);
    if ((threadIdx.x & 31) == 0) a.plans[item].hash_lo = uint32_t(h);
  }
}

// Kernel 2b: a warp per block runs the block's only sequential part, the 32-lane rANS recurrence
// (its words go to the end of the block's slot). kStage (small batches, kRansWarpsStaged warps):
// the symbols are first staged in shared memory, so that the recurrence waits only on
// shared-memory latency. Otherwise (kRansWarpsWide warps): a flat block's symbol bytes stream
// from its slot through a 2 KiB ring (SymbolSource::kRing), beside the 4 KiB table, so a 64 MiB
// batch's 2048 blocks run in one wave instead of two. (H200, 2026-11-30: the wide form
// alone, on every batch, encoded 16 x 512 KiB 10% slower.) Blocks without symbol bytes (LL,
// LL128, opaque) compute them from the block when they are not staged.
static_assert(sizeof(BlockPlanRec::states) == sizeof(uint32_t) * kLanes * kMaxStreams, "a state per global lane");
template <int WARPS, bool kStage>
__global__ void __launch_bounds__(32 * WARPS) rans_kernel(EncodeArgs a) {
  start_after_previous_kernel();
  extern __shared__ __align__(16) uint8_t rans_smem[];
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  RansWarpShared& sh = reinterpret_cast<RansWarpShared*>(rans_smem)[w];
  // Past the warps' tables: each warp's whole-block symbol stage (kStage) or its symbol ring.
  uint8_t* const stage = rans_smem + WARPS * sizeof(RansWarpShared) + size_t(w) * (kStage ? kRansSymStage : kRansRingBytes);
  if (kStage && hash_in_rans_kernel(a.total_blocks, int(gridDim.x)) && w >= WARPS / 2) {
    hash_blocks(a, w - WARPS / 2, WARPS / 2);
    return;
  }
  for (uint32_t item = w * gridDim.x + blockIdx.x; item < a.total_blocks; item += gridDim.x * WARPS) {
    BlockPlanRec& rec = a.plans[item];
    if (!rec.try_rans) continue;  // the same for the whole warp
    BlockPlan pl;
    const BlockRef br = block_ref(a, item, pl);
    build_enc_table(sh.enc, rec.freq, lane);
    bool ok = false;
    uint32_t x = 0, words = 0;  // stream 0's final state, and all words
    const unsigned streams = rans_streams(pl.st.n);
    TwoStreams two{};
    two.split = rans_stream_split(pl.st.n);
    const uint64_t limit = a.recs[item].size;  // stats_kernel's smallest other mode: rANS must beat it
    const bool from_slot = symbols_in_slot(pl, a.modes);
    const bool staged = kStage && pl.st.n <= kRansSymStage;
    const bool aligned = (uintptr_t(br.src) & 3) == 0;
    // The RANS payload's mask: the symbol plane and the non-zero residual planes (plan_block's).
    const uint8_t mask = uint8_t(rec.plane_mask | 1);
    const uint32_t seed = rans_seed_bytes(pl.st, mask);
    dispatch_dtype_layout(pl.dtype, pl.layout, [&](auto dt, auto ly) {
      constexpr unsigned dtype = decltype(dt)::value, layout = decltype(ly)::value, es = esize_of(dtype);
      if (staged) {
        if (from_slot) copy_symbols_async(stage, br.slot, pl.st.n, lane);
        else stage_symbols<dtype, layout>(stage, br.src, pl.st.n, lane);
      }
      const auto res_byte = [&](unsigned j, uint32_t i) {
        return uint8_t(residual_of(dtype, load_elem(br.src, aligned, layout, es, i)) >> (8 * j));
      };
      const auto start_state = [&](uint32_t global_lane) {  // L + the lane's seed
        return kRansL + (2u * global_lane < seed ? lane_seed(pl.st, mask, seed, global_lane, res_byte) : 0u);
      };
      two.x0_stream0 = start_state(lane);
      const uint32_t x0 = streams == 2 ? start_state(kLanes + lane) : two.x0_stream0;
      __syncwarp();
      // Back to front from the slot's end: stream 1's words, then stream 0's below them.
      uint16_t* const first_word = reinterpret_cast<uint16_t*>(br.slot + a.slot_bytes - 16) - 1;
      const auto encode = [&](auto source) {
        ok = rans_encode_warp<dtype, layout, decltype(source)::value, StreamRun::kInTurn>(
            sh.enc, br.src, aligned, staged ? stage : br.slot, stage, 0, pl.st.n, x0, first_word, two, rec.rans_prefix, limit,
            &x, &words);
      };
      using Src = SymbolSource;
      if (staged) encode(std::integral_constant<Src, Src::kShared>{});
      else if (!kStage && from_slot) encode(std::integral_constant<Src, Src::kRing>{});
      else encode(std::integral_constant<Src, Src::kElements>{});
    });
    rec.states[lane] = x;
    uint32_t state_bits = state_value_bits(state_length_code(x));
    if (streams == 2) {
      rec.states[kLanes + lane] = two.x_stream1;
      state_bits += state_value_bits(state_length_code(two.x_stream1));
    }
    state_bits = warp_sum(state_bits);
    // w0 (stream 0's words) goes just below the words, so that the slot ends with the section's
    // bytes after its state area.
    const uint32_t words0 = words - two.words_stream1, run_bytes = rans_run_bytes(streams, words0, words);
    if (lane == 0) {
      if (ok && streams == 2) write_varint(words0, br.slot + a.slot_bytes - 16 - run_bytes);
      rec.run_bytes = run_bytes;
      BlockStats st = pl.st;
      st.plane_mask = uint8_t(rec.plane_mask);
      a.recs[item] = mode_after_rans(st, rec.window_section, rec.ftab, ok, state_area_bytes_of(kLanes * streams, state_bits), run_bytes,
                                     a.modes);
    }
    __syncwarp();  // sh is reused by the next block
  }
}

// Kernel 2c: a 128-thread group per block: XXH3 of the block, and its payload (the mode that
// stats_kernel and rans_kernel chose) written straight to its place in the frame, with its table
// entry. (Payloads used to go to the block's slot first, and a copy into the frame took 52 us of a
// 64 MiB encode; H200 2026-11-30.)
// `stage`: shared memory for the whole block (blocks up to 2^kMaxStagedLog2 bytes), else nullptr
// and the passes read global memory.
// The item after a group's last block, and the payload bytes before that item in its message. A
// group's blocks are consecutive (encode_kernel), so each block after its first in a message takes
// its place from the cursor, with no sum. (Groups used to take blocks 528 apart, and each block
// re-summed the sizes in between from global memory: 12.5% of a 64 MiB encode_kernel's samples,
// and the sum's barriers most of its 22% barrier stalls; ncu 2026-12-02. In runs, 64 MiB encoded
// 1.02x faster and 512 KiB x 128 1.01x; H200 2026-12-02. stats_kernel keeps blocks gridDim.x *
// kStatsGroups apart: in runs it lost 1.3% on 64 MiB.)
struct PayloadCursor {
  uint32_t next = 0xFFFFFFFFu;  // none yet
  uint64_t before = 0;
};

__device__ __forceinline__ void encode_block(const Group& g, BlockShared& sh, uint8_t* stage, const EncodeArgs& a, uint32_t item,
                                             PayloadCursor& cursor) {
  BlockPlan pl;
  const BlockRef br = block_ref(a, item, pl);
  const BlockPlanRec& rec = a.plans[item];
  const BlockRec choice = a.recs[item];
  const DevMsg& m = *br.m;
  const uint64_t blen = br.blen;
  const uint8_t* src = br.src;
  // The plan and the message fields this block needs, loaded before the stage's copies and the
  // barriers below, which loads cannot pass: loaded where used, each waited a memory latency of
  // its own after a barrier (ncu 2026-11-30).
  pl.st.plane_mask = uint8_t(rec.plane_mask);
  pl.base = rec.window_base;
  pl.window_section = rec.window_section;
  pl.lo = rec.lo;
  pl.hi = rec.hi;
  pl.ftab = rec.ftab;
  const uint32_t freq0 = rec.freq[g.tid], freq1 = rec.freq[g.tid + kEncodeGroupThreads];
  const uint32_t state = rec.states[g.tid % (kLanes * kMaxStreams)], rec_run_bytes = rec.run_bytes, rec_hash = rec.hash_lo;
  uint8_t* const frame = m.dst;
  const uint32_t nblk = m.nblk, first_block = m.first_block;
  static_assert(2 * kEncodeGroupThreads == 256, "two frequencies per thread");
  if (stage) start_stage(g, stage, src, blen);
  // Where the payload goes: after the payloads of the message's earlier blocks. From the cursor
  // when the group's previous block was the one before in this message; else summed (a group's
  // first block in a message) while the stage's copies are in flight.
  uint64_t before = cursor.before;
  if (cursor.next != item || item == first_block) {
    before = 0;
#pragma unroll 8
    for (uint32_t k = first_block + uint32_t(g.tid); k < item; k += kEncodeGroupThreads) before += a.recs[k].size;
    before = group_sum(g, before, sh.red64);
  }
  cursor = {item + 1, before + choice.size};
  if (stage) {
    finish_stage();
    src = stage;
  }
  const bool aligned = (uintptr_t(src) & 3) == 0;
  const unsigned mode = choice.mode;
  if (mode == kModeRans) {
    sh.freq[g.tid] = freq0;
    sh.freq[g.tid + kEncodeGroupThreads] = freq1;
  }
  g.sync();  // the stage and sh.freq are complete

  // XXH3 of the original bytes (rans_kernel's on small batches; else staged: every warp sums
  // stripes, warp 1 scrambles; else warp 1 alone, on global memory); rans_kernel's states.
  static_assert(kEncodeGroupThreads >= 64, "warp 1 hashes");
  if (hash_in_rans_kernel(a.total_blocks, int(gridDim.x))) {
    if (g.tid == 0) sh.hash_lo = rec_hash;
  } else if (stage) {
    xxh3::parts_of_blocks(src, blen, sh.hash_parts, g.warp(), g.warps());
    g.sync();
    if (g.warp() == 1) {
      const uint64_t h = xxh3::hash_from_parts(src, blen, sh.hash_parts);
      if (g.lane() == 0) sh.hash_lo = uint32_t(h);
    }
  } else if (g.warp() == 1) {
    const uint64_t h = (uintptr_t(src) & 7) == 0 ? xxh3::warp_hash64<true>(src, blen) : xxh3::warp_hash64<false>(src, blen);
    if (g.lane() == 0) sh.hash_lo = uint32_t(h);
  }
  if (mode == kModeRans && g.tid < int(kLanes * rans_streams(pl.st.n))) sh.states[g.tid] = state;
  g.sync();

  // The payload; a RANS payload's w0 and words are at the slot's end, where rans_kernel wrote them.
  write_block<true>(g, sh, pl, BlockRec{choice.size, mode}, rec_run_bytes, br.slot + a.slot_bytes - 16, 0, nullptr,
                    frame, nblk, item - first_block, before, src, aligned, stage != nullptr);
  g.sync();  // shared state is reused by the next block
}

__global__ void __launch_bounds__(kEncodeGroupThreads* kEncodeGroups) encode_kernel(EncodeArgs a) {
  start_after_previous_kernel();
  __shared__ BlockShared shared[kEncodeGroups];
  extern __shared__ __align__(16) uint8_t stages[];
  const int gid = threadIdx.x / kEncodeGroupThreads;
  const Group g{gid, int(threadIdx.x % kEncodeGroupThreads), kEncodeGroupThreads};
  // Each group's stage has 16 bytes of slack: word copies may write up to 3 bytes past the data.
  uint8_t* stage = a.block_log2 <= kMaxStagedLog2 ? stages + size_t(gid) * ((size_t(1) << a.block_log2) + 16) : nullptr;
  // Each group takes a run of consecutive blocks (PayloadCursor), the runs numbered CTA first, so
  // that a batch of fewer blocks than groups spreads over all SMs of the grid.
  const uint64_t groups = uint64_t(gridDim.x) * kEncodeGroups, run = uint64_t(gid) * gridDim.x + blockIdx.x;
  const uint32_t first = uint32_t(a.total_blocks * run / groups), end = uint32_t(a.total_blocks * (run + 1) / groups);
  PayloadCursor cursor;
  for (uint32_t item = first; item < end; ++item) encode_block(g, shared[gid], stage, a, item, cursor);
}

// ====================== 2'. small batches: one kernel per block ======================
// Batches whose blocks fit one wave of its groups (fused_encode_fits; 16 x 512 KiB is 256 blocks
// on 264 groups) do the work of stats_kernel, rans_kernel and encode_kernel in one kernel, with
// no grid-wide wait between the phases and the block read from memory once. A 128-thread group
// per block:
//  1. stages the block in shared memory, takes its histogram and plan from the stage (a flat
//     block's symbols stay in shared memory for the recurrence);
//  2. runs the recurrence, its words into shared memory: a block of one stream on warp 0, while
//     warp 2 hashes the stage (XXH3) and warps 1 and 3 copy the frequency table for the payload;
//     a block of two streams on warps 0 and 2 side by side (half the serial chain), while warp 1
//     hashes and warp 3 copies the table;
//  3. publishes its payload size, then sums the sizes its message's earlier blocks publish. Each
//     block publishes as soon as its mode is chosen, so a block waits at most for the others'
//     recurrences, which run at the same time as its own;
//  4. writes its payload straight to its place in the frame, and its table entry.
// Blocks are taken by ticket (an atomic counter that each launch's last group resets), in item
// order, and a block waits only for its message's earlier blocks. Each of those was taken before
// by a group that is running, so no wait depends on a CTA being scheduled while others spin (the
// GPU may be shared with other kernels).

struct FusedShared {
  StatsShared stats;
  BlockShared blk;
  RansWarpShared rans[kMaxStreams];  // each stream's warp builds its own table: neither waits
  uint32_t item;
  // Two streams: [0] both streams' words so far (rans_encode_warp's stop); [1..31] take the other
  // lanes' adds of 0.
  uint32_t words_total[32];
  // fused_rans's results per stream: its words, its final states' value bits, and whether it was
  // coded to the end (not stopped at the limit)
  uint32_t words[kMaxStreams], state_bits[kMaxStreams], coded[kMaxStreams];
};

// published[item] = size + 1, 0 until the block's mode is chosen (analyse_kernel clears them).
__device__ __forceinline__ void publish_size(const EncodeArgs& a, uint32_t item, uint32_t size) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(a.published + item), "l"(uint64_t(size) + 1) : "memory");
}
__device__ __forceinline__ uint64_t published_size(const EncodeArgs& a, uint32_t item) {
  uint64_t v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(a.published + item) : "memory");
  while (v == 0) {
    __nanosleep(64);
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(a.published + item) : "memory");
  }
  return v - 1;
}

// Step 2 of one stream's warp: the stream's recurrence (rans_kernel's, from the stage), its final
// states into sh.blk.states and its results into sh.words, sh.state_bits, sh.coded.
// syms: the block's symbols (histogram_pass's), or nullptr: taken from the stage's elements.
// words: the room for the words, [words_lo, words_hi) in shared memory. Stream 0 goes back to front
// from words_hi (in payload order). kPaired: stream `stream` of two, on one of two warps side by
// side; stream 1 goes front to back from words_lo (reversed: write_block turns it round). The two
// stop on their sum of words (rans_encode_warp's words_total), and then fit the room: each warp
// adds its words to words_total after each group of steps and goes on only while the sum it got
// from its previous add is below the limit. After the last add that found the sum below the limit,
// each warp codes at most two more groups (256 words each), so the words never pass
// (limit - prefix) / 2 + 1024, and the limit is at most a RAW payload. Not kPaired: the block's
// only stream (stream 0).
template <bool kPaired>
__device__ __forceinline__ void fused_rans(FusedShared& sh, const BlockPlan& pl, unsigned stream, const uint8_t* stage,
                                           const uint8_t* syms, uint8_t* words_lo, uint8_t* words_hi, uint64_t prefix,
                                           uint64_t limit) {
  const uint32_t lane = threadIdx.x & 31;
  const uint4* const enc = sh.rans[stream].enc;
  build_enc_table(sh.rans[stream].enc, sh.stats.freq, int(lane));
  const uint8_t mask = uint8_t(pl.st.plane_mask | 1);
  const uint32_t seed = rans_seed_bytes(pl.st, mask), split = rans_stream_split(pl.st.n);
  const uint32_t global_lane = kLanes * stream + lane, e0 = stream ? split : 0, count = stream ? pl.st.n - split : split;
  uint16_t* const first_word = stream ? reinterpret_cast<uint16_t*>(words_lo) : reinterpret_cast<uint16_t*>(words_hi) - 1;
  TwoStreams two{};
  two.word_step = stream ? 1 : -1;
  two.words_total = sh.words_total;
  uint32_t x = 0, words = 0;
  bool coded = false;
  dispatch_dtype_layout(pl.dtype, pl.layout, [&](auto dt, auto ly) {
    constexpr unsigned dtype = decltype(dt)::value, layout = decltype(ly)::value, es = esize_of(dtype);
    // The blocks this kernel takes (at most 2^kMaxStagedLog2 bytes) of 4-byte elements have one
    // stream: no two-stream code for them.
    if constexpr (!kPaired || (size_t(1) << kMaxStagedLog2) / es > kStreamSplit) {
      const auto res_byte = [&](unsigned j, uint32_t i) {
        return uint8_t(residual_of(dtype, element_at(stage, layout, es, i)) >> (8 * j));
      };
      const uint32_t x0 = kRansL + (2u * global_lane < seed ? lane_seed(pl.st, mask, seed, global_lane, res_byte) : 0u);
      const auto encode = [&](auto source) {
        coded = rans_encode_warp<dtype, layout, decltype(source)::value, kPaired ? StreamRun::kPaired : StreamRun::kOne>(
            enc, stage, true, syms, nullptr, e0, count, x0, first_word, two, prefix, limit, &x, &words);
      };
      if (syms) encode(std::integral_constant<SymbolSource, SymbolSource::kShared>{});
      else encode(std::integral_constant<SymbolSource, SymbolSource::kElements>{});
    }
  });
  sh.blk.states[global_lane] = x;
  const uint32_t bits = warp_sum(state_value_bits(state_length_code(x)));
  if (lane == 0) {
    sh.words[stream] = words;
    sh.state_bits[stream] = bits;
    sh.coded[stream] = coded;
  }
}

// stage: the block's bytes; syms: room for kRansSymStage symbols; [words_lo, words_hi): the room
// for the rANS words (all in shared memory).
// staged: the stage's copies were started already (start_stage_early).
__device__ __forceinline__ void fused_encode_block(const Group& g, FusedShared& sh, uint8_t* stage, uint8_t* syms,
                                                   uint8_t* words_lo, uint8_t* words_hi, const EncodeArgs& a, uint32_t item,
                                                   bool staged) {
  BlockPlan pl;
  const BlockRef br = block_ref(a, item, pl);
  const DevMsg& m = *br.m;
  uint8_t* const frame = m.dst;
  const uint32_t nblk = m.nblk, first_block = m.first_block;
  const uint64_t blen = br.blen;
  // 1. The stage, the histogram and the plan.
  if (!staged) start_stage(g, stage, br.src, blen);
  for (int s = g.tid; s < 256; s += g.size) sh.stats.hist[s] = 0;
  if (g.tid == 0) {
    sh.stats.res_or = 0;
    sh.words_total[0] = 0;
  }
  finish_stage();
  g.sync();
  // Flat blocks keep their symbols for the recurrence (one byte load a step instead of an
  // element's load and shifts); others take them from the stage.
  if (pl.layout != kLayoutFlat || pl.st.n > kRansSymStage) syms = nullptr;
  dispatch_dtype_layout(pl.dtype, pl.layout, [&](auto dt, auto ly) {
    // From shared memory: one load at a time. (With 8 in flight the loop ran twice a block, and its
    // 8 copies of the body were fetched cold: 850 of the ~7,900 instructions run per dtype, ncu
    // 2026-12-02. 1 against 2: 16 x 512 KiB of fp16 encoded 1.008x faster, bf16 1.002x; H200.)
    histogram_pass<decltype(dt)::value, decltype(ly)::value, 1>(sh.stats, stage, true, pl.st.n, blen, g.tid, g.size, syms);
  });
  g.sync();
  uint64_t prefix, limit;
  unsigned best;
  const bool try_rans = plan_block(g, sh.stats, pl, a.modes | 1u, &prefix, &limit, &best);
  // 2. The recurrence beside the whole hash of the stage (one warp, alone: its scrambles and finish
  // then no longer wait after the recurrence) and the table's copy. One stream: warp 0 codes, warp
  // 2 hashes, warps 1 and 3 copy; warp 2 of either group then issues from a scheduler that neither
  // group's recurrence uses (fused_encode_kernel's warp rotation). (Before: stripe sums by warps
  // 1-3, then warp 1's fold and finish after the recurrence; this way 16 x 512 KiB compresses
  // 1.025x faster, 1.04x on fp32; folding during the recurrence needed warps 1-3 to meet at a
  // barrier. H200 2026-11-30.) Two streams: warps 0 and 2 code, so that the two groups' four
  // recurrences issue from four schedulers; warp 1 hashes, warp 3 copies.
  static_assert(kEncodeGroupThreads == 128, "four warps: the recurrences, the hash and the table's copy");
  const unsigned streams = rans_streams(pl.st.n);
  const bool two = try_rans && streams == 2;
  if (two && (g.warp() == 0 || g.warp() == 2)) {
    fused_rans<true>(sh, pl, unsigned(g.warp()) / 2, stage, syms, words_lo, words_hi, prefix, limit);
  } else if (g.warp() == 0) {
    if (try_rans) fused_rans<false>(sh, pl, 0, stage, syms, words_lo, words_hi, prefix, limit);
  } else if (g.warp() == (two ? 1 : 2)) {
    const uint64_t h = xxh3::warp_hash64<true>(stage, blen);  // the stage is 16-byte aligned
    if (g.lane() == 0) sh.blk.hash_lo = uint32_t(h);  // read after the barrier below
  } else {
    const int t = two ? g.lane() : g.tid - (g.warp() == 1 ? 32 : 64), copiers = two ? 32 : 64;  // warps 1 and 3, or 3
    for (int s = t; s < 256; s += copiers) sh.blk.freq[s] = sh.stats.freq[s];  // write_payload's table
  }
  g.sync();
  // The mode, by every thread (the same for all) from the streams' results.
  BlockRec choice{uint32_t(limit), best};
  uint32_t words0 = 0, words1 = 0;
  if (try_rans) {
    words0 = sh.words[0];
    words1 = streams == 2 ? sh.words[1] : 0;
    const bool coded = sh.coded[0] && (streams == 1 || sh.coded[1]);
    const uint32_t bits = sh.state_bits[0] + (streams == 2 ? sh.state_bits[1] : 0);
    choice = mode_after_rans(pl.st, pl.window_section, pl.ftab, coded, state_area_bytes_of(kLanes * streams, bits),
                             rans_run_bytes(streams, words0, words0 + words1), a.modes);
  }
  // write_block's run: w0 (two streams), just below stream 0's words, then those. (A RANS block's
  // words are below its limit, so the room has space for w0 beside them.)
  const uint32_t run_bytes = rans_run_bytes(streams, words0, words0);
  // 3. This block's size out, the earlier blocks' sizes in.
  if (g.tid == 0) {
    publish_size(a, item, choice.size);
    if (choice.mode == kModeRans && streams == 2) write_varint(words0, words_hi - run_bytes);  // before group_sum's barriers
  }
  uint64_t before = 0;
  for (uint32_t k = first_block + uint32_t(g.tid); k < item; k += kEncodeGroupThreads) before += published_size(a, k);
  before = group_sum(g, before, sh.blk.red64);
  // 4. The payload and the table entry.
  write_block<false>(g, sh.blk, pl, choice, run_bytes, words_hi, words1, reinterpret_cast<const uint16_t*>(words_lo), frame,
                     nblk, item - first_block, before, stage, true, true);
  g.sync();  // shared state is reused by the next block
}

// A group's shared memory: FusedShared, the stage (16 bytes of slack), the symbols, the words.
// The words stay below the limit that rans_encode_warp stops at (the smallest other mode, at
// most a RAW payload: 1 + 32 KiB) plus one group of steps (256 words), or with two streams four
// groups (fused_rans); copy_any reads up to 3 bytes on either side.
constexpr size_t kFusedStageOffset = (sizeof(FusedShared) + 15) / 16 * 16;
constexpr size_t kFusedSymsOffset = kFusedStageOffset + (size_t(1) << kMaxStagedLog2) + 16;
constexpr size_t kFusedWordsOffset = kFusedSymsOffset + kRansSymStage;
constexpr size_t kFusedWordsBytes = (size_t(1) << kMaxStagedLog2) + 2 * 4 * kRansGroupSteps * kLanes;
static_assert(kFusedWordsBytes / 2 >= (1 + (size_t(1) << kMaxStagedLog2)) / 2 + 4 * kRansGroupSteps * kLanes,
              "two streams' words: at most half the limit (a RAW payload) plus four groups of steps");
constexpr size_t kFusedGroupBytes = kFusedWordsOffset + kFusedWordsBytes + 16;
static_assert(kFusedEncodeGroups * kFusedGroupBytes <= 227 * 1024, "one CTA's groups must fit an SM (sm_90: 227 KiB)");

// Starts the copies of block `item`'s bytes into the stage before start_after_previous_kernel: from
// what the host wrote (the DevMsgs' src, size and first_block; the input), not what analyse_kernel
// writes beside it (layout and dtype). Those DevMsg loads skip L1 (ld.global.cg), so that the
// block_ref after the wait cannot see a line of them cached before analyse_kernel wrote it.
__device__ __forceinline__ void start_stage_early(const Group& g, uint8_t* stage, const EncodeArgs& a, uint32_t item) {
  const uint32_t mi = owner_by_first([&](uint32_t k) { return __ldcg(&a.msgs[k].first_block); }, a.count, item);
  const DevMsg* m = &a.msgs[mi];
  const uint8_t* src = reinterpret_cast<const uint8_t*>(__ldcg(reinterpret_cast<const unsigned long long*>(&m->src)));
  const uint64_t size = __ldcg(reinterpret_cast<const unsigned long long*>(&m->size));
  const BlockSpan span = block_span(size, item - __ldcg(&m->first_block), a.block_log2);
  start_stage(g, stage, src + span.off, span.len);
}

__global__ void __launch_bounds__(kEncodeGroupThreads* kFusedEncodeGroups) fused_encode_kernel(EncodeArgs a) {
  extern __shared__ __align__(16) uint8_t fused_smem[];
  const int gid = threadIdx.x / kEncodeGroupThreads;
  // The group's warp 0 (the one that runs a block's only or first recurrence) is its warp gid % 4
  // in hardware, so that the groups' recurrences issue from different schedulers (warp w issues
  // from scheduler w % 4; with both recurrences on scheduler 0, 16 x 512 KiB encoded 1.14x slower,
  // H200 2026-11-30); a second stream's recurrence runs on warp 2, two schedulers on.
  constexpr int kWarps = kEncodeGroupThreads / 32;
  const int hw_warp = (threadIdx.x >> 5) % kWarps, rotated = (hw_warp - gid % kWarps + kWarps) % kWarps;
  const Group g{gid, 32 * rotated + int(threadIdx.x & 31), kEncodeGroupThreads};
  uint8_t* const mine = fused_smem + size_t(gid) * kFusedGroupBytes;
  FusedShared& sh = *reinterpret_cast<FusedShared*>(mine);
  uint8_t* const stage = mine + kFusedStageOffset;
  const auto take_ticket = [&] {
    if (g.tid == 0) sh.item = atomicAdd(&a.ticket[0], 1u);
    g.sync();
    return sh.item;  // rewritten only after fused_encode_block's last barrier
  };
  // The first block's bytes start on their way to the stage before the wait for analyse_kernel,
  // which then runs beside the copies (16 x 512 KiB encoded 1.02x faster, 1.03x on fp32; 512 KiB x 8
  // 0.996x; H200 2026-11-30).
  uint32_t item = take_ticket();
  if (item < a.total_blocks) start_stage_early(g, stage, a, item);
  start_after_previous_kernel();
  for (bool staged = true; item < a.total_blocks; staged = false) {
    fused_encode_block(g, sh, stage, mine + kFusedSymsOffset, mine + kFusedWordsOffset,
                       mine + kFusedWordsOffset + kFusedWordsBytes, a, item, staged);
    item = take_ticket();
  }
  // The launch's last group out resets the ticket for the next launch (a kernel boundary away):
  // every group's failed ticket came before its count (the fence).
  if (g.tid == 0) {
    __threadfence();
    if (atomicAdd(&a.ticket[1], 1u) == gridDim.x * kFusedEncodeGroups - 1) {
      a.ticket[0] = 0;
      a.ticket[1] = 0;
    }
  }
}

size_t rans_smem_bytes(bool staged) {
  return staged ? kRansWarpsStaged * (sizeof(RansWarpShared) + kRansSymStage)
                : kRansWarpsWide * (sizeof(RansWarpShared) + kRansRingBytes);
}

// ============================== 3. headers ==============================

// A CTA per message: the table checksum, then the header. The table's XXH3 is split like a staged
// block's (xxh3::parts_of_blocks): every warp sums the stripes of some 1 KiB stripe blocks, then
// warp 0 folds them in order, kHeaderWindow stripe blocks at a time (the part array is bounded
// while a message's table is not). (One warp alone
// took 21 us for a 64 MiB message's 16 KiB table, H200 2026-11-30.)
constexpr uint32_t kHeaderWindow = 32;
__global__ void __launch_bounds__(kHeaderThreads) header_kernel(EncodeArgs a) {
  start_after_previous_kernel();
  __shared__ uint64_t part[kHeaderWindow][8];
  const int warp = threadIdx.x >> 5;
  constexpr int kWarps = kHeaderThreads / 32;
  for (uint32_t mi = blockIdx.x; mi < a.count; mi += gridDim.x) {
    DevMsg& m = a.msgs[mi];
    const uint8_t* table = m.dst + kHeaderSize;
    const uint64_t table_bytes = uint64_t(kEntrySize) * m.nblk;
    uint64_t th = 0;
    if (table_bytes <= 240 || (uintptr_t(table) & 7)) {
      if (warp == 0) th = xxh3::warp_hash64<false>(table, table_bytes);  // short ones: warp_hash_short
    } else {
      xxh3::WarpAcc sum, run;  // a warp's stripe sums; warp 0's running hash
      sum.init();
      run.init();
      const uint64_t nb = xxh3::long_blocks(table_bytes);
      for (uint64_t w0 = 0; w0 < nb; w0 += kHeaderWindow) {
        const uint32_t cnt = uint32_t(nb - w0 < kHeaderWindow ? nb - w0 : kHeaderWindow);
        for (uint32_t b = warp; b < cnt; b += kWarps) sum.sums_of_block(table + (w0 + b) * xxh3::kBlockLen, part[b]);
        __syncthreads();
        if (warp == 0) run.fold_parts(part, cnt);
        __syncthreads();
      }
      if (warp == 0) th = run.finish<true>(table + nb * xxh3::kBlockLen, table + (table_bytes - xxh3::kStripeLen), table_bytes);
    }
    // Thread 0 writes the header, then warp 0 hashes it (warp_hash_short).
    if (warp == 0) {
      FrameHeader h;
      if (threadIdx.x == 0) {
        const unsigned layout = final_layout(m);
        h.dtype = uint8_t(final_dtype(a, m, layout));
        h.layout = uint8_t(layout);
        h.block_log2 = uint8_t(a.block_log2);
        h.original_size = m.size;
        h.frame_size = kHeaderSize + table_bytes + (m.nblk ? entry_end(m.dst, m.nblk - 1) : 0);
        h.layout_flag = final_flag(m, layout);
        h.table_checksum = uint32_t(th);
        write_header(h, m.dst);
      }
      __syncwarp();  // the header's bytes are visible to the warp
      const uint32_t hh = uint32_t(xxh3::warp_hash_short(m.dst, kHeaderHashedBytes));
      if (threadIdx.x == 0) {
        store_header_checksum(m.dst, hh);
        m.out_size = h.frame_size;
        m.dtype = h.dtype;
        m.layout = h.layout;
        m.status = kOk;
      }
    }
    __syncthreads();
  }
}

}  // namespace

void launch_encode(const EncodeArgs& a, int grid_ctas, cudaStream_t s, cudaEvent_t* marks) {
  if (marks) cudaEventRecord(marks[0], s);
  if (a.total_blocks) launch_after_previous(analyse_kernel, grid_ctas, kAnalyseThreads, 0, s, a);
  if (marks) cudaEventRecord(marks[1], s);
  if (a.total_blocks && a.fused) {
    launch_after_previous(fused_encode_kernel, grid_ctas, kEncodeGroupThreads * kFusedEncodeGroups, fused_encode_smem_bytes(), s, a);
  } else if (a.total_blocks) {
    launch_after_previous(stats_kernel, grid_ctas, kEncodeGroupThreads * kStatsGroups, 0, s, a);
    if (prefer_wide_rans(a.total_blocks, grid_ctas))
      launch_after_previous(rans_kernel<kRansWarpsWide, false>, grid_ctas, 32 * kRansWarpsWide, rans_smem_bytes(false), s, a);
    else
      launch_after_previous(rans_kernel<kRansWarpsStaged, true>, grid_ctas, 32 * kRansWarpsStaged, rans_smem_bytes(true), s, a);
    launch_after_previous(encode_kernel, grid_ctas, kEncodeGroupThreads * kEncodeGroups, encode_stage_bytes(a.block_log2), s, a);
  }
  if (a.count) launch_after_previous(header_kernel, a.count < uint32_t(grid_ctas) ? int(a.count) : grid_ctas, kHeaderThreads, 0, s, a);
  if (marks) cudaEventRecord(marks[2], s);
}

size_t fused_encode_smem_bytes() { return kFusedEncodeGroups * kFusedGroupBytes; }

size_t encode_stage_bytes(unsigned block_log2) {
  return block_log2 <= kMaxStagedLog2 ? size_t(kEncodeGroups) * ((size_t(1) << block_log2) + 16) : 0;
}

cudaError_t configure_encode() {
  uint32_t table[kDetectSampleBytes + 1];  // 16 KiB
  for (uint32_t v = 0; v <= kDetectSampleBytes; ++v) table[v] = v ? log2_q16(v) : 0;
  if (cudaError_t e = cudaMemcpyToSymbol(g_log2_q16, table, sizeof table); e != cudaSuccess) return e;
  RansDivisor divisors[kProbScale + 1];
  for (uint32_t f = 0; f <= kProbScale; ++f) divisors[f] = rans_divisor(f);
  if (cudaError_t e = cudaMemcpyToSymbol(g_rans_divisors, divisors, sizeof divisors); e != cudaSuccess) return e;
  cudaError_t e = cudaFuncSetAttribute(encode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       int(encode_stage_bytes(kMaxStagedLog2)));
  if (e != cudaSuccess) return e;
  e = cudaFuncSetAttribute(fused_encode_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(fused_encode_smem_bytes()));
  if (e != cudaSuccess) return e;
  e = cudaFuncSetAttribute(rans_kernel<kRansWarpsWide, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(rans_smem_bytes(false)));
  if (e != cudaSuccess) return e;
  return cudaFuncSetAttribute(rans_kernel<kRansWarpsStaged, true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(rans_smem_bytes(true)));
}

}  // namespace zipnet::codec::cuda::detail
