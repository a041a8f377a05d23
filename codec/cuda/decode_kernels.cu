// Batched decoder (format §4, §5). Two steps cover every frame of a batch:
//  1. the frame checks (frame_checks.cuh): header and table checks of format §5 steps 1-2, in
//     order, and the placing of the blocks that the frames' headers declare in one flat work list.
//     Batches of up to kFusedMaxFrames frames (DecodeArgs::fused) make them inside step 2's
//     kernel: each CTA places the blocks in shared memory, each block job checks the header and
//     its own table entries before it reads the payload, and a job per frame after the blocks
//     makes the frame's checks and sets its outputs. Larger batches run validate_kernel first (a
//     CTA per frame; its last CTA places the blocks), and the block decoders skip the blocks of
//     frames that failed. (Fused, one kernel boundary fewer on every small batch.)
//  2. one of two block decoders, chosen per batch by the host (kernels.h, prefer_group_decoder):
//     - small batches: decode_group_kernel (a 4-warp group per block of up to 32 KiB, 4 groups
//       per CTA): warp 0 runs the sequential rANS (or window) decode of the whole block into
//       shared memory, and warp 1 beside it the block's second rANS stream if it has one (format
//       §4.2); the other warps join residuals, hash the 1 KiB stripe blocks as they are decoded
//       and store them with 16-byte stores, then the whole group does the rest of the block; then
//       decode_kernel<16, WarpJobs::kBigOnly> takes the blocks larger than 32 KiB, and returns at
//       once when there are none;
//     - large batches: decode_kernel<16, WarpJobs::kValidated or kFused> (a warp per block, 2 KiB
//       of output at a time, a block's rANS streams in turn, 16 warps per SM: 4x more blocks in
//       flight). decode_kernel<8, ...>: benchmark only.
// A block's error is kept per frame as the lowest failing block, like the CPU decoder's order.
#include "common/block.h"
#include "common/frame.h"
#include "common/layout.h"
#include "common/rans.h"
#include "device_util.cuh"
#include "frame_checks.cuh"
#include "freq_table_warp.cuh"
#include "kernels.h"
#include "xxh3_warp.cuh"

