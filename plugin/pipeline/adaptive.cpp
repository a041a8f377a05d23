#include "plugin/pipeline/adaptive.h"

#include "plugin/log.h"

namespace zipnet::pipeline {

Adaptive::Adaptive(bool enabled, int parallel, std::string peer)
    : enabled_(enabled), parallel_(parallel < 1 ? 1 : parallel), peer_(std::move(peer)) {}

void Adaptive::on_encoded(uint64_t orig, uint64_t frame, uint64_t ns) {
  enc_orig_.fetch_add(orig, std::memory_order_relaxed);
  enc_frame_.fetch_add(frame, std::memory_order_relaxed);
  enc_ns_.fetch_add(ns, std::memory_order_relaxed);
}

void Adaptive::on_written(uint64_t wire, uint64_t ns, bool blocked) {
  if (!blocked) return;
  link_bytes_.fetch_add(wire, std::memory_order_relaxed);
  link_ns_.fetch_add(ns, std::memory_order_relaxed);
}

bool Adaptive::compress_next(uint64_t msg_bytes) {
  if (!enabled_) return true;
  since_decision_ += msg_bytes;
  if (probe_left_ > 0) {  // probing while raw: compress to re-measure the codec
    probe_left_ = probe_left_ > msg_bytes ? probe_left_ - msg_bytes : 0;
    if (probe_left_ == 0) decide();
    return true;
  }
  if (!compressing_) {
    raw_bytes_ += msg_bytes;
    if (raw_bytes_ >= kProbeEvery) {
      raw_bytes_ = 0;
      probe_left_ = kProbeLength;
      enc_orig_ = enc_frame_ = enc_ns_ = 0;
      return true;
    }
  }
  if (since_decision_ >= kWindow) decide();
  return compressing_;
}

void Adaptive::decide() {
  since_decision_ = 0;
  uint64_t eo = enc_orig_.exchange(0), ef = enc_frame_.exchange(0), en = enc_ns_.exchange(0);
  uint64_t lb = link_bytes_.exchange(0), ln = link_ns_.exchange(0);
  // Exponential smoothing keeps one odd window from flipping the mode.
  auto blend = [](double old, double now) { return old == 0 ? now : 0.5 * old + 0.5 * now; };
  if (eo > 0 && en > 0) {
    codec_Bps_ = blend(codec_Bps_, double(eo) / double(en) * 1e9 * parallel_);
    ratio_ = blend(ratio_ == 1 ? 0 : ratio_, double(ef) / double(eo));
  }
  if (lb >= (1u << 20) && ln > 0) link_Bps_ = blend(link_Bps_, double(lb) / double(ln) * 1e9);
  bool want = compressing_;
  const char* why = "";
  if (codec_Bps_ > 0 && ratio_ > 0.97) { want = false; why = "data does not shrink"; }
  else if (link_Bps_ > 0 && codec_Bps_ > 0 && link_Bps_ > codec_Bps_) { want = false; why = "link faster than codec"; }
  else if (link_Bps_ > 0 && codec_Bps_ > 0) { want = true; why = "codec faster than link"; }
  if (want != compressing_) {
    ZN_INFO(NCCL_NET, "connection to %s: %s (%s: codec %.2f GB/s, link %.2f GB/s, ratio %.3f)",
            peer_.c_str(), want ? "compressing" : "sending raw", why, codec_Bps_ / 1e9,
            link_Bps_ / 1e9, ratio_);
    compressing_ = want;
  }
}

}  // namespace zipnet::pipeline
