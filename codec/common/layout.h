// Format §3 and §6 (layout rule): NCCL LL / LL128 lines. Detects whether a whole message is made of
// such lines with one non-zero flag, and gathers / scatters the data bytes of a line. Shared by the
// CPU and CUDA codecs so both pick the same layout.
#pragma once

#include "frame.h"
#include "hd.h"

namespace zipnet::codec::common {

constexpr uint32_t kLLLine = 16, kLLData = 8;         // {d1:u32, f1:u32, d2:u32, f2:u32}
constexpr uint32_t kLLFlag1 = 4, kLLFlag2 = 12;         // where f1 and f2 sit in an LL line
constexpr uint32_t kLL128Line = 128, kLL128Data = 120;  // 120 data bytes then a u64 flag (at kLL128Data)

ZIPNET_HD inline uint32_t line_bytes(unsigned layout) {
  return layout == kLayoutLL ? kLLLine : layout == kLayoutLL128 ? kLL128Line : 1;
}
ZIPNET_HD inline uint32_t line_data_bytes(unsigned layout) {
  return layout == kLayoutLL ? kLLData : layout == kLayoutLL128 ? kLL128Data : 1;
}
// Data bytes a block of `bytes` original bytes codes (bytes is a whole number of lines).
ZIPNET_HD inline uint64_t gathered_size(unsigned layout, uint64_t bytes) {
  return bytes / line_bytes(layout) * line_data_bytes(layout);
}

ZIPNET_HD inline bool ll_line_matches(const uint8_t* line, uint32_t flag) {
  return load_u32(line + kLLFlag1) == flag && load_u32(line + kLLFlag2) == flag;
}
ZIPNET_HD inline bool ll128_line_matches(const uint8_t* line, uint64_t flag) {
  return load_u64(line + kLL128Data) == flag;
}

// §6: LL128 if the whole message is LL128 lines with one non-zero flag and at least 2 lines; else
// LL likewise; else flat. Cheap on ordinary data: the first line usually rules a layout out.
ZIPNET_HD inline unsigned detect_layout(const uint8_t* src, uint64_t n, uint64_t* flag_out) {
  *flag_out = 0;
  if (n % kLL128Line == 0 && n >= 2 * kLL128Line) {
    uint64_t flag = load_u64(src + kLL128Data);
    bool ok = flag != 0;
    for (uint64_t off = 0; ok && off < n; off += kLL128Line) ok = ll128_line_matches(src + off, flag);
    if (ok) {
      *flag_out = flag;
      return kLayoutLL128;
    }
  }
  if (n % kLLLine == 0 && n >= 2 * kLLLine) {
    uint32_t flag = load_u32(src + kLLFlag1);
    bool ok = flag != 0;
    for (uint64_t off = 0; ok && off < n; off += kLLLine) ok = ll_line_matches(src + off, flag);
    if (ok) {
      *flag_out = flag;
      return kLayoutLL;
    }
  }
  return kLayoutFlat;
}

// Gathers the data of `lines` whole lines at src into out (portable reference; codecs may use
// wider copies that do the same).
ZIPNET_HD inline void gather_lines(unsigned layout, const uint8_t* src, uint64_t lines, uint8_t* out) {
  if (layout == kLayoutLL) {
    for (uint64_t i = 0; i < lines; ++i) {
      for (int b = 0; b < 4; ++b) out[i * 8 + b] = src[i * 16 + b];
      for (int b = 0; b < 4; ++b) out[i * 8 + 4 + b] = src[i * 16 + 8 + b];
    }
  } else {
    for (uint64_t i = 0; i < lines; ++i)
      for (uint32_t b = 0; b < kLL128Data; ++b) out[i * kLL128Data + b] = src[i * kLL128Line + b];
  }
}

}  // namespace zipnet::codec::common