namespace zipnet::codec::cuda::detail {
namespace {

using namespace zipnet::codec::common;

constexpr int kGroupWarps = 4;                   // warps of a group decoder (one block each)
constexpr int kGroups = kDecodeGroups;           // group decoders per CTA
constexpr uint32_t kGroupStagedBytes = uint32_t(kDecodeGroupBlock);  // largest block a group decodes (whole, in its stage)

// ============================== 1. validate ==============================

// Checks every frame's header and table (a CTA per frame, frame_checks.cuh); the grid's last CTA
// first places the blocks. (With the blocks placed by the last CTA to finish its checks, behind a
// fence and an atomic, and the header and the table loaded one after the other, a 16 x 512 KiB
// batch decoded 2.5% slower; H200 2026-11-30.) The fused decoders do all of this themselves.
__global__ void __launch_bounds__(kValidateThreads) validate_kernel(DecodeArgs a) {
  start_after_previous_kernel();
  __shared__ __align__(8) uint8_t check_bytes[sizeof(FrameCheckShared)];  // FrameHeader's initialisers: no __shared__ object
  FrameCheckShared& check = *reinterpret_cast<FrameCheckShared*>(check_bytes);
  __shared__ __align__(16) uint8_t head[kHeaderSize + kEntrySize * kStagedTableEntries];
  const Group cta{0, int(threadIdx.x), kValidateThreads};
  if (blockIdx.x == gridDim.x - 1) {
    __shared__ uint32_t red[kValidateThreads / 32], carry_s;
    place_blocks(cta, a, red, carry_s, [&](uint32_t k, uint32_t first) { a.msgs[k].first_block = first; });
  }
  for (uint32_t mi = blockIdx.x; mi < a.count; mi += gridDim.x)
    check_frame<kStagedTableEntries, kValidateThreads>(cta, a, a.msgs[mi], check, head);
}

// ============================== 2. decode ==============================

constexpr uint32_t kFront = 64;                  // last stripe of the previous chunk
constexpr int kPrefetchRegs = 18;                // words per lane: a chunk's inputs are at most 516 words
// `in` holds a chunk's inputs (at most kPrefetchRegs words a lane), or during the rANS set-up the
// section's first bytes (below 1024: table, states, first words) and the 256 frequencies (from
// 1024); 16 bytes of slack for reads that run past the last word.
constexpr uint32_t kInBytes = (kPrefetchRegs * 32 * 4 > 1024 + 256 * 4 ? kPrefetchRegs * 32 * 4 : 1024 + 256 * 4) + 16;
constexpr int kMaxSegs = 6;

// Payload byte ranges that one chunk reads, fetched as whole aligned words: all of a lane's loads
// are issued together into registers (prefetch), one chunk ahead, and stored into `in` (commit)
// once the previous chunk is done with it. Segment s's byte i is in[woff[s] * 4 + lead[s] + i].
struct ChunkInputs {
  int nseg;
  const uint32_t* al[kMaxSegs];
  uint32_t lead[kMaxSegs];
  uint32_t woff[kMaxSegs + 1];
  __device__ void clear() {
    nseg = 0;
    woff[0] = 0;
  }
  __device__ void add(const uint8_t* p, uint32_t len) {
    const uint32_t l = uint32_t(uintptr_t(p) & 3);
    al[nseg] = reinterpret_cast<const uint32_t*>(p - l);
    lead[nseg] = l;
    woff[nseg + 1] = woff[nseg] + (l + len + 3) / 4;
    ++nseg;
  }
  __device__ const uint8_t* at(const uint8_t* in, int s) const { return in + woff[s] * 4 + lead[s]; }
};

constexpr uint32_t kRingWords = 256;   // the rANS words a warp has staged (RansState)
constexpr uint32_t kRingMirror = 128;  // slots [0, 128) again after the ring: a group of 4 steps
                                       // reads up to 127 words past wpos's slot
struct BlockJob {
  const uint8_t* payload;
  uint64_t psize;
  uint8_t* dst;       // the block's original bytes in the output
  uint64_t blen;
  unsigned dtype, layout, es, rp;
  uint64_t flag;
  uint32_t n, tail;
  uint8_t mask;
  unsigned mode;
  const uint8_t* plane0;   // present residual planes (nullptr: zeros)
  const uint8_t* plane1;
  const uint8_t* plane2;
  unsigned present;         // how many
  const uint8_t* tail_bytes;
  const uint8_t* section;   // symbol section
  uint64_t section_size;
  uint32_t seed;            // residual bytes in the lane seeds (RANS), format §4.2
  unsigned block_log2;      // the frame's block size
  uint32_t chunk_elems;     // the elements a whole chunk holds (warp decoder)
  uint32_t split;           // RANS: stream 1's first element (n with one stream), format §4.2
};

// Stream 1's start in a two-stream RANS block (format §4.2), from rans_setup: its words and each
// lane's start state, until the warp that decodes it starts it (rans_start_stream1).
struct StreamStart {
  const uint8_t* words;
  uint32_t nwords;
  uint32_t ok;  // group decoder: rans_setup's verdict, for the warp that runs stream 1
  uint32_t x[kLanes];
};

struct DecodeWarpShared {
  uint32_t table[kProbScale];                                // slot_entry per slot
  uint16_t ring[kRingWords + kRingMirror];                   // rANS words, by index % kRingWords, then the mirror
  StreamStart next;                                          // stream 1's start (two-stream RANS blocks)
  uint8_t seeds[kMaxSeedBytes];                              // the seeded lanes' residual bytes (store_seeds)
  __align__(16) uint8_t stage[kFront + kDecodeChunk + 16];  // the chunk's original bytes
  __align__(16) uint8_t in[kInBytes];                       // the chunk's payload inputs
  ChunkInputs ci[2];                                         // this chunk's and the next one's
  BlockJob job;                                              // decode_block's, once set up (below)
  FrameCheckShared check;                                    // a frame job's (fused decoders)
};

__device__ __forceinline__ uint32_t lanemask_lt() {
  uint32_t m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

__device__ __forceinline__ uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

__device__ __forceinline__ void prefetch(const ChunkInputs& c, uint32_t (&reg)[kPrefetchRegs]) {
  const uint32_t lane = threadIdx.x & 31, total = c.woff[c.nseg];
  if (c.nseg == 1) {  // one segment (a bf16 or fp16 RANS block's plane): no segment search
    const uint32_t* from = c.al[0];
#pragma unroll
    for (int r = 0; r < kPrefetchRegs; ++r) reg[r] = lane + 32 * r < total ? from[lane + 32 * r] : 0;
    return;
  }
#pragma unroll
  for (int r = 0; r < kPrefetchRegs; ++r) {
    const uint32_t w = lane + 32 * r;
    uint32_t v = 0;
    if (w < total) {
      int s = 0;
      while (w >= c.woff[s + 1]) ++s;
      v = c.al[s][w - c.woff[s]];
    }
    reg[r] = v;
  }
}
__device__ __forceinline__ void commit(const ChunkInputs& c, const uint32_t (&reg)[kPrefetchRegs], uint8_t* in) {
  const uint32_t lane = threadIdx.x & 31, total = c.woff[c.nseg];
#pragma unroll
  for (int r = 0; r < kPrefetchRegs; ++r)
    if (lane + 32 * r < total) reinterpret_cast<uint32_t*>(in)[lane + 32 * r] = reg[r];
}


// Block b of a frame (its fields as the header gives them) as a BlockJob, with its payload
// [start, end) of the payload area.
__device__ __forceinline__ void set_block_job(BlockJob& j, const uint8_t* frame, uint8_t* dst, uint64_t original_size,
                                              uint64_t nblk, unsigned dtype, unsigned layout, uint64_t flag,
                                              unsigned block_log2, uint32_t b, uint32_t start, uint32_t end) {
  const uint64_t bs = uint64_t(1) << block_log2, off = uint64_t(b) * bs;
  j.blen = original_size - off < bs ? original_size - off : bs;
  j.dst = dst + off;
  j.dtype = dtype;
  j.layout = layout;
  j.es = element_size(dtype);
  j.rp = residual_planes(dtype);
  j.flag = flag;
  j.block_log2 = block_log2;
  j.payload = frame + kHeaderSize + uint64_t(kEntrySize) * nblk + start;
  j.psize = end - start;
  j.mode = j.payload[0];
}

// Block b of frame m after validate_kernel, which set m's fields; false: the frame failed, or
// (big_only) its blocks are small enough for the group decoder, which took them. Both are known
// before the block's table entries are loaded.
__device__ __forceinline__ bool validated_block(const DevMsg& m, uint32_t b, BlockJob& j, uint32_t& checksum,
                                                bool big_only) {
  if (m.status != kOk || (big_only && (uint64_t(1) << m.block_log2) <= kGroupStagedBytes)) return false;
  const uint32_t start = b ? entry_end(m.src, b - 1) : 0, end = entry_end(m.src, b);
  checksum = entry_checksum(m.src, b);
  set_block_job(j, m.src, m.dst, m.out_size, m.nblk, m.dtype, m.layout, m.flag, m.block_log2, b, start, end);
  return true;
}

// Block b of frame m in a fused decoder, which has not validated m: the header must pass
// parse_header, and block b's table entries must be ordered and inside the frame, which keeps
// every read and write of the block in bounds. The rest of format §5 steps 1-2 is the frame's own
// job (check_frame), whose status the host reads before any block's: a block of a frame that fails
// there may still be decoded, into that frame's output. `view` is kBlockViewBytes of the warp's
// own shared memory, 16-byte aligned; called by whole warps.
constexpr uint32_t kBlockViewBytes = kHeaderSize + 2 * kEntrySize;
__device__ __forceinline__ bool fused_block(const DevMsg& m, uint32_t b, uint8_t* view, BlockJob& j, uint32_t& checksum) {
  const uint32_t lane = threadIdx.x & 31;
  const uint8_t* in = m.src;
  const uint64_t size = m.size;
  // The header, then entries b - 1 and b (adjacent; for b = 0, header bytes stand in for entry
  // -1), in one round of loads.
  uint8_t v[2];
#pragma unroll
  for (uint32_t r = 0; r < 2; ++r) {
    const uint32_t i = lane + 32 * r;
    const uint64_t at = i < kHeaderSize ? i : uint64_t(kEntrySize) * b + i - kEntrySize;
    v[r] = i < kBlockViewBytes && at < size ? in[at] : 0;
  }
  __syncwarp();
#pragma unroll
  for (uint32_t r = 0; r < 2; ++r)
    if (lane + 32 * r < kBlockViewBytes) view[lane + 32 * r] = v[r];
  __syncwarp();
  FrameHeader h;
  const uint32_t hh = uint32_t(xxh3::warp_hash_short_as<true>(view, kHeaderHashedBytes));
  const uint8_t st = parse_header<true>(view, size, hh, m.dst ? m.cap : 0, &h);
  const uint32_t prev = b ? load_u32_as<true>(view + kHeaderSize) : 0, end = load_u32_as<true>(view + kHeaderSize + kEntrySize);
  checksum = load_u32_as<true>(view + kHeaderSize + kEntrySize + 4);
  __syncwarp();  // every lane is done with `view` before the block decoder reuses the memory
  if (st != kOk || !table_fits(h)) return false;
  const uint64_t nblk = block_count(h.original_size, h.block_log2);
  if (b >= nblk || end <= prev || kHeaderSize + kEntrySize * nblk + end > h.frame_size) return false;
  set_block_job(j, in, m.dst, h.original_size, nblk, h.dtype, h.layout, h.layout_flag, h.block_log2, b, prev, end);
  return true;
}

// A shared-memory address, and the recurrence's two loads from shared memory, written in PTX:
// through a generic pointer the ring read compiled to a generic 64-bit load, and the slot's
// address as (x << 2) & 0x1FFC plus the table, three dependent operations where an AND and a
// shifted add do. The clobbers keep them after the table's and the ring's stores.
__device__ __forceinline__ uint32_t shared_address(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ uint32_t load_shared_u16(uint32_t a) {
  unsigned short v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(a) : "memory");
  return v;
}
// table[x % kProbScale] of a uint32_t table at shared address `table`.
__device__ __forceinline__ uint32_t load_slot_entry(uint32_t table, uint32_t x) {
  static_assert(kProbScale == 2048, "the mask below");
  uint32_t v;
  asm volatile(
      "{\n\t.reg .u32 a;\n\t"
      "and.b32 a, %1, 2047;\n\t"
      "mad.lo.u32 a, a, 4, %2;\n\t"
      "ld.shared.u32 %0, [a];\n\t}"
      : "=r"(v)
      : "r"(x), "r"(table)
      : "memory");
  return v;
}

// The decoder state of one rANS stream. Words [wpos, staged) sit in its shared ring, at least 32 of them
// before every step (rans_refill); next_lo / next_hi and next2_lo / next2_hi hold the two bytes of
// this lane's words of the following 64 (staged + lane, staged + 32 + lane), loaded from global
// memory one refill ahead and joined only when that refill stores them. (Joined at the load, every
// refill waited a full memory latency: long-scoreboard stalls were the largest share of the group
// decoder's recurrence, ncu 2026-11-29.) wpos is lap + (rd - ring) / 2: rd, the shared-memory
// address of word wpos's ring slot, runs on into the ring's mirror during a group of steps, so
// that a step's word read is one address add after its population count (rans_refill wraps it;
// the index arithmetic of ring[(wpos + k) % 256] was four dependent operations of the step's
// chain).
struct RansState {
  uint32_t x;
  const uint8_t* words;
  uint32_t nwords, staged, next_lo, next_hi, next2_lo, next2_hi;
  uint32_t rd;     // shared-memory address of word wpos's ring slot
  uint32_t lap;    // words before ring slot 0 in this lap
  uint32_t ahead;  // kShuffle: ring word wpos + lane, loaded when the step starts
};
// Where a stream's decoder keeps its slot table (shared-memory address; a block's streams share it)
// and its ring of words (its own).
struct RansMem {
  uint32_t table;
  uint16_t* ring;
};
__device__ __forceinline__ RansMem rans_mem(DecodeWarpShared& sh) { return RansMem{shared_address(sh.table), sh.ring}; }
// Lane's word `k` of the stream's words (r.nwords of them at `words`: r.words, or a staged copy) as
// its two bytes (0 past the end).
__device__ __forceinline__ void load_word_bytes(const RansState& r, const uint8_t* words, uint32_t k, uint32_t* lo,
                                                uint32_t* hi) {
  *lo = *hi = 0;
  if (k < r.nwords) {
    *lo = words[2ull * k];
    *hi = words[2ull * k + 1];
  }
}
// Stages the stream's first 96 words (r.words and r.nwords set; `first`: r.words or a staged copy
// of its first 128 words) in its ring, and the next refill's 64 in registers.
__device__ __forceinline__ void rans_start(RansMem m, RansState& r, const uint8_t* first) {
  const uint32_t lane = threadIdx.x & 31;
  r.rd = shared_address(m.ring);
  r.lap = 0;
  uint32_t lo[3], hi[3];  // every load issued before the first store
#pragma unroll
  for (int k = 0; k < 3; ++k) load_word_bytes(r, first, 32 * k + lane, &lo[k], &hi[k]);
  load_word_bytes(r, first, 96 + lane, &r.next_lo, &r.next_hi);
  load_word_bytes(r, r.words, 128 + lane, &r.next2_lo, &r.next2_hi);
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    m.ring[32 * k + lane] = uint16_t(lo[k] | (hi[k] << 8));
    m.ring[kRingWords + 32 * k + lane] = uint16_t(lo[k] | (hi[k] << 8));  // 96 <= kRingMirror
  }
  r.staged = 96;
  __syncwarp();
}
// Starts stream 1 from what rans_setup left in `next`.
__device__ __forceinline__ void rans_start_stream1(RansMem m, RansState& r, const StreamStart& next) {
  r.x = next.x[threadIdx.x & 31];
  r.words = next.words;
  r.nwords = next.nwords;
  rans_start(m, r, r.words);
}
struct WindowState {
  const uint8_t* codes;  // plane 0; planes 1, 2 follow at +nb8
  uint32_t nb8, base, nesc, epos;
  const uint8_t* esc;
  bool bad;
};

// The GPU decoder's slot-table entry: slot - cum in bits 0..11, the symbol in 12..19 and freq
// (1..2048) in 20..31, so that x' = (e >> 20) * (x >> 11) + (e & 0xFFF) takes two operations
// after the shared-memory load (common::decode_entry, the CPU's, needs three).
__device__ __forceinline__ uint32_t slot_entry(uint32_t s, uint32_t f, uint32_t k) { return k | (s << 12) | (f << 20); }

// common::read_state_bits for value bits staged in shared memory (at shared address `bits`): two
// aligned 4-byte loads and one 64-bit shift, where the common form's loop of byte loads through a
// generic pointer compiled to 661 instructions in the group decoder. The second word may lie past
// the value bits (in sh.in's frequencies: shared memory of the same warp); its bits are masked off.
__device__ __forceinline__ uint32_t read_state_bits_shared(uint32_t bits, uint32_t off, unsigned code) {
  const uint32_t a = bits + off / 8, w = a & ~3u, nb = state_value_bits(code);
  uint32_t lo, hi;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(lo) : "r"(w) : "memory");
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(hi) : "r"(w + 4) : "memory");
  const uint64_t v = ((uint64_t(hi) << 32) | lo) >> ((a & 3) * 8 + off % 8);  // nb + shift <= 62
  return uint32_t(v & ((1ull << nb) - 1)) | (1u << nb);
}

// common::read_state_bits out of line: a section whose staged first KiB does not hold its states
// and first words (a long table, or a section shorter than that room) has its states read from
// global memory. That is rare on full blocks, and inlined twice its byte loop sat in the middle of
// rans_setup's code.
__device__ __noinline__ uint32_t read_state_bits_global(const uint8_t* bits, uint32_t off, unsigned code) {
  return read_state_bits(bits, off, code);
}

