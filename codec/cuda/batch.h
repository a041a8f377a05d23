// Device-side descriptors of one batch, shared by the CUDA codec's kernels and its host code.
// The host fills the inputs of every DevMsg with one H2D copy per call; the kernels fill the
// outputs, which come back with one D2H copy. Blocks of all messages form one flat work list.
// A batch of `count` messages has count + 1 DevMsgs: the last is an end marker, zeroed by the host,
// whose first_block is the total number of blocks; on decode its status bit 0 says that some frame
// has blocks larger than the group decoder takes.
#pragma once

#include <cstdint>

namespace zipnet::codec::cuda::detail {

struct DevMsg {
  // inputs
  const uint8_t* src;    // encode: message; decode: frame
  uint8_t* dst;          // encode: frame; decode: message
  uint64_t size;         // encode: message bytes; decode: frame bytes
  uint64_t cap;          // dst capacity
  uint32_t first_block;  // index of the message's first block in the flat work list
  uint32_t nblk;         // encode: set by the host; decode: set by the frame checks (0 if the frame failed)
  uint32_t layout_ok;    // encode: bit0 LL, bit1 LL128 still possible (analyse_kernel clears)
  uint8_t dtype_by_layout[3];  // encode: detected dtype for each layout
  uint8_t block_log2;    // decode: from the header
  // outputs
  uint64_t out_size;     // encode: frame size; decode: original size
  uint64_t flag;         // decode: layout flag
  uint32_t status;       // common::kOk ... (decode: header/table status)
  uint8_t dtype, layout, pad[2];
  unsigned long long first_error;  // decode: (block << 8) | status of the lowest failing block
};

// A block's payload as the encoder chose it, before encode_kernel writes it: stats_kernel sets the
// smallest mode other than RANS, and rans_kernel replaces it when RANS is smaller. Knowing every
// size before any payload is written lets encode_kernel write each payload straight to its place
// in the frame.
struct BlockRec {
  uint32_t size;  // of the whole payload
  uint32_t mode;
};

// A block's statistics and rANS attempt, passed between the encoder's three block kernels
// (stats_kernel -> rans_kernel -> encode_kernel).
struct BlockPlanRec {
  uint16_t freq[256];     // quantised frequencies (format §6), when try_rans
  uint64_t rans_prefix;   // bytes before the rANS words: planes prefix, table, states
  uint64_t window_section;  // the rest of stats_kernel's plan, which encode_kernel reuses
  uint32_t window_base;
  uint32_t lo, hi, ftab;  // rANS symbol range and table bytes
  uint32_t plane_mask;    // bit 0: symbol plane non-zero; bit 1+j: residual plane j non-zero
  uint32_t try_rans;
  uint32_t states[64];    // rANS lane states (global lane order, 32 a stream), and the bytes of the
  uint32_t run_bytes;     // section after them that end the block's slot: w0, the words (rans_kernel)
  uint32_t hash_lo;       // low half of the block's XXH3, when rans_kernel hashed it (hash_in_rans_kernel)
};

struct EncodeArgs {
  DevMsg* msgs;
  uint32_t count;
  uint32_t total_blocks;
  BlockRec* recs;
  BlockPlanRec* plans;   // one per block of the batch
  uint8_t* scratch;      // one slot of slot_bytes per block of the batch
  uint64_t slot_bytes;
  int forced_dtype;      // -1: detect
  uint32_t modes;        // ModeMask
  unsigned block_log2;
  // 1: the blocks run in fused_encode_kernel (small batches, fused_encode_fits) instead of
  // stats_kernel, rans_kernel and encode_kernel. It takes them by ticket and publishes each block's
  // payload size as published[item] = size + 1 (0: not yet), which analyse_kernel zeroes first.
  uint32_t fused;
  uint64_t* published;   // one per block of the batch
  uint32_t* ticket;      // [0]: the next block; [1]: groups finished (fused_encode_kernel resets both)
};

struct DecodeArgs {
  DevMsg* msgs;
  uint32_t count;
  int warps;  // 0: group decoder (4 blocks per CTA); 8 or 16: warps per CTA of the warp-per-block decoder
  // 1: no validate_kernel; each CTA of the block decoder places the blocks itself, a block job
  // checks the header and its own table entries, and a job per frame after the blocks makes the
  // frame's checks and sets its outputs (count <= kFusedMaxFrames).
  uint32_t fused;
};

}  // namespace zipnet::codec::cuda::detail
