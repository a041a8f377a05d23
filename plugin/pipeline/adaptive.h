// Per-link choice between compressing and sending raw, by measurement, not by model.
//
// Whether compression pays depends on more than codec rate vs link rate: NCCL keeps only a few
// messages in flight, so the codec's added latency per message can halve throughput even when
// the codec is faster than the link. So each send comm measures what each mode actually
// delivers: the service rate = original bytes completed / busy time, where busy time is time
// with a send outstanding plus short gaps between one completion and the next post (those gaps
// are the pipeline's own round trip, e.g. the peer decoding before it frees a slot; long gaps are
// the application being idle and are left out). Rates are taken over windows (>= window_bytes,
// window_msgs and window_min_ns busy; the first is discarded) and kept per mode.
//
// Explore/exploit: it starts raw, probes compression right away, then runs the preferred mode and, every probe_interval windows, runs the other
// mode for one window (short: a window is little more than one turn of NCCL's slots, so a
// probe of the slower mode costs little), after a discarded half window that flushes the old
// mode out of the buffers. Compression becomes preferred only when it beats raw by `margin`; it stays
// preferred while it is not slower than raw (hysteresis). A probe that confirms the preference
// doubles the interval (up to probe_max); a switch resets it. Probes are also spaced by busy
// time (probe_cost_factor x the last probe), and a probe running at under half the preferred
// mode's rate stops early, so probing a much slower mode costs a few percent at most. Data that does not shrink
// (ratio > 0.97 over a compressed window) goes raw at once.
//
// One policy per link, not per connection (link_policy.h): NCCL opens a connection per channel,
// and its channels share the NIC and the path to the peer. On a shared bottleneck one connection
// that compresses alone frees link time mostly for the others (they take turns), so its own rate
// hardly moves and a per-connection policy stays raw where compressing every channel is 1.5x
// faster (measured under NCCL on a 10gbit link). So the connections to one peer attach to one
// policy, which measures their aggregate and switches them together; windows scale with the
// number attached (a window still spans a turn of every connection's slots).
//
// Socket buffers: a send completes once it is in the socket, and under NCCL the next send often
// waits for the peer (a ring step), so with deep buffers every send completes at once and the
// link drains them while nothing is outstanding. Measured by completions alone, raw then reads
// 5-13 GB/s on a 10 Gbit/s link (H200, NCCL all_gather, 2026-11-29) and compression never wins.
// So a long gap counts as busy while the transport still holds our bytes, or up to the last
// arrival of a ring step's data from the peer (a ring step ends when it lands). A window's bytes
// are what the link delivered: bytes written since it opened plus the queue then minus the queue
// now, converted at the ratio of the bytes written. That needs the queue to hold one mode's
// bytes, so the settle window after a switch lasts until the old mode's bytes have left it.
// Gaps far longer than usual (stalls of the application) restart the window; the first window of
// each mode (and the first compressed one after a connection attaches) is a discarded warm-up.
// docs/design.md section 6 has the measurements behind each rule.
//
// Threads: post() runs on the progress thread(s) and makes every decision (a mutex: several
// proxy threads may share a link); on_sent() (stream threads) and on_encoded() (workers) only
// add to atomics. No allocation per message. The clock is passed in (tests drive a fake one).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace zipnet::pipeline {

struct AdaptiveTuning {
  uint64_t window_bytes = 1ull << 20;   // original bytes completed per measurement window
  uint64_t window_min_ns = 10'000'000;  // and at least this much busy time: a shaped link's burst
                                        // allowance (tc tbf: 2 MB) or a switch's buffer must be a
                                        // small part of a window (4 MB in 3.6 ms read raw 1.66
                                        // GB/s on a 1.25 GB/s link under NCCL)
  uint64_t window_msgs = 8;             // and messages: a full turn of NCCL's slots, so socket
                                        // buffering is a small part of a window
  uint64_t idle_gap_ns = 1'000'000;     // a longer gap with nothing outstanding = app idle
  uint64_t queue_check_ns = 250'000;    // read the transport's queue at most this often per window
  uint64_t min_arrival_bytes = 64 << 10;  // smaller arrivals do not make a gap busy
  uint64_t stall_gap_ns = 50'000'000;   // a gap with nothing outstanding longer than this and 8
                                        // usual long gaps is a stall of the application: the window
                                        // spanning it starts again (90-370 ms gaps inside compressed
                                        // probes read them at 0.06 GB/s on a 1.25 GB/s link, H200)
  uint32_t probe_first = 16;            // windows of the preferred mode before a probe
  uint32_t probe_max = 128;
  uint32_t probe_cost_factor = 32;      // and at least this many times the last probe's busy time
  double margin = 0.05;                 // compression must win by this much to be chosen
  double max_ratio = 0.97;              // frames above this fraction of the input: raw
};

class Adaptive {
 public:
  using Tuning = AdaptiveTuning;
  enum Mode : int { kRaw = 0, kCompress = 1 };