// Parses the section's head (format §4.2: the frequency table, staged in shared memory first; the
// states; w0) and builds the slot table; sets up stream 0 in r (its ring: m's) and, in a two-stream
// block, stream 1's start in sh.next. Returns false if the section is malformed (the checks of the
// CPU decoder).
__device__ __forceinline__ bool rans_setup(DecodeWarpShared& sh, const BlockJob& j, RansMem m, RansState& r) {
  const int lane = threadIdx.x & 31;
  if (j.n == 0) return false;
  // The section's first bytes in one round of loads (sh.in's first KiB): the table, and the states
  // and the first 128 words too unless the table is long. (Loaded from global memory once the
  // table was parsed, the states and then the words were two more memory latencies of the
  // block's set-up.)
  // kSetupBytes and up to 3 bytes of lead, in whole words, end at 1024, where `freq` starts.
  constexpr uint32_t kMaxTable = 2 + 2 * 256, kSetupBytes = 1024 - 4, kFirstWords = 96 + 32;
  const uint32_t avail = uint32_t(j.section_size < kSetupBytes ? j.section_size : kSetupBytes);
  {
    ChunkInputs& c = sh.ci[0];
    if (lane == 0) {
      c.clear();
      c.add(j.section, avail);
    }
    __syncwarp();
    uint32_t reg[kPrefetchRegs];
    prefetch(c, reg);
    commit(c, reg, sh.in);
    __syncwarp();
  }
  const uint8_t* tbl = sh.in + (uintptr_t(j.section) & 3);
  uint32_t* freq = reinterpret_cast<uint32_t*>(sh.in + 1024);
  uint32_t used = 0;
  if (!parse_freq_table_warp(tbl, avail < kMaxTable ? avail : kMaxTable, freq, &used)) return false;
  // The state area of 32 lanes a stream: lane l reads global lanes l and (two streams) 32 + l.
  const bool two = rans_streams(j.n) == 2;
  const uint32_t lanes = two ? 2 * kLanes : kLanes, codes = state_codes_bytes(lanes);
  if (j.section_size < used + min_state_area_bytes(lanes)) return false;  // the length codes at least
  // The staged bytes when the largest state area, w0 and the first words lie in them, else the section.
  const uint32_t most = codes + (state_value_bits(15) * lanes + 7) / 8 + (two ? kMaxVarintBytes : 0);
  const bool staged = used + most + 2 * kFirstWords <= avail;
  const uint8_t* const sec = staged ? tbl : j.section;
  __syncwarp();
  const uint8_t* const area = sec + used;
  const unsigned code0 = (area[lane / 2] >> (4 * (lane % 2))) & 0xF;
  const unsigned code1 = two ? (area[kLanes / 2 + lane / 2] >> (4 * (lane % 2))) & 0xF : 0;
  const uint32_t bits0 = state_value_bits(code0), bits1 = two ? state_value_bits(code1) : 0;
  // Each lane's bit offsets: an inclusive scan of both streams' value bits at once (each stream's
  // sum is at most 32 * 31 bits: no carry between the halves).
  uint32_t offs = bits0 | (bits1 << 16);
  for (int o = 1; o < 32; o <<= 1) {
    const uint32_t t = __shfl_up_sync(0xFFFFFFFFu, offs, o);
    if (lane >= o) offs += t;
  }
  const uint32_t sums = __shfl_sync(0xFFFFFFFFu, offs, 31), bits = (sums & 0xFFFF) + (sums >> 16);
  const uint32_t area_bytes = codes + (bits + 7) / 8;
  if (j.section_size - used < area_bytes) return false;
  const uint8_t* const value_bits = area + codes;
  if (bits % 8 && (value_bits[bits / 8] >> (bits % 8))) return false;  // a padding bit is set
  const auto state_of = [&](uint32_t off, unsigned code) {
    return staged ? read_state_bits_shared(shared_address(value_bits), off, code) : read_state_bits_global(value_bits, off, code);
  };
  r.x = state_of((offs & 0xFFFF) - bits0, code0);
  // w0 (two streams), then the words: stream 0's w0, then stream 1's.
  uint32_t at = used + area_bytes, w0 = 0;
  if (two) {
    const uint64_t left = j.section_size - at;
    uint32_t w0_bytes = 0;
    if (!read_varint(sec + at, left < kMaxVarintBytes ? uint32_t(left) : kMaxVarintBytes, &w0, &w0_bytes)) return false;
    at += w0_bytes;
  }
  if ((j.section_size - at) % 2) return false;
  const uint32_t total = uint32_t((j.section_size - at) / 2);
  if (!two) w0 = total;
  if (w0 > total) return false;
  r.words = j.section + at;
  r.nwords = w0;
  if (two) {
    sh.next.x[lane] = state_of((sums & 0xFFFF) + (offs >> 16) - bits1, code1);
    if (lane == 0) {
      sh.next.words = r.words + 2ull * w0;
      sh.next.nwords = total - w0;
    }
  }
  rans_start(m, r, sec + at);
  // Lane l holds the frequencies of symbols 8 l .. 8 l + 7; a warp scan gives their cum.
  uint32_t f[8], local = 0;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    f[k] = freq[lane * 8 + k];
    local += f[k];
  }
  uint32_t inc = local;
  for (int o = 1; o < 32; o <<= 1) {
    uint32_t t = __shfl_up_sync(0xFFFFFFFFu, inc, o);
    if (lane >= o) inc += t;
  }
  uint32_t c[8];
  c[0] = inc - local;
#pragma unroll
  for (int k = 1; k < 8; ++k) c[k] = c[k - 1] + f[k - 1];
  // The slot table: slots [cum, cum + f) of symbol s hold slot_entry(s, f, 0 .. f - 1). Each lane
  // fills 64 consecutive slots in one walk: a slot holding a marker (the entry of a symbol's first
  // slot) starts that symbol; any other slot holds the previous slot's entry plus one. Lane l
  // starts at slot 64 l + l and wraps to 64 l, so that the 32 lanes' accesses fall in 32 different
  // banks; the entries of both slots come from a binary search of the cums. (One symbol at a time,
  // the whole warp writing its slots 32 at a time, took 7,000 of a block's 12,000 set-up cycles:
  // a few dependent rounds of ballot, shuffles and a loop per present symbol. The walk cut the
  // set-up to 8,400 cycles, 1.02-1.03x on 16 x 512 KiB and 64 MiB; H200 2026-11-30.)
  __syncwarp();  // every lane is done with the staged section bytes, which `cum` replaces
  uint32_t* cum = reinterpret_cast<uint32_t*>(sh.in);
  static_assert(256 * 4 <= 1024, "cum fits below freq");
  for (uint32_t k = lane; k < kProbScale / 4; k += 32) reinterpret_cast<uint4*>(sh.table)[k] = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < 8; ++k) cum[lane * 8 + k] = c[k];
  __syncwarp();
#pragma unroll
  for (int k = 0; k < 8; ++k)
    if (f[k]) sh.table[c[k]] = slot_entry(uint32_t(8 * lane + k), f[k], 0);
  __syncwarp();
  // Slot p's entry. Its symbol is the last one whose cum is at most p: an absent symbol has the
  // next one's cum, and the last symbol's cum + f is kProbScale, so that symbol is present.
  const auto entry_at = [&](uint32_t p) {
    uint32_t sym = 0;
#pragma unroll
    for (uint32_t step = 128; step; step >>= 1)
      if (cum[sym + step] <= p) sym += step;
    return slot_entry(sym, freq[sym], p - cum[sym]);
  };
  const uint32_t base = 64 * uint32_t(lane);
  uint32_t cur = entry_at(base + uint32_t(lane));
  const uint32_t at_base = entry_at(base);
  for (uint32_t i0 = 0; i0 < 64; i0 += 8) {
    uint32_t e[8];  // eight distinct slots: all loaded before any is written
#pragma unroll
    for (uint32_t k = 0; k < 8; ++k) e[k] = sh.table[base + ((uint32_t(lane) + i0 + k) & 63)];
#pragma unroll
    for (uint32_t k = 0; k < 8; ++k) {
      if (((uint32_t(lane) + i0 + k) & 63) == 0) cur = at_base;
      cur = e[k] ? e[k] : cur;
      e[k] = cur++;
    }
#pragma unroll
    for (uint32_t k = 0; k < 8; ++k) sh.table[base + ((uint32_t(lane) + i0 + k) & 63)] = e[k];
  }
  __syncwarp();
  return true;
}

// One rANS step for every lane is rans_lookup, then rans_advance (active: this lane has an element
// in it), which returns the lane's symbol. Apart, so that work off the recurrence's chain can issue
// while the slot-table load is in flight (rans_steps). A word read past the end reads 0 and leaves
// wpos past nwords, which rans_finish rejects, so the step itself needs no bound check.
__device__ __forceinline__ uint32_t rans_lookup(RansMem m, const RansState& r) { return load_slot_entry(m.table, r.x); }
// kShuffle: a renormalising lane takes its word from the lane of its rank, out of the words each
// lane loaded when the step started (rans_load_ahead), instead of loading it after the ballot.
// That takes the load off the step's chain: 16 x 512 KiB of bf16 decoded 1.01x faster in the group
// decoder; the warp decoder keeps the load, with which 64 MiB decoded 1.015x faster (H200
// 2026-11-30 and 12-01).
template <bool kShuffle>
__device__ __forceinline__ uint32_t rans_advance(RansState& r, uint32_t e, bool active, uint32_t lt) {
  uint32_t x = active ? (e >> 20) * (r.x >> kProbBits) + (e & 0xFFF) : r.x;
  const bool need = active && x < kRansL;
  const uint32_t mask = __ballot_sync(0xFFFFFFFFu, need);
  const uint32_t rank = __popc(mask & lt);
  const uint32_t w = kShuffle ? __shfl_sync(0xFFFFFFFFu, r.ahead, rank) : load_shared_u16(r.rd + 2 * rank);
  if (need) x = (x << 16) | w;
  r.x = x;
  r.rd += 2 * __popc(mask);
  return (e >> 12) & 0xFF;
}
// kShuffle: this lane's word of the 32 from wpos on (all staged: rans_refill).
template <bool kShuffle>
__device__ __forceinline__ void rans_load_ahead(RansState& r, uint32_t lane) {
  if constexpr (kShuffle) r.ahead = load_shared_u16(r.rd + 2 * lane);
}
__device__ __forceinline__ uint32_t rans_wpos(RansMem m, const RansState& r) {
  return r.lap + (r.rd - shared_address(m.ring)) / 2;
}
// Wraps rd back into the ring, then stages words 64 at a time (2 a lane) until at least `want` (at
// most 128) follow wpos: the steps after it may read up to 32 words each. Then at most 191 words
// are staged past wpos, within the ring's 256. Checked once per group of steps rather than in
// every step, which kept a branch in the recurrence. The same in every lane; the new slots are not
// in [wpos, staged). (32 at a time, it staged twice as often: 64 decoded 16 x 512 KiB 1.008x, 512
// KiB x 128 1.022x and 64 MiB 1.01x faster, H200 2026-12-01.) The two words are spelled out: as
// arrays in RansState, next_lo[2] / next_hi[2], the warp decoder ran 64 MiB 0.87x as fast.
__device__ __forceinline__ void rans_refill(RansMem m, RansState& r, uint32_t want) {
  const uint32_t lane = threadIdx.x & 31;
  if (r.rd >= shared_address(m.ring + kRingWords)) {
    r.rd -= 2 * kRingWords;
    r.lap += kRingWords;
  }
  const uint32_t wpos = rans_wpos(m, r);
#pragma unroll 1
  for (int k = 0; k < 2 && r.staged - wpos < want; ++k) {  // 2 x 64 >= want
    const uint32_t slot = (r.staged + lane) % kRingWords, slot2 = (r.staged + 32 + lane) % kRingWords;
    const uint16_t v = uint16_t(r.next_lo | (r.next_hi << 8)), v2 = uint16_t(r.next2_lo | (r.next2_hi << 8));
    m.ring[slot] = v;
    if (slot < kRingMirror) m.ring[kRingWords + slot] = v;
    m.ring[slot2] = v2;
    if (slot2 < kRingMirror) m.ring[kRingWords + slot2] = v2;
    r.staged += 64;
    load_word_bytes(r, r.words, r.staged + lane, &r.next_lo, &r.next_hi);
    load_word_bytes(r, r.words, r.staged + 32 + lane, &r.next2_lo, &r.next2_hi);
    __syncwarp();
  }
}

