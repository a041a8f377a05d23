// One block of a frame: choose and write its payload (encode), or check and decode it (decode).
#pragma once

#include <cstdint>

#include "cpu/kernels.h"
#include "common/block.h"
#include "cpu/scratch.h"
#include "zipnet/codec.h"

namespace zipnet::codec::cpu {

struct BlockInput {
  const uint8_t* original;    // the block's original bytes (flags included)
  uint64_t original_bytes;
  const uint8_t* gathered;    // its data after the layout gather (== original when flat)
  uint64_t gathered_bytes;
  unsigned dtype;
};

// Tests only: turn off the proof-based skip of rANS coding (the output must not change).
void set_rans_skip_for_testing(bool enabled);

// Encoding runs in steps so that the rANS loops of two blocks can interleave: prepare_encode
// splits the block and decides whether rANS must be coded (filling `rans`), the caller codes it
// (alone or paired), then write_encoded picks the mode and writes the payload.
struct EncodeSlot {
  uint8_t* sym;        // block bytes + 64
  uint8_t* res[3];     // block bytes each
  uint16_t* words_end; // end of a buffer of block bytes + 64 words
};
struct PreparedEncode {
  common::BlockStats b;
  const uint8_t* sym;
  const uint8_t* res[3];
  uint32_t base;
  uint64_t window_section;
  uint32_t freq[256];
  uint64_t table_bytes;
  bool needs_rans;
  RansEncTable table;
  unsigned streams;     // rANS streams (format §4.2): 1, or 2 for blocks of more than 8192 symbols
  uint32_t states[common::kLanes * common::kMaxStreams];  // start states (L + seed), then the final ones
  RansEncodeJob rans[common::kMaxStreams];                // stream s codes states[32 s ..]
};
void prepare_encode(const Kernels& k, const EncodeSlot& slot, const BlockInput& in, unsigned modes,
                    PreparedEncode* e);
// Writes the payload to out (room for 1 + original_bytes) and returns its size.
uint64_t write_encoded(const PreparedEncode& e, const BlockInput& in, unsigned modes, uint8_t* out,
                       EncodeStats* stats);

struct BlockTarget {
  uint8_t* dst;               // the block's place in the output
  uint64_t original_bytes;
  unsigned dtype;
  unsigned layout;
  uint64_t layout_flag;
};

// Decoding runs in two steps so that the rANS loops of two blocks can interleave:
// prepare_block checks the payload and decodes everything but the rANS symbols (it fills `rans`
// instead), finish_block writes the output in one forward pass.
struct PreparedBlock {
  const uint8_t* payload;
  uint64_t size;
  unsigned mode;
  uint32_t n, tail;
  const uint8_t* res[3];
  const uint8_t* tail_bytes;
  const uint8_t* sym;
  bool needs_rans;
  unsigned streams;     // rANS streams (format §4.2)
  RansDecodeJob rans[common::kMaxStreams];
  uint32_t states[common::kLanes * common::kMaxStreams];  // start states; the decoders leave the final ones
  uint32_t seed;        // residual bytes the lane seeds carry (RANS only)
  uint8_t mask;
  uint8_t seeds[common::kMaxSeedBytes];
  uint32_t freq[256];
  uint32_t distinct;   // symbols with freq > 0
  uint32_t* table_buf; // where the slot table goes (rans.table), built by ready_rans_table
};

// sym_buf and table_buf: this block's scratch (block bytes + 64, and 2048 entries).
uint8_t prepare_block(Scratch& s, const uint8_t* payload, uint64_t size, const BlockTarget& t, uint8_t* sym_buf,
                      uint32_t* table_buf, PreparedBlock* out);
// Builds a RANS block's slot table unless every stream of it is `paired` (decoded by
// k.rans_decode2) and that decoder goes without it for this block.
void ready_rans_table(const Kernels& k, PreparedBlock& b, bool paired);
// After the rANS decode: checks the final states (seeded lanes in [L, 2L), the others exactly L)
// and takes the seeds from them; false: the block is corrupt.
bool take_seeds(PreparedBlock& b);
void finish_block(const Kernels& k, Scratch& s, const PreparedBlock& b, const BlockTarget& t);

}  // namespace zipnet::codec::cpu