  Adaptive(bool enabled, std::string peer, Tuning tuning = Tuning{});
  // The clock the comms pass to post(), on_sent() and on_received() (tests pass a fake one).
  static uint64_t clock_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch()).count());
  }
  // Bytes a connection has handed to its transport that the peer has not received yet (TCP:
  // the sockets' unacknowledged bytes, SIOCOUTQ). A send completes once it is in the socket, so
  // without this a link still draining deep socket buffers looks idle (see busy_since_last_post()).
  using QueuedBytes = std::function<uint64_t()>;
  // A connection starts / stops using this policy; attach() returns the handle for detach().
  // detach() counts the connection's messages that never completed (a failed comm) as done, so
  // that they cannot hold the next window shut. `queued` is called under the policy's lock.
  int attach(QueuedBytes queued = {});
  void detach(uint64_t never_completed, int handle = -1);
  // Progress thread, once per message as it is posted (eligible = big enough to compress):
  // compress it?
  bool post(uint64_t now_ns, bool eligible);
  // Stream threads: a message of `bytes` original bytes is completely in the socket.
  void on_sent(uint64_t bytes, uint64_t now_ns);
  // Receiving side (stream threads): a message of `bytes` from this peer host has arrived. A gap
  // in our sends that ends in a receive is the ring waiting for the peer's data, not the
  // application idling, so it counts as busy up to the last arrival of a ring step's data (at
  // least min_arrival_bytes: barriers and other small messages between the application's phases
  // made 270 ms stalls count as busy and a compressed probe read 0.09 GB/s, H200 2026-11-29).
  void on_received(uint64_t bytes, uint64_t now_ns);
  // Worker threads: one sub-chunk encoded (frame = bytes it takes on the wire).
  void on_encoded(uint64_t orig, uint64_t frame);
  // Stream threads: a sub-chunk of `orig` original bytes went to the transport as `wire` bytes
  // (header included).
  void on_written(uint64_t wire, uint64_t orig) {
    orig_written_.fetch_add(orig, std::memory_order_relaxed);
    wire_written_.fetch_add(wire, std::memory_order_release);
  }

  bool compressing() const { return mode_ == kCompress; }
  bool prefers_compress() const { return pref_ == kCompress; }
  bool probing() const { return probing_; }
  double rate(Mode m) const { return rate_[m]; }  // bytes/s, 0 = not measured yet
  double ratio() const { return ratio_; }
  uint32_t decisions() const { return decisions_; }  // logged: the first choice, then each change

 private:
  uint64_t busy_since_last_post(uint64_t now_ns, uint64_t done_msgs, bool* stalled);
  uint64_t queued_bytes();
  uint64_t delivered_bytes();
  bool old_mode_drained();
  bool queue_check_due(uint64_t now_ns);
  void close_window(uint64_t bytes, uint64_t busy_ns, bool losing);
  void decide_preference(bool compare_rates);
  void enter(Mode m);
  void drop_probe();
  static constexpr uint32_t kMaxProbeStalls = 3;

  const bool enabled_;
  const std::string peer_;
  const Tuning t_;
  std::mutex mu_;  // post(), attach(), detach(): the progress-thread state below
  uint64_t attached_ = 0;
  int next_handle_ = 0;
  std::map<int, QueuedBytes> queues_;  // the attached connections that can report their queue
  // Added to by other threads.
  std::atomic<uint64_t> done_msgs_{0}, done_bytes_{0}, last_done_ns_{0}, last_received_ns_{0};
  std::atomic<uint64_t> enc_orig_{0}, enc_frame_{0}, wire_written_{0}, orig_written_{0};
  // Progress thread only.
  bool started_ = false;
  uint64_t posted_msgs_ = 0, last_post_ns_ = 0, w_done_msgs0_ = 0;
  uint64_t settle_msgs_ = 0;  // the window opens once every message of the old mode is done
  bool window_open_ = false;
  // The first window of each mode is discarded (and the first compressed one after a connection
  // attaches): slow start, and a cold codec path. Under NCCL the first compressed window of a
  // process stalled 300-350 ms and read 0.07 GB/s on a 1.25 GB/s link (H200, 2026-11-29).
  bool warm_[2] = {false, false};
  uint64_t w_done_bytes0_ = 0, w_busy_ns_ = 0;
  uint64_t w_queued0_ = 0;      // wire bytes the transport held when the window opened
  uint64_t w_wire0_ = 0, w_orig0_ = 0;  // wire_written_, orig_written_ then
  uint64_t switch_wire_ = 0;    // wire_written_ at the last switch
  uint64_t next_queue_check_ns_ = 0;  // queue_check_due()
  struct GapTrace { uint64_t long_gaps = 0, stalls = 0, gap_queued_ns = 0, gap_arrival_ns = 0, gap_lost_ns = 0, q_max = 0; };
  GapTrace gap_trace_;  // how the open window's long gaps were counted (NCCL_DEBUG=TRACE)
  Mode mode_ = kRaw, pref_ = kRaw;  // start safe: raw is never slower than raw
  bool probing_ = false;
  uint32_t probe_stalls_ = 0;   // windows of the current probe restarted by stalls
  uint64_t typical_gap_ns_ = 0; // running average of the long gaps
  uint32_t long_gaps_seen_ = 0;
  bool fresh_ = true;  // the next window is the first since entering mode_: replaces its old rate
  bool settling_ = false;  // the window after a switch: discarded
  uint32_t probe_interval_ = 0, windows_to_probe_ = 0;
  uint64_t busy_since_probe_ns_ = 0, last_probe_ns_ = 0;
  double rate_[2] = {0, 0};
  double ratio_ = 0;
  uint32_t decisions_ = 0;
};

}  // namespace zipnet::pipeline