// Decodes steps [t0, t1) of the stream of block elements [first, end) (step t: elements first + 32 t
// + lane) and stores each element into the stage (element 0 of `out` is block element o0): the
// symbol alone, or (kJoin) the whole element, joined with its residual bytes from the planes
// res[0..2] (nullptr: absent; indexed like `out`). (Joined here, the warp decoder no longer re-reads
// the stage to join: that pass was a fifth of its stall samples on 64 MiB, ncu 2026-11-30.) Whole
// steps go G at a time. Each step's slot-table load is issued before the work that does not feed
// the chain of steps: the ring's refill (first step of a group) or the previous step's store. The
// asm loads are ordered memory operations, so that work issues while the load is in flight instead
// of between two steps. (With the refill before the group and the stores after it, a quarter of the
// recurrence's stall samples were on them; a step took about 180 cycles in the group decoder
// against 136 for the steps alone. This order gained only 1.01x there and on 64 MiB, H200
// 2026-11-30: the chain's own latency is most of a step.)
template <unsigned dtype, unsigned layout, bool kJoin = false, bool kShuffle = false>
__device__ __forceinline__ void rans_steps(RansMem m, RansState& r, uint32_t t0, uint32_t t1, uint32_t first, uint32_t end,
                                           uint32_t o0, uint8_t* out, const uint8_t* const* res = nullptr) {
  constexpr unsigned es = esize_of(dtype);
  constexpr uint32_t G = 4;
  const uint32_t lt = lanemask_lt(), lane = threadIdx.x & 31;
  const uint32_t count = end - first, at = first - o0;  // the stream's elements; its element 0 in `out`
  const uint32_t full = count / 32 < t1 ? count / 32 : t1;  // steps where every lane has an element
  const auto residual = [&](uint32_t i) {  // i: index into out
    if constexpr (kJoin) return residual_from_planes<dtype>(res[0], res[1], res[2], i);
    return 0u;
  };
  const auto put = [&](uint32_t i, uint32_t s, uint32_t v) {
    store_element_at(out, layout, es, i, kJoin ? join_element(dtype, s, v) : s);
  };
  uint32_t t = t0;
  bool held = false;  // the previous group's last element, stored in this group's first step
  uint32_t held_i = 0, held_s = 0, held_v = 0;
  for (; t + G <= full; t += G) {
    // The residuals first, so that their loads are in flight during the G steps.
    uint32_t v[G], sym[G];
#pragma unroll
    for (uint32_t k = 0; k < G; ++k) v[k] = residual(32 * (t + k) + lane + at);
#pragma unroll
    for (uint32_t k = 0; k < G; ++k) {
      const uint32_t e = rans_lookup(m, r);
      if (k == 0) {
        rans_refill(m, r, 32 * G);
        rans_load_ahead<kShuffle>(r, lane);
        if (held) put(held_i, held_s, held_v);
      } else {
        rans_load_ahead<kShuffle>(r, lane);
        put(32 * (t + k - 1) + lane + at, sym[k - 1], v[k - 1]);
      }
      sym[k] = rans_advance<kShuffle>(r, e, true, lt);
    }
    held = true;
    held_i = 32 * (t + G - 1) + lane + at;
    held_s = sym[G - 1];
    held_v = v[G - 1];
  }
  if (held) put(held_i, held_s, held_v);
  for (; t < t1; ++t) {
    const uint32_t i = 32 * t + lane;  // the stream's element
    const uint32_t v = i < count ? residual(i + at) : 0;
    rans_refill(m, r, 32);
    rans_load_ahead<kShuffle>(r, lane);
    const uint32_t s = rans_advance<kShuffle>(r, rans_lookup(m, r), i < count, lt);
    if (i < count) put(i + at, s, v);
  }
}

// The end checks of format §4.2 for stream `stream`: seeded lanes (global lane g = 32 stream + lane
// below seed / 2) end in [L, 2L), the others at L; every word of the stream read.
__device__ __forceinline__ bool rans_finish(RansMem m, const RansState& r, uint32_t seed, uint32_t stream) {
  const uint32_t g = kLanes * stream + (threadIdx.x & 31);
  const bool lane_ok = 2 * g < seed ? (r.x >> 16) == 1 : r.x == kRansL;
  return __all_sync(0xFFFFFFFFu, lane_ok) && rans_wpos(m, r) == r.nwords;
}
// Each seeded lane's two residual bytes (its final state minus L) into seeds[2 g ..] (g: its
// global lane).
__device__ __forceinline__ void store_seeds(const RansState& r, uint32_t seed, uint32_t stream, uint8_t* seeds) {
  const uint32_t g = kLanes * stream + (threadIdx.x & 31);
  if (2 * g < seed) {
    seeds[2 * g] = uint8_t(r.x);
    seeds[2 * g + 1] = uint8_t(r.x >> 8);
  }
}
// The warp decoder's switch from stream 0, done, to stream 1 of a two-stream block (sh.job): stream
// 0's end checks and seeds, then stream 1's start in the same ring. False: stream 0 is corrupt.
__device__ __forceinline__ bool switch_to_stream1(DecodeWarpShared& sh, RansState& r) {
  const RansMem m = rans_mem(sh);
  if (!rans_finish(m, r, sh.job.seed, 0)) return false;
  store_seeds(r, sh.job.seed, 0, sh.seeds);
  __syncwarp();  // stream 0's last ring reads before stream 1's first words replace them
  rans_start_stream1(m, r, sh.next);
  return true;
}
// The warp decoder's RANS elements [from, to) of one stream (sh.job's), joined with their residuals
// res (element 0 of the stage and of res is block element e0).
__device__ __forceinline__ void rans_chunk_steps(DecodeWarpShared& sh, RansState& r, uint32_t from, uint32_t to,
                                                 uint32_t e0, uint8_t* stage, const uint8_t* const* res) {
  const BlockJob& jb = sh.job;
  const bool s1 = from >= jb.split;
  const uint32_t first = s1 ? jb.split : 0, end = s1 ? jb.n : jb.split;
  dispatch_dtype_layout(jb.dtype, jb.layout, [&](auto dt, auto ly) {
    rans_steps<decltype(dt)::value, decltype(ly)::value, true>(rans_mem(sh), r, (from - first) / 32, (to - first + 31) / 32,
                                                               first, end, e0, stage, res);
  });
}
// Rewrites the seeded elements of the stage (whose element 0 is block element e0) with their
// residual bytes from the seeds; the join read other payload bytes in their place. Not inlined:
// it runs once per block, and inlined into the join it cost the decoders registers. It takes the
// block's fields by value: a reference to the BlockJob kept the whole job in local memory, whose
// fields both decoders then reloaded from there (by value: 1.03x on 16 x 512 KiB and 512 KiB x
// 128, H200 2026-11-30).
struct SeededFields {
  uint32_t n, seed;
  unsigned dtype, layout, es;
  uint8_t mask;
};
__device__ __noinline__ void patch_seeded(uint8_t* stage, uint32_t e0, SeededFields j, const uint8_t* seeds, int t,
                                          int nthreads) {
  const uint32_t count = j.seed < j.n ? j.seed : j.n;
  for (uint32_t i = j.n - count + t; i < j.n; i += nthreads) {
    if (i < e0) continue;  // not in this stage (the seed rule keeps them in a block's last 2 KiB)
    const uint32_t v = element_at(stage, j.layout, j.es, i - e0);
    store_element_at(stage, j.layout, j.es, i - e0, with_seeded_bytes(j.dtype, v, i, j.n, j.mask, j.seed, seeds));
  }
}
__device__ __forceinline__ SeededFields seeded_fields(const BlockJob& j) {
  return SeededFields{j.n, j.seed, j.dtype, j.layout, j.es, j.mask};
}

__device__ __forceinline__ bool window_setup(const BlockJob& j, WindowState& w) {
  w.nb8 = (j.n + 7) / 8;
  if (j.section_size < 1 + 3ull * w.nb8) return false;
  w.base = j.section[0];
  if (w.base > kMaxWindowBase) return false;
  w.codes = j.section + 1;
  w.esc = w.codes + 3ull * w.nb8;
  w.nesc = uint32_t(j.section_size - 1 - 3ull * w.nb8);
  w.epos = 0;
  w.bad = false;
  const uint32_t lim = j.n % 8;
  if (lim) {  // padding bits are zero
    const uint32_t last = w.nb8 - 1;
    if (((w.codes[last] | w.codes[w.nb8 + last] | w.codes[2 * w.nb8 + last]) >> lim) != 0) return false;
  }
  return true;
}

// Elements [e0, e1) (e0 a multiple of 32); c0, c1, c2: the chunk's staged code bytes.
__device__ __forceinline__ void window_elements(const BlockJob& j, WindowState& w, const uint8_t* c0, const uint8_t* c1,
                                const uint8_t* c2, uint32_t e0, uint32_t e1, uint8_t* out) {
  const int lane = threadIdx.x & 31;
  const uint32_t lt = lanemask_lt();
  for (uint32_t i0 = e0; i0 < e1; i0 += 32) {
    const uint32_t i = i0 + lane;
    const bool active = i < e1;
    uint32_t c = 0;
    if (active) {
      const uint32_t byte = (i - e0) / 8, bit = (i - e0) % 8;
      c = ((c0[byte] >> bit) & 1) | (((c1[byte] >> bit) & 1) << 1) | (((c2[byte] >> bit) & 1) << 2);
    }
    const bool esc = active && c == 0;
    const uint32_t mask = __ballot_sync(0xFFFFFFFFu, esc);
    uint32_t s = w.base + c - 1;
    if (esc) {
      const uint32_t k = w.epos + __popc(mask & lt);
      if (k < w.nesc) s = w.esc[k];
      else w.bad = true;
    }
    w.epos += __popc(mask);
    if (active) store_element_at(out, j.layout, j.es, i - e0, s);
  }
}

