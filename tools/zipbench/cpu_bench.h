// zipbench's CPU measurement: cut the input into messages of `chunk` bytes, encode each into its
// own frame and decode it back on this thread, check every byte, and time both directions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "zipnet/codec.h"

namespace zipbench {

struct CpuResult {
  bool roundtrip_ok = false;
  std::string error;
  uint64_t bytes = 0;
  uint64_t compressed_bytes = 0;
  double compress_gbps = 0;    // median over iterations of uncompressed bytes / thread CPU second / 1e9
  double decompress_gbps = 0;
  zipnet::codec::Dtype detected = zipnet::codec::Dtype::opaque;  // dtype of the first frame
  zipnet::codec::EncodeStats stats;  // of one encode pass over all messages
  uint64_t rans_only_symbol_bytes = 0;  // symbol sections with modes {raw, rans} only
  uint32_t rans_only_blocks = 0;        // blocks that took rANS in that pass
  uint32_t total_blocks = 0;
};

// progress(done, total) is called after each iteration (for long runs).
CpuResult cpu_bench(const uint8_t* data, size_t size, size_t chunk, int iterations,
                    const zipnet::codec::EncodeOptions& opts,
                    const std::function<void(int, int)>& progress);

}  // namespace zipbench
