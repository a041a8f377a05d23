#include "plugin/pipeline/adaptive.h"

#include <algorithm>

#include "plugin/log.h"

namespace zipnet::pipeline {

static Adaptive::Mode other(Adaptive::Mode m) { return m == Adaptive::kRaw ? Adaptive::kCompress : Adaptive::kRaw; }

Adaptive::Adaptive(bool enabled, std::string peer, Tuning tuning)
    : enabled_(enabled), peer_(std::move(peer)), t_(tuning) {
  probe_interval_ = std::max<uint32_t>(1, t_.probe_first);
  windows_to_probe_ = 1;  // probe compression right after the first raw window
}

int Adaptive::attach(QueuedBytes queued) {
  std::lock_guard<std::mutex> lk(mu_);
  ++attached_;
  if (started_ && !probing_) {
    // New connections mean new traffic (NCCL opens its p2p connections at the first all_to_all):
    // probe again after the next window instead of after up to probe_max windows.
    probe_interval_ = std::max(t_.probe_first, 1u);
    windows_to_probe_ = 1;
    last_probe_ns_ = 0;
  }
  warm_[kCompress] = false;  // a new connection's codec path starts cold: its first window is discarded
  const int handle = next_handle_++;
  if (queued) queues_.emplace(handle, std::move(queued));
  return handle;
}

void Adaptive::detach(uint64_t never_completed, int handle) {
  std::lock_guard<std::mutex> lk(mu_);
  if (attached_ > 0) --attached_;
  queues_.erase(handle);
  done_msgs_.fetch_add(never_completed, std::memory_order_release);
}

// Bytes the attached connections' transports still hold (written, not yet received).
uint64_t Adaptive::queued_bytes() {
  uint64_t wire = 0;
  for (auto& q : queues_) wire += q.second();
  return wire;
}

// Whether the transport's queue may be read now (a syscall per connection): at most every
// queue_check_ns while a window waits on it; always true without queues (nothing to read).
bool Adaptive::queue_check_due(uint64_t now_ns) {
  if (queues_.empty()) return true;
  if (now_ns < next_queue_check_ns_) return false;
  next_queue_check_ns_ = now_ns + t_.queue_check_ns;
  return true;
}

// Whether every byte the transport still holds was written since the last switch.
bool Adaptive::old_mode_drained() {
  if (queues_.empty()) return true;
  return queued_bytes() <= wire_written_.load(std::memory_order_relaxed) - switch_wire_;
}

void Adaptive::on_encoded(uint64_t orig, uint64_t frame) {
  enc_orig_.fetch_add(orig, std::memory_order_relaxed);
  enc_frame_.fetch_add(frame, std::memory_order_relaxed);
}

void Adaptive::on_received(uint64_t bytes, uint64_t now_ns) {
  if (bytes < t_.min_arrival_bytes) return;
  uint64_t prev = last_received_ns_.load(std::memory_order_relaxed);
  while (prev < now_ns && !last_received_ns_.compare_exchange_weak(prev, now_ns, std::memory_order_relaxed)) {
  }
}

void Adaptive::on_sent(uint64_t bytes, uint64_t now_ns) {
  done_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  last_done_ns_.store(now_ns, std::memory_order_relaxed);
  done_msgs_.fetch_add(1, std::memory_order_release);
}

// Busy time in (last post, now]. Something still outstanding now was outstanding throughout
// (nothing was posted in between). Otherwise a short gap counts whole (the pipeline's round
// trip), and so does a long one while the transport still holds bytes (queues only drain when
// nothing is written, so they were non-empty throughout); else it counts up to the last send
// completion or arrival from the peer host (a ring step waits for the peer's data, and our queue
// often drains just before that data lands: sampling the queue alone missed most of the busy
// time under NCCL).
uint64_t Adaptive::busy_since_last_post(uint64_t now_ns, uint64_t done_msgs, bool* stalled) {
  uint64_t interval = now_ns > last_post_ns_ ? now_ns - last_post_ns_ : 0;
  if (posted_msgs_ > done_msgs || interval <= t_.idle_gap_ns) return interval;
  ++gap_trace_.long_gaps;
  // Longer than stall_gap_ns and 8 times the usual long gap: the application stalled (see
  // post()). The usual gap is a running average in which a stall counts as twice the average at
  // most: rare stalls hardly move it, and where ring steps grow long (deep buffers on a slow
  // link) it follows them at 12% a gap.
  // The first 8 long gaps only teach the average (their mean, as they come).
  const bool stall = long_gaps_seen_ >= 8 && interval > std::max(t_.stall_gap_ns, 8 * typical_gap_ns_);
  if (long_gaps_seen_ < 8) {
    typical_gap_ns_ = (typical_gap_ns_ * long_gaps_seen_ + interval) / (long_gaps_seen_ + 1);
    ++long_gaps_seen_;
  } else {
    const uint64_t sample = std::min(interval, 2 * typical_gap_ns_);
    typical_gap_ns_ += (int64_t(sample) - int64_t(typical_gap_ns_)) / 8;
  }
  if (stall) {
    ++gap_trace_.stalls;
    gap_trace_.gap_lost_ns += interval;
    *stalled = true;
    return 0;
  }
  const uint64_t q = queues_.empty() ? 0 : queued_bytes();
  gap_trace_.q_max = std::max(gap_trace_.q_max, q);
  if (q > 0) {
    gap_trace_.gap_queued_ns += interval;
    return interval;
  }
  const uint64_t last_done = std::max(last_done_ns_.load(std::memory_order_relaxed),
                                      last_received_ns_.load(std::memory_order_relaxed));
  const uint64_t counted = last_done > last_post_ns_ ? std::min(last_done - last_post_ns_, interval) : 0;
  gap_trace_.gap_arrival_ns += counted;
  gap_trace_.gap_lost_ns += interval - counted;
  return counted;
}

// Original bytes the open window delivered, counted on the wire: the bytes written since it
// opened, plus what the transport held then, minus what it holds now; converted at the ratio of
// the bytes written meanwhile (one mode's: a settle window has drained the old mode's).
uint64_t Adaptive::delivered_bytes() {
  const uint64_t wire = wire_written_.load(std::memory_order_acquire) - w_wire0_;
  const uint64_t orig = orig_written_.load(std::memory_order_relaxed) - w_orig0_;
  const int64_t d = int64_t(wire) + int64_t(w_queued0_) - int64_t(queued_bytes());
  if (d <= 0 || wire == 0) return 1;
  return std::max<uint64_t>(1, uint64_t(double(d) * double(orig) / double(wire)));
}

bool Adaptive::post(uint64_t now_ns, bool eligible) {
  if (!enabled_) return eligible;
  std::lock_guard<std::mutex> lk(mu_);
  if (started_) {
    uint64_t done = done_msgs_.load(std::memory_order_acquire);
    bool stalled = false;
    uint64_t busy = busy_since_last_post(now_ns, done, &stalled);
    busy_since_probe_ns_ += busy;
    if (done >= settle_msgs_) {  // every message of the previous mode is out
      // A window spanning a stall measures neither mode: the queue drained during it, so counted
      // busy it reads low and counted idle it reads high (0.7 and 2.4 GB/s on a 1.25 GB/s link,
      // H200 2026-11-29; the stalls fell between collectives, where new connections bring probes
      // forward). Start the window again; a probe that keeps meeting stalls is dropped.
      if (window_open_ && stalled && !settling_ && warm_[mode_]) {  // (settle and warm-up windows are discarded anyway)
        window_open_ = false;
        if (probing_ && ++probe_stalls_ >= kMaxProbeStalls) drop_probe();
      }
      if (!window_open_) {
        window_open_ = true;
        w_done_bytes0_ = done_bytes_.load(std::memory_order_relaxed);
        w_done_msgs0_ = done;
        w_busy_ns_ = 0;
        gap_trace_ = GapTrace{};  // per window
        enc_orig_.store(0, std::memory_order_relaxed);
        enc_frame_.store(0, std::memory_order_relaxed);
        w_queued0_ = settling_ || queues_.empty() ? 0 : queued_bytes();  // a settle window is discarded
        w_wire0_ = wire_written_.load(std::memory_order_acquire);
        w_orig0_ = orig_written_.load(std::memory_order_relaxed);
      } else {
        w_busy_ns_ += busy;
        uint64_t bytes = done_bytes_.load(std::memory_order_relaxed) - w_done_bytes0_;
        const uint64_t conns = std::max<uint64_t>(attached_, 1);
        // A settle window (discarded) only has to flush the old mode: half a window.
        const uint64_t part = settling_ ? 2 : 1;
        bool full = bytes * part >= t_.window_bytes * conns && w_busy_ns_ * part >= t_.window_min_ns &&
                    (done - w_done_msgs0_) * part >= t_.window_msgs * conns;
        if (full && settling_) full = queue_check_due(now_ns) && old_mode_drained();  // the next window measures one mode
        // A probe already at less than half the preferred mode's rate has answered: stop paying.
        // Only after half a window of completions: with several connections posting at once, the
        // first few completions come late (all their messages were in progress together), and a
        // rate taken from them reads far too low (zipperf --conns 8 read 0.07 for ~1 GB/s).
        const uint64_t half_window = std::max<uint64_t>(2, t_.window_msgs * conns / 2);
        // A window is full once the link has delivered it, not just taken it into the socket
        // buffers (which can hold more than a window). The queue is read (a syscall per
        // connection) only when completions say the window may be done, and at most every
        // queue_check_ns. A settle window's queue holds the old mode's bytes: completions decide.
        bool losing = false;
        uint64_t delivered = bytes;
        const bool maybe_losing = probing_ && w_busy_ns_ >= t_.window_min_ns && done - w_done_msgs0_ >= half_window;
        if (full || maybe_losing) {
          const bool by_queue = !settling_ && !queues_.empty();
          if (by_queue && !queue_check_due(now_ns)) {
            full = false;  // answered at a later post
          } else {
            if (by_queue) {
              delivered = delivered_bytes();
              full = full && delivered >= t_.window_bytes * conns;
            }
            losing = maybe_losing && double(delivered) * 1e9 < 0.5 * rate_[pref_] * double(w_busy_ns_);
          }
        }
        if (full || losing) close_window(std::max<uint64_t>(delivered, 1), w_busy_ns_, losing);
      }
    }
  }
  started_ = true;
  ++posted_msgs_;
  last_post_ns_ = now_ns;
  return eligible && mode_ == kCompress;
}

void Adaptive::close_window(uint64_t bytes, uint64_t busy_ns, bool losing) {
  window_open_ = false;  // the next post opens the next window
  // Discarded: the first window of each mode past its settle window (slow start, a cold codec
  // path: see warm_), and the first window after every switch (the buffers still drain the old
  // mode's bytes, and the codec path may be cold: under NCCL such windows read compression 30-40%
  // low and kept a 1.5x link raw) unless it is already losing by 2x (a probe of a much slower mode
  // need not run any longer).
  const bool discard = !warm_[mode_] || (settling_ && !losing);
  if (!settling_) warm_[mode_] = true;
  settling_ = false;
  double window_ratio = 0;  // this window's encodes: frame bytes / original bytes
  if (mode_ == kCompress) {
    const uint64_t eo = enc_orig_.exchange(0, std::memory_order_relaxed);
    const uint64_t ef = enc_frame_.exchange(0, std::memory_order_relaxed);
    if (eo > 0) window_ratio = double(ef) / double(eo);
  }
  // Whether the data shrinks does not depend on timing: a discarded window still answers it
  // (random bytes on loopback lost 25-50% of a short run to the warm-up windows otherwise).
  if (discard && !(window_ratio > t_.max_ratio)) return;
  if (window_ratio > 0) ratio_ = window_ratio;
  double r = double(bytes) * 1e9 / double(busy_ns);
  if (!discard) {
    // Smoothing keeps one odd window from flipping the mode; the first window after entering a
    // mode replaces its rate, which may be stale by then.
    rate_[mode_] = fresh_ ? r : 0.5 * rate_[mode_] + 0.5 * r;
    fresh_ = false;
  }
  // NCCL_DEBUG=TRACE: every window, for tuning the policy on a real link.
  ZN_TRACE(NCCL_NET, "link %s: %s window%s: %llu bytes in %.3f ms busy = %.3f GB/s (rates: compressed %.3f, raw %.3f; ratio %.3f; %llu conns)",
           peer_.c_str(), mode_ == kCompress ? "compressed" : "raw", probing_ ? " (probe)" : "",
           (unsigned long long)bytes, double(busy_ns) / 1e6, r / 1e9, rate_[kCompress] / 1e9, rate_[kRaw] / 1e9,
           ratio_, (unsigned long long)attached_);
  ZN_TRACE(NCCL_NET, "link %s: window gaps: %llu long, %llu stalls (%.3f ms busy by queue, %.3f ms up to a completion or arrival, %.3f ms idle); queued at open %llu, max %llu",
           peer_.c_str(), (unsigned long long)gap_trace_.long_gaps, (unsigned long long)gap_trace_.stalls, gap_trace_.gap_queued_ns / 1e6, gap_trace_.gap_arrival_ns / 1e6,
           gap_trace_.gap_lost_ns / 1e6, (unsigned long long)w_queued0_, (unsigned long long)gap_trace_.q_max);
  const Mode before = pref_;
  decide_preference(/*compare_rates=*/probing_);
  if (probing_) {
    probing_ = false;
    last_probe_ns_ = busy_ns;
    busy_since_probe_ns_ = 0;
    probe_interval_ = pref_ == before ? std::min(probe_interval_ * 2, std::max(t_.probe_max, 1u))
                                      : std::max(t_.probe_first, 1u);
    windows_to_probe_ = probe_interval_;
  } else if (pref_ != before) {
    probe_interval_ = windows_to_probe_ = std::max(t_.probe_first, 1u);
  } else if ((windows_to_probe_ == 0 || --windows_to_probe_ == 0) &&
             busy_since_probe_ns_ >= t_.probe_cost_factor * last_probe_ns_) {
    probing_ = true;
    probe_stalls_ = 0;
    enter(other(pref_));
    return;
  }
  if (mode_ != pref_) enter(pref_);
}

// Only a probe's window compares the two rates (both are recent then); any compressed window can
// find that the data does not shrink.
void Adaptive::decide_preference(bool compare_rates) {
  const double c = rate_[kCompress], r = rate_[kRaw];
  Mode want = pref_;
  const char* why = nullptr;
  if (mode_ == kCompress && ratio_ > t_.max_ratio) {
    want = kRaw;
    why = "data does not shrink";
  } else if (compare_rates && c > 0 && r > 0) {
    if (pref_ == kRaw && c > r * (1 + t_.margin)) { want = kCompress; why = "compressed sends deliver more"; }
    else if (pref_ == kCompress && c < r) { want = kRaw; why = "raw sends deliver more"; }
    else if (decisions_ == 0) why = pref_ == kCompress ? "compressed sends deliver at least as much" : "raw sends deliver more";
  }
  if (!why) return;
  if (want != pref_ || decisions_ == 0)
    ZN_INFO(NCCL_NET, "connection to %s: %s (%s: compressed %.3f GB/s, raw %.3f GB/s, ratio %.3f)",
            peer_.c_str(), want == kCompress ? "compressing" : "sending raw", why, c / 1e9, r / 1e9, ratio_);
  if (want != pref_ || decisions_ == 0) ++decisions_;
  pref_ = want;
}

// Ends a probe without a verdict: back to the preferred mode; the next probe comes as scheduled.
void Adaptive::drop_probe() {
  ZN_TRACE(NCCL_NET, "link %s: probe dropped after %u stalls", peer_.c_str(), probe_stalls_);
  probing_ = false;
  probe_stalls_ = 0;
  busy_since_probe_ns_ = 0;
  windows_to_probe_ = probe_interval_;
  enter(pref_);
}

void Adaptive::enter(Mode m) {
  mode_ = m;
  switch_wire_ = wire_written_.load(std::memory_order_relaxed);
  fresh_ = true;
  settling_ = true;
  window_open_ = false;
  settle_msgs_ = posted_msgs_;
}

}  // namespace zipnet::pipeline