// The elements [e0, e1) that the chunk at original offset cstart (clen bytes) holds. (The
// division by the element size, with the chunk's size spilled, was the warp decoder's largest
// stall once a chunk: ncu, H200 2026-11-30.)
__device__ __forceinline__ void chunk_elements(const BlockJob& j, uint32_t cstart, uint32_t clen, uint32_t& e0, uint32_t& e1) {
  e0 = cstart / kDecodeChunk * j.chunk_elems;
  e1 = e0 + (clen == kDecodeChunk ? j.chunk_elems : uint32_t(gathered_size(j.layout, clen)) / j.es);
  if (e1 > j.n) e1 = j.n;
}

// The payload inputs of the chunk at original offset cstart, into c (shared memory; lane 0 builds
// it, then the warp syncs).
__device__ __forceinline__ void chunk_inputs(ChunkInputs& c, const BlockJob& j, const WindowState& ws, uint32_t cstart) {
  if ((threadIdx.x & 31) == 0) {
    c.clear();
    if (cstart < j.blen) {
      const uint32_t clen = uint32_t(j.blen - cstart < kDecodeChunk ? j.blen - cstart : kDecodeChunk);
      if (j.mode == kModeRaw) {
        c.add(j.payload + 1 + cstart, clen);
      } else {
        uint32_t e0, e1;
        chunk_elements(j, cstart, clen, e0, e1);
        const uint32_t ne = e1 > e0 ? e1 - e0 : 0;
        if (j.plane0) c.add(j.plane0 + e0, ne);
        if (j.plane1) c.add(j.plane1 + e0, ne);
        if (j.plane2) c.add(j.plane2 + e0, ne);
        if (j.mode == kModePlanes && (j.mask & 1)) {
          c.add(j.section + e0, ne);
        } else if (j.mode == kModeWindow) {
          for (int k = 0; k < 3; ++k) c.add(ws.codes + k * ws.nb8 + e0 / 8, (ne + 7) / 8);
        }
      }
    }
  }
  __syncwarp();
}

// Decodes one block; returns common::kOk, kCorruptBlock or kChecksumMismatch.
__device__ __forceinline__ uint8_t decode_block(DecodeWarpShared& sh, BlockJob& j, uint32_t checksum) {
  const int lane = threadIdx.x & 31;
  uint8_t* stage = sh.stage + kFront;
  RansState rs{};
  WindowState ws{};
  if (j.mode > kModeRans) return kCorruptBlock;
  if (j.mode == kModeRaw) {
    if (j.psize != 1 + j.blen) return kCorruptBlock;
  } else {
    if (j.psize < 2) return kCorruptBlock;
    j.mask = j.payload[1];
    if (j.mask >> (1 + j.rp)) return kCorruptBlock;
    if (j.mode != kModePlanes && !(j.mask & 1)) return kCorruptBlock;
    const uint64_t glen = gathered_size(j.layout, j.blen);
    j.n = uint32_t(glen / j.es);
    j.tail = uint32_t(glen % j.es);
    j.seed = j.mode == kModeRans ? rans_seed_bytes(BlockStats{j.blen, j.n, 0, 0, 0}, j.mask) : 0;
    const uint64_t prefix = 2 + uint64_t(popcount32(j.mask >> 1)) * j.n - j.seed + j.tail;
    if (prefix > j.psize) return kCorruptBlock;
    const uint8_t* p = j.payload + 2;
    j.present = 0;
    j.plane0 = j.plane1 = j.plane2 = nullptr;
    if (j.rp > 0 && (j.mask & 2)) { j.plane0 = p; p += j.n; ++j.present; }
    if (j.rp > 1 && (j.mask & 4)) { j.plane1 = p; p += j.n; ++j.present; }
    if (j.rp > 2 && (j.mask & 8)) { j.plane2 = p; p += j.n; ++j.present; }
    j.tail_bytes = p - j.seed;  // plane reads of seeded bytes land in the tail and section (in bounds)
    j.section = j.payload + prefix;
    j.section_size = j.psize - prefix;
    if (j.mode == kModePlanes) {
      if (j.section_size != ((j.mask & 1) ? j.n : 0)) return kCorruptBlock;
    } else if (j.mode == kModeWindow) {
      if (!window_setup(j, ws)) return kCorruptBlock;
    } else {
      if (!rans_setup(sh, j, rans_mem(sh), rs)) return kCorruptBlock;
    }
  }

  // From here on the job is read from the warp's shared memory. Kept in registers across the
  // chunk loop, its fields were spilled, and every chunk reloaded them from local memory, waiting
  // on L2: 15% of decode_kernel's stall samples on 64 MiB (ncu, H200 2026-11-30). From shared
  // memory (the addresses first, then the whole job): spills 152 / 124 -> 120 / 100 bytes, 64 MiB
  // decoded 1.08x faster (bf16; fp32 1.09x). chunk_elements then took them to 116 / 96.
  j.chunk_elems = uint32_t(gathered_size(j.layout, kDecodeChunk)) / j.es;
  j.split = j.mode == kModeRans ? rans_stream_split(j.n) : j.n;
  if (lane == 0) sh.job = j;
  __syncwarp();
  const BlockJob& jb = sh.job;
  xxh3::WarpAcc acc;
  acc.init();
  const uint32_t nb_hash = jb.blen > 240 ? uint32_t(xxh3::long_blocks(jb.blen)) : 0;
  uint32_t reg[kPrefetchRegs];
  int ci = 0;
  chunk_inputs(sh.ci[0], jb, ws, 0);
  prefetch(sh.ci[0], reg);
  commit(sh.ci[0], reg, sh.in);
  __syncwarp();
  for (uint32_t cstart = 0; cstart < jb.blen; cstart += kDecodeChunk) {
    const uint32_t clen = uint32_t(jb.blen - cstart < kDecodeChunk ? jb.blen - cstart : kDecodeChunk);
    const ChunkInputs& cur = sh.ci[ci];
    ChunkInputs& next = sh.ci[ci ^ 1];
    chunk_inputs(next, jb, ws, cstart + kDecodeChunk);
    prefetch(next, reg);  // in flight while this chunk decodes
    if (cstart) {  // keep the previous chunk's last 64 bytes in front (the final stripe may need them)
      if (lane < 16)
        reinterpret_cast<uint32_t*>(sh.stage)[lane] = reinterpret_cast<const uint32_t*>(stage + kDecodeChunk - kFront)[lane];
      __syncwarp();
    }
    if (jb.mode == kModeRaw) {
      const uint32_t* w = reinterpret_cast<const uint32_t*>(sh.in);
      const unsigned sh8 = cur.lead[0] * 8;
      for (uint32_t k = lane; k < (clen + 3) / 4; k += 32)
        reinterpret_cast<uint32_t*>(stage)[k] = sh8 ? __funnelshift_r(w[k], w[k + 1], sh8) : w[k];
    } else {
      uint32_t e0, e1;
      chunk_elements(jb, cstart, clen, e0, e1);
      const uint32_t ne = e1 > e0 ? e1 - e0 : 0;
      // This chunk's residual planes in `in`, then the symbols into the stage, as each element's
      // value (RANS: joined with its residuals already).
      const uint8_t* res[3];
      {
        int at = 0;
        res[0] = jb.plane0 ? cur.at(sh.in, at++) : nullptr;
        res[1] = jb.plane1 ? cur.at(sh.in, at++) : nullptr;
        res[2] = jb.plane2 ? cur.at(sh.in, at++) : nullptr;
      }
      const bool last = cstart + clen == jb.blen;
      if (jb.mode == kModeRans) {
        // The streams in turn (format §4.2): stream 1 starts at element `split`, once stream 0 is
        // done and checked. A chunk that starts there switches first; one that straddles it (only
        // a frame's short last block can have one) decodes stream 0's part, switches, then the
        // rest. (A loop over the chunk's streams cost 64 MiB of bf16 0.95x: the chunk waited on its
        // prefetch before the loop, and cstart was spilled.)
        uint32_t from = e0;
        if (from < jb.split && e1 > jb.split) {
          rans_chunk_steps(sh, rs, from, jb.split, e0, stage, res);
          from = jb.split;
        }
        if (from == jb.split && from < jb.n && !switch_to_stream1(sh, rs)) return kCorruptBlock;
        rans_chunk_steps(sh, rs, from, e1, e0, stage, res);
        if (last && jb.seed) store_seeds(rs, jb.seed, rans_streams(jb.n) - 1, sh.seeds);
      } else if (jb.mode == kModeWindow) {
        window_elements(jb, ws, cur.at(sh.in, jb.present), cur.at(sh.in, jb.present + 1), cur.at(sh.in, jb.present + 2),
                        e0, e1, stage);
      } else {
        const bool has = jb.mask & 1;
        const uint8_t* sym = cur.at(sh.in, jb.present);
        for (uint32_t i = lane; i < ne; i += 32) store_element_at(stage, jb.layout, jb.es, i, has ? sym[i] : 0);
      }
      __syncwarp();
      // Join with the residuals (the symbol is the whole element for opaque bytes; RANS joined
      // them in rans_steps).
      if (jb.rp) {
        const uint8_t *r0 = res[0], *r1 = res[1], *r2 = res[2];
        if (jb.mode != kModeRans) dispatch_dtype_layout(jb.dtype, jb.layout, [&](auto dt, auto ly) {
          constexpr unsigned dtype = decltype(dt)::value, layout = decltype(ly)::value, es = esize_of(dtype);
          for (uint32_t i = lane; i < ne; i += 32) {
            const uint32_t r = residual_from_planes<dtype>(r0, r1, r2, i);
            const uint32_t s = element_at(stage, layout, es, i);
            store_element_at(stage, layout, es, i, join_element(dtype, s, r));
          }
        });
        if (last && jb.seed) {
          __syncwarp();
          patch_seeded(stage, e0, seeded_fields(jb), sh.seeds, lane, 32);
        }
      }
      // Tail bytes (flat frames only have them) and the line flags.
      if (jb.tail && e1 == jb.n && cstart + clen == jb.blen)
        for (uint32_t k = lane; k < jb.tail; k += 32) stage[uint64_t(jb.n) * jb.es - cstart + k] = jb.tail_bytes[k];
      if (jb.layout == kLayoutLL) {
        for (uint32_t l = lane; l < clen / kLLLine; l += 32) {
          reinterpret_cast<uint32_t*>(stage + l * kLLLine)[1] = uint32_t(jb.flag);
          reinterpret_cast<uint32_t*>(stage + l * kLLLine)[3] = uint32_t(jb.flag);
        }
      } else if (jb.layout == kLayoutLL128) {
        for (uint32_t l = lane; l < clen / kLL128Line; l += 32)
          reinterpret_cast<uint64_t*>(stage + l * kLL128Line)[kLL128Data / 8] = jb.flag;
      }
    }
    __syncwarp();
    commit(next, reg, sh.in);  // the next chunk's inputs; this chunk no longer reads `in`
    ci ^= 1;
    // Hash the whole stripe blocks of this chunk that precede the last one, then write it out.
    for (uint32_t b = cstart / uint32_t(xxh3::kBlockLen); b < nb_hash && b * xxh3::kBlockLen < cstart + clen; ++b)
      acc.block<true>(stage + (b * xxh3::kBlockLen - cstart));
    copy_from_aligned(jb.dst + cstart, stage, clen, lane, 32);
    if (cstart + clen == jb.blen) break;  // keep the last chunk staged for the finish
    __syncwarp();
  }
  if (jb.mode == kModeRans && !rans_finish(rans_mem(sh), rs, jb.seed, rans_streams(jb.n) - 1)) return kCorruptBlock;
  if (jb.mode == kModeWindow && (__any_sync(0xFFFFFFFFu, ws.bad) || ws.epos != ws.nesc)) return kCorruptBlock;
  // The last chunk is still in the stage (its front holds the previous chunk's last 64 bytes).
  const uint64_t last_start = (jb.blen - 1) / kDecodeChunk * kDecodeChunk;
  uint64_t h;
  if (jb.blen <= 240) {
    h = xxh3::warp_hash_short(stage, jb.blen);
  } else {
    h = acc.finish<true>(stage + (nb_hash * xxh3::kBlockLen - last_start),
                         stage + (int64_t(jb.blen) - int64_t(xxh3::kStripeLen) - int64_t(last_start)), jb.blen);
  }
  __syncwarp();
  return uint32_t(h) == checksum ? kOk : kChecksumMismatch;
}

