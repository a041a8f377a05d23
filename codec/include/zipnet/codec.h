// Public API of the zipnet exponent codec (CPU). The wire format is docs/format.md.
// The plugin, the tools and the tests use only this header; codec internals stay in codec/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace zipnet::codec {

inline constexpr uint32_t kFrameMagic = 0x544E505A;  // "ZPNT"
inline constexpr uint8_t kFormatVersion = 3;
inline constexpr size_t kFrameHeaderSize = 40;
inline constexpr size_t kBlockEntrySize = 8;
inline constexpr unsigned kDefaultBlockLog2 = 15;  // 32 KiB blocks

enum class Dtype : uint8_t { opaque = 0, bf16 = 1, fp16 = 2, fp32 = 3 };
enum class Layout : uint8_t { flat = 0, ll = 1, ll128 = 2 };
enum class Mode : uint8_t { raw = 0, planes = 1, window = 2, rans = 3 };

// Bit i allows Mode(i). RAW is always allowed: it is the fallback that never fails.
using ModeMask = uint8_t;
inline constexpr ModeMask kAllModes = 0xF;
constexpr ModeMask mode_bit(Mode m) { return ModeMask(1u << unsigned(m)); }

enum class Status : uint8_t {
  ok = 0,
  dst_too_small,     // output capacity below max_frame_size()/original_size
  truncated,         // fewer bytes than the header or table claims
  bad_magic,
  bad_version,       // frame from another format version
  bad_header,        // field out of range, or header checksum mismatch
  bad_table,         // table checksum mismatch or inconsistent offsets
  corrupt_block,     // a block payload does not decode to its size
  checksum_mismatch, // a block decoded but its XXH3 does not match
  too_large,         // encode: the message does not fit one frame (payload area >= 4 GiB); split it
  bad_options,       // encode: EncodeOptions out of range (block_log2 outside 12..20, dtype > fp32)
  device_error,      // GPU codec: a CUDA call failed (cuda::Codec::last_error() says which)
};
std::string_view to_string(Status s);

struct EncodeOptions {
  std::optional<Dtype> dtype;        // unset: detect from the data (docs/format.md §6)
  ModeMask modes = kAllModes;        // restrict modes, for tests and ZIPNET_CODEC_MODE
  bool detect_layout = true;         // look for NCCL LL/LL128 lines
  unsigned block_log2 = kDefaultBlockLog2;
};

struct FrameInfo {
  uint8_t version = 0;
  Dtype dtype = Dtype::opaque;
  Layout layout = Layout::flat;
  unsigned block_log2 = 0;
  uint64_t original_size = 0;
  uint64_t frame_size = 0;
  uint32_t nblocks = 0;
};

// Per-frame counts, filled when asked for (benchmarks, stats).
struct EncodeStats {
  uint32_t blocks_by_mode[4] = {0, 0, 0, 0};
  // Bytes spent on coded symbols (for the entropy comparison): RANS sections net of the residual
  // bytes their lane seeds carry.
  uint64_t symbol_section_bytes = 0;
};

// Worst-case frame size for n input bytes: header + table + every block RAW.
size_t max_frame_size(size_t n, unsigned block_log2 = kDefaultBlockLog2);

// Encodes src[0..n) into dst. dst_cap must be >= max_frame_size(n, opts.block_log2). Fails only
// on that (dst_too_small), bad options (bad_options) or a message of 4 GiB or more (too_large).
Status encode(const void* src, size_t n, void* dst, size_t dst_cap, size_t* frame_size,
              const EncodeOptions& opts = {}, EncodeStats* stats = nullptr);

// Validates and decodes a whole frame of exactly frame_size bytes into dst (capacity dst_cap).
// Never writes outside dst[0..original_size). Output is written in ascending address order with
// ordinary stores, each LL/LL128 line whole (NCCL polls flags while we write).
Status decode(const void* frame, size_t frame_size, void* dst, size_t dst_cap,
              size_t* original_size);

// Parses and checks the header only (not the table or blocks).
Status read_header(const void* frame, size_t avail, FrameInfo* info);

// Which SIMD path the CPU codec picked at run time: "avx512", "avx2" or "portable".
std::string_view cpu_path();

// XXH3-64 (seed 0) of n bytes on that SIMD path: the checksum of the frame's blocks, for callers
// that check other bytes the same way (the plugin's raw sub-chunks). The same value on every path;
// AVX2 and AVX-512 run it 3-4x faster than the baseline build.
uint64_t checksum64(const void* p, size_t n);

// Forces a SIMD path ("avx512", "avx2", "portable", or "auto" for the best this CPU has), for tests
// and benchmarks; every path produces the same bytes. Returns false (and changes nothing) when this
// CPU or build lacks it. Process-wide; do not call while other threads encode or decode.
bool set_cpu_path(std::string_view name);

}  // namespace zipnet::codec
