// The decoder's frame-level work (format §5 steps 1-2): placing every frame's blocks in the flat work
// list, and the header and table checks that set a frame's status. validate_kernel runs them before
// the block decoders; the fused decoders (DecodeArgs::fused) run them themselves, the placing in
// each CTA and the checks as one extra job per frame beside the block jobs.
#pragma once

#include "common/frame.h"
#include "device_util.cuh"
#include "kernels.h"
#include "xxh3_warp.cuh"

namespace zipnet::codec::cuda::detail {

// The blocks a frame's header declares, when the header is plausible (in bounds, the table fits
// the frame); else 0. It equals the block count of every frame that passes validation, so the work
// list can be placed without waiting for the checksums: the block decoders skip (or, fused, check
// for themselves) the blocks of the frames that fail.
__device__ inline uint32_t declared_blocks(const DevMsg& m) {
  if (m.size < cm::kHeaderSize) return 0;
  // The two fields of parse_header that count the blocks, loaded together before either is checked.
  cm::FrameHeader h;
  h.block_log2 = m.src[7];
  h.original_size = cm::load_u64(m.src + 8);
  h.frame_size = m.size;  // what parse_header requires of a frame that passes
  if (h.block_log2 < cm::kMinBlockLog2 || h.block_log2 > cm::kMaxBlockLog2 || !cm::table_fits(h)) return 0;
  return uint32_t(cm::block_count(h.original_size, h.block_log2));
}

// Each frame's first block in the work list, from the declared blocks, by group g: place(k, first)
// for every frame k < a.count, and place(a.count, total). `red` is g.warps() words of shared memory.
template <class Place>
__device__ void place_blocks(const Group& g, const DecodeArgs& a, uint32_t* red, uint32_t& carry_s, Place place) {
  if (g.tid == 0) carry_s = 0;
  g.sync();
  for (uint32_t k0 = 0; k0 < a.count; k0 += uint32_t(g.size)) {
    const uint32_t k = k0 + uint32_t(g.tid);
    const uint32_t v = k < a.count ? declared_blocks(a.msgs[k]) : 0;
    const uint32_t carry = carry_s;
    uint32_t total;
    const uint32_t at = carry + group_scan(g, v, red, &total);
    if (k < a.count) place(k, at);
    g.sync();
    if (g.tid == 0) carry_s = carry + total;
    g.sync();
  }
  if (g.tid == 0) place(a.count, carry_s);
}

// The fused decoders' placing, by the whole CTA at its start: first_s[k] for k <= a.count (a.count:
// the total), and also the DevMsgs' first_block when `to_global` (decode_kernel<16, WarpJobs::kBigOnly>
// reads those after the group decoder).
__device__ inline void place_blocks_in_cta(const DecodeArgs& a, uint32_t* first_s, bool to_global) {
  __shared__ uint32_t red[32], carry_s;
  const Group cta{-1, int(threadIdx.x), int(blockDim.x)};
  place_blocks(cta, a, red, carry_s, [&](uint32_t k, uint32_t first) {
    first_s[k] = first;
    if (to_global) a.msgs[k].first_block = first;
  });
  __syncthreads();
}

// validate_kernel and the group decoder stage the header and this many table entries (one round of
// loads; a frame with more reads its table from global memory).
constexpr uint32_t kStagedTableEntries = 256;

// A group's shared state for check_frame.
struct FrameCheckShared {
  cm::FrameHeader h;
  uint32_t status;
  uint32_t bad_table;
};

// The header and table checks of frame m (format §5 steps 1-2, in order) by group g of kThreads
// threads, which then sets the frame's outputs (status, size, dtype...). `head` is shared memory
// (16-byte aligned: the header takes word loads) for the header and the table's first
// kStagedEntries entries, loaded in one round (thread 0 parsing the header from global memory
// waited on one field after another).
template <uint32_t kStagedEntries, uint32_t kThreads>
__device__ __forceinline__ void check_frame(const Group& g, const DecodeArgs& a, DevMsg& m, FrameCheckShared& s, uint8_t* head) {
  constexpr uint32_t kStagedBytes = cm::kHeaderSize + cm::kEntrySize * kStagedEntries;
  const uint8_t* in = m.src;
  const uint32_t staged = uint32_t(m.size < kStagedBytes ? m.size : kStagedBytes);
  copy_bytes_one_round<kStagedBytes, kThreads>(head, in, staged, uint32_t(g.tid));
  g.sync();
  uint32_t hh = 0;  // warp 0's hash of the header, for thread 0
  if (g.warp() == 0 && m.size >= cm::kHeaderSize)
    hh = uint32_t(xxh3::warp_hash_short_as<true>(head, cm::kHeaderHashedBytes));
  if (g.tid == 0) {
    cm::FrameHeader h;
    uint8_t st = cm::parse_header<true>(head, m.size, hh, m.dst ? m.cap : 0, &h);
    if (st == cm::kOk && !cm::table_fits(h)) st = cm::kBadTable;
    if (st == cm::kOk && cm::block_count(h.original_size, h.block_log2) > 0xFFFFFFFFull) st = cm::kBadTable;
    s.h = h;
    s.status = st;
    s.bad_table = 0;
  }
  g.sync();
  uint32_t st = s.status;
  const cm::FrameHeader h = s.h;
  const uint64_t nblk = st == cm::kOk ? cm::block_count(h.original_size, h.block_log2) : 0;
  if (st == cm::kOk) {
    // The staged copy of the frame's start when it holds the whole table.
    const uint8_t* frame = nblk <= kStagedEntries ? head : in;
    bool bad = false;
    uint64_t th = 0;
    if (g.warp() == 0) th = xxh3::warp_hash64<false>(frame + cm::kHeaderSize, cm::kEntrySize * nblk);
    if (g.tid == 0 && uint32_t(th) != h.table_checksum) bad = true;
    // Ends strictly increase and the last one fills the frame exactly.
    for (uint64_t i = uint64_t(g.tid); i < nblk; i += uint64_t(g.size)) {
      const uint32_t end = cm::entry_end(frame, i), prev = i ? cm::entry_end(frame, i - 1) : 0;
      if (end <= prev) bad = true;
      if (i == nblk - 1 && cm::kHeaderSize + cm::kEntrySize * nblk + end != h.frame_size) bad = true;
    }
    if (__any_sync(0xFFFFFFFFu, bad) && g.lane() == 0) s.bad_table = 1;
    g.sync();
    if (s.bad_table) st = cm::kBadTable;
  }
  if (g.tid == 0) {
    // Frames with blocks larger than the group decoder's stage go to the kBigOnly decoder.
    if (st == cm::kOk && (uint64_t(1) << h.block_log2) > kDecodeGroupBlock) atomicOr(&a.msgs[a.count].status, 1u);
    m.status = st;
    m.nblk = st == cm::kOk ? uint32_t(nblk) : 0;
    m.out_size = st == cm::kOk ? h.original_size : 0;
    m.flag = h.layout_flag;
    m.dtype = h.dtype;
    m.layout = h.layout;
    m.block_log2 = h.block_log2;
  }
  g.sync();  // `s` and `head` are reused by the group's next job
}
// check_frame as a call, for the fused block decoders. Inlined, it raised their spills (ptxas,
// CUDA 13: the fused warp decoder's from 152 to 180 bytes, the fused group decoder's from 0 to
// 28); in a first form, with the frame job inside the block loop, it left the warp decoder 64
// registers and 900 bytes of spills.
template <uint32_t kStagedEntries, uint32_t kThreads>
__device__ __noinline__ void check_frame_call(const Group& g, const DecodeArgs& a, DevMsg& m, FrameCheckShared& s,
                                              uint8_t* head) {
  check_frame<kStagedEntries, kThreads>(g, a, m, s, head);
}

}  // namespace zipnet::codec::cuda::detail