// ---- group decoder: a group of kGroupWarps warps per block (blocks up to 32 KiB) ----
// Only the sequential part stays on the sequential warps, which decode the whole block's symbols
// into a block-sized stage: warp 0 the rANS stream 0 (or the window escapes), and in a two-stream
// RANS block warp 1 stream 1, side by side (format §4.2; half the chain of dependent steps each).
// Warp 0 sets the block up (the slot table both streams read, and stream 1's start), then releases
// warp 1. Then all warps of the group join the residuals, hash the 1 KiB stripe blocks (each one's
// stripe sums are independent: only the scramble between them is sequential, done afterwards by
// warp 0 on 8 lanes) and store the block.
struct DecodeGroupShared {
  DecodeWarpShared w;  // warp 0's table, ring and set-up scratch; its chunk stage: ring1_of, view_of
  uint64_t part[kGroupStagedBytes / xxh3::kBlockLen][8];   // stripe sums of each 1 KiB block
  __align__(16) uint8_t stage[kGroupStagedBytes + 16];     // the whole block's original bytes
  uint32_t ok[kMaxStreams];                                // each sequential warp's verdict; then ok[0]: the checksum's
  // Pipelined RANS blocks: stripe_ready[b] completes a phase when warps 0 and 1 have each decoded
  // their elements of stripe block b into the stage: each lane of a warp arrives after its stage
  // writes, or, where the warp has none (the other stream's stripe blocks; all of them for warp 1
  // in a one-stream block), lane b arrives at once for the whole warp. Every barrier completes
  // exactly once per pipelined block (the ones past the pipelined stripe blocks too, and all of
  // them when a bad section ends a recurrence early), so the phase a block waits for is the parity
  // of the group's pipelined blocks before it.
  uint64_t stripe_ready[kGroupStagedBytes / xxh3::kBlockLen];
  // Two-stream blocks: completes a phase when warp 0 (all 32 lanes) has set the block up (the slot
  // table, and stream 1's start in w.next), which warp 1 waits for before it starts stream 1.
  uint64_t stream1_ready;
};
// The group decoder stages whole blocks in its own `stage`, so its DecodeWarpShared's chunk stage
// holds warp 1's ring (stream 1) and each warp's kBlockViewBytes (fused_block) instead. That keeps
// four groups within the SM's 196 KiB shared-memory carve-out: past it the SM takes the 228 KiB
// one, which leaves 28 KiB of L1 instead of 60.
constexpr uint32_t kRing1Bytes = 2 * (kRingWords + kRingMirror);
static_assert(kRing1Bytes + kGroupWarps * 64 <= sizeof(DecodeWarpShared::stage), "ring1 and the views fit the chunk stage");
__device__ __forceinline__ uint16_t* ring1_of(DecodeGroupShared& sh) { return reinterpret_cast<uint16_t*>(sh.w.stage); }
static_assert(kRing1Bytes % 16 == 0, "each warp's view is 16-byte aligned (fused_block's word loads)");
__device__ __forceinline__ uint8_t* view_of(DecodeGroupShared& sh, int warp) { return sh.w.stage + kRing1Bytes + 64 * warp; }
constexpr uint32_t kStripeReadyArrivals = kMaxStreams * 32;  // the lanes of warps 0 and 1

// Arrives on stripe_ready[b] for the whole warp (lane b, 32 arrivals): the warp wrote nothing there.
__device__ __forceinline__ void mbarrier_arrive_warp(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(uint32_t(__cvta_generic_to_shared(bar))), "r"(32u)
               : "memory");
}

// A flat RANS block's whole 1 KiB stripe blocks before its seeded elements and its tail: the ones
// the helper warps join, hash and store while the sequential warps decode on (0: no pipeline).
__device__ __forceinline__ uint32_t pipelined_stripe_blocks(const BlockJob& j) {
  if (j.mode != kModeRans || j.layout != kLayoutFlat || j.blen <= 240) return 0;
  const uint32_t seeded = j.seed < j.n ? j.seed : j.n;  // the last `seeded` elements (patch_seeded)
  const uint64_t before_seeded = uint64_t(j.n - seeded) * j.es / xxh3::kBlockLen;
  const uint64_t hashed = xxh3::long_blocks(j.blen);
  return uint32_t(before_seeded < hashed ? before_seeded : hashed);
}

// Joins stripe block b of the stage with its residuals (global memory, pulled into L2), sums its
// stripes into part[b] and stores it: by one warp.
template <unsigned dtype>
__device__ __forceinline__ void finish_stripe_block(const BlockJob& j, uint8_t* stage, uint64_t (*part)[8], uint32_t b) {
  constexpr unsigned es = esize_of(dtype);
  constexpr uint32_t kPer = uint32_t(xxh3::kBlockLen) / es / 32;  // elements per lane
  const uint32_t lane = threadIdx.x & 31, e0 = b * uint32_t(xxh3::kBlockLen) / es;
  if (j.rp) {
    // Each plane's bytes from this lane's first element, so that every load is a constant offset
    // from one address (indexed from the plane's start, each load added its own 64-bit address:
    // 16 x 512 KiB of bf16 decoded 1.007-1.010x faster, H200 2026-12-02).
    const auto from = [&](const uint8_t* plane) { return plane ? plane + e0 + lane : nullptr; };
    const uint8_t *p0 = from(j.plane0), *p1 = from(j.plane1), *p2 = from(j.plane2);
    uint32_t r[kPer];
#pragma unroll
    for (uint32_t k = 0; k < kPer; ++k) r[k] = residual_from_planes<dtype>(p0, p1, p2, 32 * k);  // all in flight first
#pragma unroll
    for (uint32_t k = 0; k < kPer; ++k) {
      const uint32_t i = e0 + 32 * k + lane;
      store_element_at(stage, kLayoutFlat, es, i, join_element(dtype, element_at(stage, kLayoutFlat, es, i), r[k]));
    }
    __syncwarp();
  }
  xxh3::WarpAcc sum;
  sum.init();
  sum.sums_of_block(stage + uint64_t(b) * xxh3::kBlockLen, part[b]);
  copy_from_aligned(j.dst + uint64_t(b) * xxh3::kBlockLen, stage + uint64_t(b) * xxh3::kBlockLen, xxh3::kBlockLen, lane, 32);
}

