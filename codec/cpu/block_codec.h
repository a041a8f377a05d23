// One block of a frame: choose and write its payload (encode), or check and decode it (decode).
#pragma once

#include <cstdint>

#include "cpu/kernels.h"
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

// Writes the payload to out (room for 1 + original_bytes) and returns its size.
uint64_t encode_block(const Kernels& k, Scratch& s, const BlockInput& in, unsigned modes, uint8_t* out,
                      EncodeStats* stats);

struct BlockTarget {
  uint8_t* dst;               // the block's place in the output
  uint64_t original_bytes;
  unsigned dtype;
  unsigned layout;
  uint64_t layout_flag;
};

// Decodes payload[0..size) into the target. Returns common::kOk or kCorruptBlock.
uint8_t decode_block(const Kernels& k, Scratch& s, const uint8_t* payload, uint64_t size,
                     const BlockTarget& t);

}  // namespace zipnet::codec::cpu
