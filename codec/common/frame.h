// Format §1 and §5 step 1-2: the 40-byte frame header and the block table, their serialisation,
// and the decoder's validation in the order docs/format.md gives. Checksums are computed by the
// caller (XXH3-64 low 32 bits; the CPU uses xxhash.h, the GPU its own XXH3) and passed in.
#pragma once

#include "elements.h"
#include "hd.h"

namespace zipnet::codec::common {

constexpr uint32_t kMagic = 0x544E505A;  // "ZPNT"
constexpr uint8_t kVersion = 3;
constexpr uint32_t kHeaderSize = 40;
constexpr uint32_t kHeaderHashedBytes = 36;  // header_checksum covers bytes 0..35
constexpr uint32_t kEntrySize = 8;
constexpr unsigned kMinBlockLog2 = 12;
constexpr unsigned kMaxBlockLog2 = 20;
constexpr unsigned kDefaultBlockLog2 = 15;
// Table ends are u32 offsets: a frame's payload area must stay below 4 GiB. Encoders refuse larger
// messages (Status too_large); callers split them.
constexpr uint64_t kMaxPayloadArea = 0xFFFFFFFFull;

enum : uint8_t { kLayoutFlat = 0, kLayoutLL = 1, kLayoutLL128 = 2 };
enum : uint8_t { kModeRaw = 0, kModePlanes = 1, kModeWindow = 2, kModeRans = 3 };

struct FrameHeader {
  uint8_t version = kVersion;
  uint8_t dtype = 0;
  uint8_t layout = kLayoutFlat;
  uint8_t block_log2 = kDefaultBlockLog2;
  uint64_t original_size = 0;
  uint64_t frame_size = 0;
  uint64_t layout_flag = 0;
  uint32_t table_checksum = 0;
  uint32_t header_checksum = 0;
};

ZIPNET_HD inline uint64_t block_count(uint64_t original_size, unsigned block_log2) {
  return (original_size >> block_log2) + ((original_size & ((uint64_t(1) << block_log2) - 1)) != 0);
}

// Worst case: header + table + every block RAW (1 mode byte + its bytes).
ZIPNET_HD inline uint64_t max_frame_size(uint64_t n, unsigned block_log2) {
  uint64_t nblk = block_count(n, block_log2);
  return kHeaderSize + kEntrySize * nblk + nblk + n;
}

// Writes all 40 bytes; header_checksum is written as given (compute it over bytes 0..35 after this
// call, then call store_header_checksum).
ZIPNET_HD inline void write_header(const FrameHeader& h, uint8_t* out) {
  store_u32(out + 0, kMagic);
  out[4] = h.version;
  out[5] = h.dtype;
  out[6] = h.layout;
  out[7] = h.block_log2;
  store_u64(out + 8, h.original_size);
  store_u64(out + 16, h.frame_size);
  store_u64(out + 24, h.layout_flag);
  store_u32(out + 32, h.table_checksum);
  store_u32(out + 36, h.header_checksum);
}
ZIPNET_HD inline void store_header_checksum(uint8_t* out, uint32_t c) { store_u32(out + 36, c); }

// The layout's size rule (§3), also used by the decoder.
ZIPNET_HD inline bool layout_size_ok(unsigned layout, uint64_t original_size, uint64_t flag) {
  switch (layout) {
    case kLayoutFlat: return flag == 0;
    case kLayoutLL: return original_size % 16 == 0 && (flag >> 32) == 0;
    case kLayoutLL128: return original_size % 128 == 0;
    default: return false;
  }
}

// §5 step 1. `avail` is the frame size the caller was given, `dst_cap` the output capacity,
// `header_hash` the low 32 bits of XXH3-64 of bytes 0..35 (only looked at when avail >= 40).
// Returns kOk or the first failing check's status; *h is filled as far as parsed. kAligned4: `in`
// is 4-byte aligned (load_u32_as).
template <bool kAligned4 = false>
ZIPNET_HD inline uint8_t parse_header(const uint8_t* in, uint64_t avail, uint32_t header_hash,
                                      uint64_t dst_cap, FrameHeader* h) {
  if (avail < kHeaderSize) return kTruncated;
  if (load_u32_as<kAligned4>(in) != kMagic) return kBadMagic;
  const uint32_t kinds = load_u32_as<kAligned4>(in + 4);  // bytes 4..7
  h->version = uint8_t(kinds);
  h->dtype = uint8_t(kinds >> 8);
  h->layout = uint8_t(kinds >> 16);
  h->block_log2 = uint8_t(kinds >> 24);
  h->original_size = load_u64_as<kAligned4>(in + 8);
  h->frame_size = load_u64_as<kAligned4>(in + 16);
  h->layout_flag = load_u64_as<kAligned4>(in + 24);
  h->table_checksum = load_u32_as<kAligned4>(in + 32);
  h->header_checksum = load_u32_as<kAligned4>(in + 36);
  if (h->version != kVersion) return kBadVersion;
  if (h->dtype >= kNumDtypes || h->layout > kLayoutLL128 || h->block_log2 < kMinBlockLog2 ||
      h->block_log2 > kMaxBlockLog2)
    return kBadHeader;
  if (h->header_checksum != header_hash) return kBadHeader;
  if (h->frame_size > avail) return kTruncated;
  if (h->frame_size < avail) return kBadHeader;
  if (h->original_size > dst_cap) return kDstTooSmall;
  if (!layout_size_ok(h->layout, h->original_size, h->layout_flag)) return kBadHeader;
  return kOk;
}

// §5 step 2, after the header passed. `table_hash` is XXH3 of the 8*nblk table bytes at
// in + 40 (compute it only when table_fits() is true). Checks ends and the exact total size.
ZIPNET_HD inline bool table_fits(const FrameHeader& h) {
  uint64_t nblk = block_count(h.original_size, h.block_log2);
  // Every block's payload is at least one byte.
  return nblk <= (h.frame_size - kHeaderSize) / (kEntrySize + 1);
}
ZIPNET_HD inline uint8_t check_table(const FrameHeader& h, const uint8_t* in, uint32_t table_hash) {
  if (!table_fits(h)) return kBadTable;
  uint64_t nblk = block_count(h.original_size, h.block_log2);
  if (table_hash != h.table_checksum) return kBadTable;
  const uint8_t* t = in + kHeaderSize;
  uint64_t prev = 0;
  for (uint64_t i = 0; i < nblk; ++i) {
    uint64_t end = load_u32(t + i * kEntrySize);
    if (end <= prev) return kBadTable;
    prev = end;
  }
  if (kHeaderSize + kEntrySize * nblk + prev != h.frame_size) return kBadTable;
  return kOk;
}

// Block table entry accessors.
ZIPNET_HD inline uint32_t entry_end(const uint8_t* frame, uint64_t i) {
  return load_u32(frame + kHeaderSize + i * kEntrySize);
}
ZIPNET_HD inline uint32_t entry_checksum(const uint8_t* frame, uint64_t i) {
  return load_u32(frame + kHeaderSize + i * kEntrySize + 4);
}
ZIPNET_HD inline void write_entry(uint8_t* frame, uint64_t i, uint32_t end, uint32_t checksum) {
  store_u32(frame + kHeaderSize + i * kEntrySize, end);
  store_u32(frame + kHeaderSize + i * kEntrySize + 4, checksum);
}

}  // namespace zipnet::codec::common