// The phases of a group's mbarriers that its next block waits for (every thread keeps its own copy,
// and all see the same blocks).
struct GroupPhases {
  uint32_t stripe = 0;   // sh.stripe_ready's: flipped after a pipelined block
  uint32_t handoff = 0;  // sh.stream1_ready's: flipped after a two-stream block
};
// Decodes one block (<= kGroupStagedBytes) with the group g; every thread returns the same status.
__device__ __forceinline__ uint8_t decode_block_group(const Group& g, DecodeGroupShared& sh, BlockJob j, uint32_t checksum,
                                                      GroupPhases& phases) {
  const int lane = g.lane();
  uint8_t* stage = sh.stage;
  RansState rs{};
  WindowState ws{};
  if (j.mode > kModeRans) return kCorruptBlock;
  if (j.mode == kModeRaw) {
    if (j.psize != 1 + j.blen) return kCorruptBlock;
  } else {
    if (j.psize < 2) return kCorruptBlock;
    j.mask = j.payload[1];
    if (j.mask >> (1 + j.rp)) return kCorruptBlock;
    if (j.mode != kModePlanes && !(j.mask & 1)) return kCorruptBlock;
    const uint64_t glen = gathered_size(j.layout, j.blen);
    j.n = uint32_t(glen / j.es);
    j.tail = uint32_t(glen % j.es);
    j.seed = j.mode == kModeRans ? rans_seed_bytes(BlockStats{j.blen, j.n, 0, 0, 0}, j.mask) : 0;
    const uint64_t prefix = 2 + uint64_t(popcount32(j.mask >> 1)) * j.n - j.seed + j.tail;
    if (prefix > j.psize) return kCorruptBlock;
    const uint8_t* p = j.payload + 2;
    j.plane0 = j.plane1 = j.plane2 = nullptr;
    if (j.rp > 0 && (j.mask & 2)) { j.plane0 = p; p += j.n; }
    if (j.rp > 1 && (j.mask & 4)) { j.plane1 = p; p += j.n; }
    if (j.rp > 2 && (j.mask & 8)) { j.plane2 = p; p += j.n; }
    j.tail_bytes = p - j.seed;  // plane reads of seeded bytes land in the tail and section (in bounds)
    j.section = j.payload + prefix;
    j.section_size = j.psize - prefix;
    if (j.mode == kModePlanes) {
      if (j.section_size != ((j.mask & 1) ? j.n : 0)) return kCorruptBlock;
    } else if (j.mode == kModeWindow) {
      if (!window_setup(j, ws)) return kCorruptBlock;
    }
  }

  // The warps that decode the symbols one after the other: warp 0, and warp 1 for stream 1.
  const unsigned seq = j.mode == kModeRans ? rans_streams(j.n) : 1;
  const uint32_t pipelined = pipelined_stripe_blocks(j);
  const uint32_t parity = phases.stripe, handoff_parity = phases.handoff;
  if (pipelined) phases.stripe ^= 1;
  if (seq == 2) phases.handoff ^= 1;

  // The window's three code planes go to shared memory (the rANS table's room, unused then) when
  // they fit, so that warp 0's walk over them does not wait on global loads.
  const uint8_t* codes = ws.codes;
  if (j.mode == kModeWindow && 3ull * ws.nb8 <= sizeof(sh.w.table)) {
    uint8_t* to = reinterpret_cast<uint8_t*>(sh.w.table);
    copy_to_aligned(to, ws.codes, 3ull * ws.nb8, g.tid, g.size);
    codes = to;
    g.sync();
  }

  // 1. Symbols (or the raw bytes) into the stage.
  if (j.mode == kModeRaw) {
    copy_to_aligned(stage, j.payload + 1, j.blen, g.tid, g.size);
  } else if (j.mode == kModePlanes) {
    const bool has = j.mask & 1;
    constexpr int U = 8;  // loads in flight per thread
    for (uint32_t i0 = g.tid; i0 < j.n; i0 += U * g.size) {
      uint32_t v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint32_t i = i0 + u * g.size;
        v[u] = has && i < j.n ? j.section[i] : 0;
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i0 + u * g.size < j.n) store_element_at(stage, j.layout, j.es, i0 + u * g.size, v[u]);
    }
  } else if (g.warp() >= int(seq)) {
    // Meanwhile the other warps (the helpers) pull the whole payload into L2: the residual planes
    // for step 2, and the symbol section, whose words the sequential warps' refills load only one
    // refill ahead. (With the planes alone, those loads went to HBM: the section too made 16 x 512
    // KiB of bf16 decode 1.07x faster, H200 2026-11-30.) Then (pipelined blocks) they take the
    // stripe blocks as the sequential warps decode them: one stream's in turn; with two streams,
    // warp 2 stream 0's and warp 3 stream 1's (the one both streams share goes with stream 0's).
    if (pipelined && g.warp() == 1) mbarrier_arrive_warp(&sh.stripe_ready[lane]);  // one stream: none is warp 1's
    for (uint64_t o = uint64_t(g.tid - 32 * int(seq)) * 128; o < j.psize; o += uint64_t(g.size - 32 * int(seq)) * 128)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(j.payload + o));
    static_assert(kGroupWarps == 4, "the helpers: three for one stream, one a stream for two");
    const uint32_t per = uint32_t(xxh3::kBlockLen) / j.es, helper = uint32_t(g.warp()) - seq;
    const uint32_t shared_from = min_u32(pipelined, (rans_stream_split(j.n) + per - 1) / per);  // two streams: stream 1's own
    uint32_t b = helper, to = pipelined, stride = 3;
    if (seq == 2) {
      b = helper == 0 ? 0 : shared_from;
      to = helper == 0 ? shared_from : pipelined;
      stride = 1;
    }
    for (; b < to; b += stride) {
      // Asleep in the barrier until the stripe block is decoded (about 1.7 us each with one
      // stream). A polled flag with __nanosleep cost issue slots that the recurrence warps could
      // use (6.4 M of the kernel's 17.6 M instructions on 16 x 512 KiB with a 64 ns sleep, ncu
      // 2026-11-30), and racecheck could not see it as synchronisation.
      mbarrier_wait_parity(&sh.stripe_ready[b], parity);
      dispatch_dtype_layout(j.dtype, kLayoutFlat, [&](auto dt, auto) { finish_stripe_block<decltype(dt)::value>(j, stage, sh.part, b); });
    }
  } else {
    bool ok;
    if (j.mode == kModeWindow) {
      window_elements(j, ws, codes, codes + ws.nb8, codes + 2ull * ws.nb8, 0, j.n, stage);
      ok = !__any_sync(0xFFFFFFFFu, ws.bad) && ws.epos == ws.nesc;
    } else {
      // This warp's stream: elements [first, end), its own ring, the shared slot table.
      const uint32_t stream = uint32_t(g.warp()), h = rans_stream_split(j.n);
      const uint32_t first = stream ? h : 0, end = stream ? j.n : h;
      const RansMem m{shared_address(sh.w.table), stream ? ring1_of(sh) : sh.w.ring};
      if (stream == 0) {
        ok = rans_setup(sh.w, j, m, rs);
        if (seq == 2) {
          if (lane == 0) sh.w.next.ok = ok;
          __syncwarp();
          mbarrier_arrive(&sh.stream1_ready);  // every lane, after its writes (release)
        }
      } else {
        // (With a named barrier for the hand-off, bar.arrive on warp 0's side and bar.sync on
        // warp 1's, racecheck reported 35 hazards on 16 x 512 KiB of bf16: warp 1's writes before
        // the group's barrier against other warps' reads after it. With this mbarrier it reports
        // none, and the decode runs as fast; H200 2026-12-01.)
        mbarrier_wait_parity(&sh.stream1_ready, handoff_parity);
        ok = sh.w.next.ok;
        if (ok) rans_start_stream1(m, rs, sh.w.next);
      }
      // The pipelined stripe blocks with elements of this stream: [b0, b1) (none if the set-up
      // failed). The barriers of all others are released at once.
      const uint32_t per = uint32_t(xxh3::kBlockLen) / j.es, b0 = first / per;
      const uint32_t b1 = ok ? min_u32(pipelined, (end + per - 1) / per) : 0;
      if (pipelined && (lane < b0 || lane >= b1)) mbarrier_arrive_warp(&sh.stripe_ready[lane]);
      if (ok) {
        dispatch_dtype_layout(j.dtype, j.layout, [&](auto dt, auto ly) {
          constexpr unsigned dtype = decltype(dt)::value, layout = decltype(ly)::value;
          constexpr uint32_t kPer = uint32_t(xxh3::kBlockLen) / esize_of(dtype);
          // A stripe block at a time while the helpers take them, then the rest.
          uint32_t t = 0;
          for (uint32_t b = b0; b < b1; ++b) {
            const uint32_t t1 = (min_u32((b + 1) * kPer, end) - first + 31) / 32;
            rans_steps<dtype, layout, false, true>(m, rs, t, t1, first, end, 0, stage);
            t = t1;
            // Every lane arrives after its own stage writes (release). (Lane 0 alone, after a
            // __syncwarp, decoded 16 x 512 KiB 1% slower, and racecheck did not see the other
            // lanes' writes as ordered.)
            mbarrier_arrive(&sh.stripe_ready[b]);
          }
          rans_steps<dtype, layout, false, true>(m, rs, t, (end - first + 31) / 32, first, end, 0, stage);
        });
        ok = rans_finish(m, rs, j.seed, stream);
        store_seeds(rs, j.seed, stream, sh.w.seeds);
      }
    }
    if (lane == 0) sh.ok[g.warp()] = ok;
  }
  g.sync();
  if (j.mode >= kModeWindow && !(sh.ok[0] && (seq == 1 || sh.ok[1]))) {
    g.sync();  // every thread has read sh.ok before the next block may write it
    return kCorruptBlock;
  }

  // 2. Residuals, tail bytes and line flags, by the whole group.
  if (j.mode != kModeRaw) {
    if (j.rp) {
      const uint8_t* r0 = j.plane0;
      const uint8_t* r1 = j.plane1;
      const uint8_t* r2 = j.plane2;
      dispatch_dtype_layout(j.dtype, j.layout, [&](auto dt, auto ly) {
        constexpr unsigned dtype = decltype(dt)::value, layout = decltype(ly)::value, es = esize_of(dtype);
        // All of a thread's plane loads are issued before its shared-memory stores (the compiler
        // cannot tell that they do not alias).
        constexpr int U = 8;
        const uint32_t from = pipelined * uint32_t(xxh3::kBlockLen) / es;  // joined by then
        for (uint32_t i0 = from + g.tid; i0 < j.n; i0 += U * g.size) {
          uint32_t r[U];
#pragma unroll
          for (int u = 0; u < U; ++u) {
            const uint32_t i = i0 + u * g.size;
            r[u] = i < j.n ? residual_from_planes<dtype>(r0, r1, r2, i) : 0;
          }
#pragma unroll
          for (int u = 0; u < U; ++u) {
            const uint32_t i = i0 + u * g.size;
            if (i < j.n) store_element_at(stage, layout, es, i, join_element(dtype, element_at(stage, layout, es, i), r[u]));
          }
        }
      });
      if (j.seed) {
        g.sync();
        patch_seeded(stage, 0, seeded_fields(j), sh.w.seeds, g.tid, g.size);
      }
    }
    for (uint32_t k = g.tid; k < j.tail; k += g.size) stage[uint64_t(j.n) * j.es + k] = j.tail_bytes[k];
    if (j.layout == kLayoutLL) {
      for (uint32_t l = g.tid; l < j.blen / kLLLine; l += g.size) {
        reinterpret_cast<uint32_t*>(stage + l * kLLLine)[1] = uint32_t(j.flag);
        reinterpret_cast<uint32_t*>(stage + l * kLLLine)[3] = uint32_t(j.flag);
      }
    } else if (j.layout == kLayoutLL128) {
      for (uint32_t l = g.tid; l < j.blen / kLL128Line; l += g.size)
        reinterpret_cast<uint64_t*>(stage + l * kLL128Line)[kLL128Data / 8] = j.flag;
    }
  }
  g.sync();

  // 3. Stripe sums of every whole 1 KiB block (a warp each), and the block out (pipelined blocks:
  // the ones the other warps have not done yet).
  const uint64_t out_from = uint64_t(pipelined) * xxh3::kBlockLen;
  xxh3::parts_of_blocks(stage, j.blen, sh.part, g.warp(), g.warps(), pipelined);
  copy_from_aligned(j.dst + out_from, stage + out_from, j.blen - out_from, g.tid, g.size);
  g.sync();

  // 4. The scrambles in order and the finish, by warp 0.
  if (g.warp() == 0) {
    const uint32_t h32 = uint32_t(xxh3::hash_from_parts(stage, j.blen, sh.part));
    if (lane == 0) sh.ok[0] = h32 == checksum;
  }
  g.sync();
  const bool match = sh.ok[0];
  g.sync();  // the stage and sh.ok are reused by the next block
  return match ? kOk : kChecksumMismatch;
}

