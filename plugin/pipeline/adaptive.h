// Per-connection choice between compressing and sending raw. Compression pays only while the link
// is slower than the codec: with link rate L and codec rate C (all workers), compressed sends move
// min(C, L/ratio) original bytes per second against L raw, so compress iff C > L and ratio < 0.97.
// C comes from encode timings. L is sampled only from writes that had to wait for socket space
// (the link was the bottleneck then); an app-limited link gives no sample and keeps the last mode.
// While raw, a short probe re-measures C and the ratio every kProbeEvery bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace zipnet::pipeline {

class Adaptive {
 public:
  Adaptive(bool enabled, int parallel, std::string peer);
  // Worker threads: one encoded sub-chunk.
  void on_encoded(uint64_t orig, uint64_t frame, uint64_t ns);
  // Stream threads: one written sub-chunk; blocked = the write waited for socket space.
  void on_written(uint64_t wire, uint64_t ns, bool blocked);
  // Progress thread, once per eligible message: compress it?
  bool compress_next(uint64_t msg_bytes);
  bool compressing() const { return compressing_; }

  static constexpr uint64_t kWindow = 8ull << 20;     // re-decide after this many message bytes
  static constexpr uint64_t kProbeEvery = 128ull << 20;
  static constexpr uint64_t kProbeLength = 4ull << 20;

 private:
  void decide();
  bool enabled_;
  int parallel_;
  std::string peer_;
  // Samples since the last decision (written by other threads).
  std::atomic<uint64_t> enc_orig_{0}, enc_frame_{0}, enc_ns_{0};
  std::atomic<uint64_t> link_bytes_{0}, link_ns_{0};
  // Decision state (progress thread only).
  bool compressing_ = true;
  uint64_t since_decision_ = 0, raw_bytes_ = 0, probe_left_ = 0;
  double codec_Bps_ = 0, link_Bps_ = 0, ratio_ = 1;
};

}  // namespace zipnet::pipeline
