// Per-comm counters, updated from stream and worker threads, reported when the comm closes:
// an INFO line (NCCL_DEBUG=INFO) and, with ZIPNET_STATS_FILE, one appended JSON line.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace zipnet::pipeline {

struct CommStats {
  std::atomic<uint64_t> messages{0};
  std::atomic<uint64_t> bytes_in{0};           // original (uncompressed) message bytes
  std::atomic<uint64_t> bytes_out{0};          // bytes on the wire: chunk headers + payloads
  std::atomic<uint64_t> codec_ns{0};           // time spent encoding (send) or decoding (recv)
  std::atomic<uint64_t> chunks_compressed{0};  // sub-chunks sent/received as codec frames
  std::atomic<uint64_t> chunks_raw{0};         // sub-chunks sent/received raw, for any reason
  std::atomic<uint64_t> raw_fallbacks{0};      // compressed, did not shrink, sent raw instead

  // Logs the INFO line and appends the JSON line. kind: "send" or "recv".
  void report(const char* kind, const std::string& peer, const std::string& stats_file) const;
  std::string json(const char* kind, const std::string& peer) const;
};

}  // namespace zipnet::pipeline