// A block decoder's work list: block `item` of the batch's flat list, as a BlockJob with its
// checksum and its frame's DevMsg; false: skip it. kFused: from the frames themselves and first_s
// (place_blocks_in_cta); else from what validate_kernel set. `view`: kBlockViewBytes of the
// warp's own shared memory (fused). kBigOnly: only blocks larger than the group decoder's stage.
template <bool kFused, bool kBigOnly = false>
__device__ __forceinline__ bool block_of_item(const DecodeArgs& a, const uint32_t* first_s, uint32_t item, uint8_t* view,
                                              BlockJob& j, uint32_t& checksum, DevMsg*& m, uint32_t& b) {
  if constexpr (kFused) {
    const uint32_t mi = owner_by_first([&](uint32_t k) { return first_s[k]; }, a.count, item);
    m = &a.msgs[mi];
    b = item - first_s[mi];
    return fused_block(*m, b, view, j, checksum);
  } else {
    m = &a.msgs[owner_of(a.msgs, a.count, item)];
    b = item - m->first_block;
    return validated_block(*m, b, j, checksum, kBigOnly);
  }
}

// kGroups groups of kGroupWarps warps per CTA, one CTA per SM; a group decodes one block at a time
// (kFused: then checks a frame per job after the blocks). Fused and validated are separate
// instantiations, as in decode_kernel: with one kernel for both, the validated path decoded 3-5%
// slower than before the fused one existed, as two 1-2% (H200, 2026-11-30).
template <bool kFused>
__global__ void __launch_bounds__(32 * kGroupWarps * kGroups) decode_group_kernel(DecodeArgs a) {
  start_after_previous_kernel();
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ uint32_t first_s[kFused ? kFusedMaxFrames + 1 : 1];  // each frame's first block, then the total
  const int gid = threadIdx.x / (32 * kGroupWarps);
  // The group's warp 0 (the one that runs the recurrence) is its warp gid % 4 in hardware, so that
  // the four groups' recurrences issue from four different schedulers (warp w issues from
  // scheduler w % 4); their warps 1 (the second streams) then take one scheduler each as well.
  const int hw_warp = (threadIdx.x >> 5) % kGroupWarps, rotated = (hw_warp - gid % kGroupWarps + kGroupWarps) % kGroupWarps;
  const Group g{gid, 32 * rotated + int(threadIdx.x & 31), 32 * kGroupWarps};
  DecodeGroupShared& sh = reinterpret_cast<DecodeGroupShared*>(smem)[gid];
  static_assert(sizeof(sh.stripe_ready) / sizeof(sh.stripe_ready[0]) == 32, "a lane per barrier");
  // compute-sanitizer's racecheck and synccheck need --num-cuda-barriers 512 for these 132 per CTA
  // (they are not cuda::barrier objects, which it counts): with its default it ran out of
  // tracking slots and the launch failed (2026-11-30).
  if (g.tid < 32) mbarrier_init(&sh.stripe_ready[g.tid], kStripeReadyArrivals);
  if (g.tid == 0) mbarrier_init(&sh.stream1_ready, 32);  // warp 0's lanes arrive
  GroupPhases phases;
  __syncthreads();  // the barriers are initialised before any group uses them
  // Fused: the grid's last CTA also places the blocks in the DevMsgs, for the kBigOnly decoder.
  if constexpr (kFused) place_blocks_in_cta(a, first_s, blockIdx.x == gridDim.x - 1);
  const uint32_t total = kFused ? first_s[a.count] : a.msgs[a.count].first_block;
  // Blocks go to CTAs first, so that a small batch spreads over all SMs of the grid.
  uint32_t item = gid * gridDim.x + blockIdx.x;
  for (; item < total; item += gridDim.x * kGroups) {
    BlockJob j{};
    uint32_t checksum = 0, b = 0;
    DevMsg* m = nullptr;
    if (!block_of_item<kFused>(a, first_s, item, view_of(sh, g.warp()), j, checksum, m, b)) continue;
    if ((uint64_t(1) << j.block_log2) > kGroupStagedBytes) continue;  // the kBigOnly decoder takes these
    const uint8_t st = decode_block_group(g, sh, j, checksum, phases);
    if (st != kOk && g.tid == 0) atomicMin(&m->first_error, (uint64_t(b) << 8) | st);
  }
  // The frame jobs after the block loop, which then holds no registers across them.
  if constexpr (kFused)
    for (; item < total + a.count; item += gridDim.x * kGroups)
      check_frame_call<kStagedTableEntries, 32 * kGroupWarps>(g, a, a.msgs[item - total], sh.w.check, sh.stage);
}

// The jobs of a decode_kernel: every block of frames that validate_kernel checked; every block and
// a frame check per frame (fused); or, after decode_group_kernel (which validated or checked every
// frame), only the blocks larger than its stage, returning at once when no frame has such blocks.
enum class WarpJobs { kValidated, kFused, kBigOnly };

// WARPS warps per CTA, one CTA per SM: 16 keeps more blocks in flight; 8 gives each thread twice
// the registers (no spills).
template <int WARPS, WarpJobs kJobs>
__global__ void __launch_bounds__(32 * WARPS) decode_kernel(DecodeArgs a) {
  constexpr bool kFused = kJobs == WarpJobs::kFused, kBigOnly = kJobs == WarpJobs::kBigOnly;
  start_after_previous_kernel();
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ uint32_t first_s[kFused ? kFusedMaxFrames + 1 : 1];  // each frame's first block, then the total
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  DecodeWarpShared& sh = reinterpret_cast<DecodeWarpShared*>(smem)[warp];
  if (kBigOnly && a.msgs[a.count].status == 0) return;
  if constexpr (kFused) place_blocks_in_cta(a, first_s, false);
  const uint32_t total = kFused ? first_s[a.count] : a.msgs[a.count].first_block;
  // Blocks go to CTAs first, so that a small batch spreads over all SMs of the grid.
  uint32_t item = warp * gridDim.x + blockIdx.x;
  for (; item < total; item += gridDim.x * WARPS) {
    BlockJob j{};
    uint32_t checksum = 0, b = 0;
    DevMsg* m = nullptr;
    if (!block_of_item<kFused, kBigOnly>(a, first_s, item, sh.in, j, checksum, m, b)) continue;
    const uint8_t st = decode_block(sh, j, checksum);
    if (st != kOk && lane == 0) atomicMin(&m->first_error, (uint64_t(b) << 8) | st);
    __syncwarp();
  }
  // The frame jobs after the block loop, which then holds no registers across them.
  if constexpr (kFused)
    for (; item < total + a.count; item += gridDim.x * WARPS)
      check_frame_call<0, 32>(Group{warp, lane, 32}, a, a.msgs[item - total], sh.check, sh.stage);
}

}  // namespace

// The fused decoders' static shared memory (first_s, and place_blocks_in_cta's scan) beside it.
constexpr size_t kFusedStaticBytes = 4 * (kFusedMaxFrames + 1) + 4 * 33 + 64;
static_assert(sizeof(DecodeWarpShared) * 16 + kFusedStaticBytes <= 227 * 1024,
              "16 warps' shared memory must fit one SM (sm_90: 227 KiB)");
static_assert(sizeof(DecodeGroupShared) * kGroups + kFusedStaticBytes + 1024 <= 196 * 1024,
              "the group decoder's shared memory (and the 1 KiB the runtime reserves a CTA) must fit the "
              "196 KiB carve-out (ring1_of)");
size_t decode_smem_bytes(int warps) {
  return warps ? sizeof(DecodeWarpShared) * size_t(warps) : sizeof(DecodeGroupShared) * size_t(kGroups);
}

cudaError_t configure_kernels() {
  const int warp_bytes8 = int(decode_smem_bytes(8)), warp_bytes16 = int(decode_smem_bytes(16)), group_bytes = int(decode_smem_bytes(0));
  constexpr auto kDynamic = cudaFuncAttributeMaxDynamicSharedMemorySize;
  cudaError_t e = cudaFuncSetAttribute(decode_kernel<16, WarpJobs::kValidated>, kDynamic, warp_bytes16);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(decode_kernel<16, WarpJobs::kFused>, kDynamic, warp_bytes16);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(decode_kernel<16, WarpJobs::kBigOnly>, kDynamic, warp_bytes16);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(decode_kernel<8, WarpJobs::kValidated>, kDynamic, warp_bytes8);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(decode_group_kernel<false>, kDynamic, group_bytes);
  if (e == cudaSuccess) e = cudaFuncSetAttribute(decode_group_kernel<true>, kDynamic, group_bytes);
  return e != cudaSuccess ? e : configure_encode();
}

void launch_decode(const DecodeArgs& a, int grid_ctas, cudaStream_t s, cudaEvent_t* marks) {
  if (marks) cudaEventRecord(marks[0], s);
  if (!a.fused) launch_after_previous(validate_kernel, grid_ctas, kValidateThreads, 0, s, a);  // and the block prefix
  if (marks) cudaEventRecord(marks[1], s);
  constexpr int kGroupThreads = 32 * kGroupWarps * kGroups;
  if (a.warps == 0) {  // blocks up to 32 KiB by groups, then any larger ones by warps
    if (a.fused) launch_after_previous(decode_group_kernel<true>, grid_ctas, kGroupThreads, decode_smem_bytes(0), s, a);
    else launch_after_previous(decode_group_kernel<false>, grid_ctas, kGroupThreads, decode_smem_bytes(0), s, a);
    launch_after_previous(decode_kernel<16, WarpJobs::kBigOnly>, grid_ctas, 32 * 16, decode_smem_bytes(16), s, a);
  } else if (a.warps == 8) {  // benchmark only: never fused (DecodeArgs::fused is 0)
    launch_after_previous(decode_kernel<8, WarpJobs::kValidated>, grid_ctas, 32 * 8, decode_smem_bytes(8), s, a);
  } else if (a.fused) {
    launch_after_previous(decode_kernel<16, WarpJobs::kFused>, grid_ctas, 32 * 16, decode_smem_bytes(16), s, a);
  } else {
    launch_after_previous(decode_kernel<16, WarpJobs::kValidated>, grid_ctas, 32 * 16, decode_smem_bytes(16), s, a);
  }
  if (marks) cudaEventRecord(marks[2], s);
}

}  // namespace zipnet::codec::cuda::detail
