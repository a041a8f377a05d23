#include "plugin/pipeline/send_comm.h"

#include <chrono>
#include <new>

#include "plugin/log.h"
#include "plugin/pipeline/codec_seam.h"
#include "plugin/pipeline/link_policy.h"
#include "transport/tcp/handshake.h"

namespace zipnet::pipeline {

using Clock = std::chrono::steady_clock;
static uint64_t ns_since(Clock::time_point t) {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

SendComm::SendComm(std::unique_ptr<transport::Link> link, Settings settings)
    : CommBase(kSendMagic, std::move(link), std::move(settings)),
      // Compression off: nothing to choose, so a disabled policy (no measuring, no lock).
      adaptive_(link_policy(peer_host(peer_),
                            settings_.adaptive && settings_.compress && codec_seam::available())) {
  policy_handle_ = adaptive_->attach([l = link_.get()] { return l->queued_bytes(); });
}

std::unique_ptr<SendComm> SendComm::create(std::unique_ptr<transport::Link> link, Settings settings,
                                           std::string* err) {
  std::unique_ptr<SendComm> c(new SendComm(std::move(link), std::move(settings)));
  c->slot_cap_ = codec_seam::max_frame_size(c->settings_.subchunk_bytes);
  try {
    if (c->settings_.faults & params::kFaultStagingExhausted) throw std::bad_alloc();
    for (int s = 0; s < c->link_->streams(); ++s) {
      auto st = std::make_unique<Stream>();
      st->index = s;
      for (Prep& p : st->prep) {
        p.comm = c.get();
        p.stream = st.get();
        p.run = &SendComm::encode_job;
        if (c->settings_.compress && codec_seam::available()) p.buf.reset(new uint8_t[c->slot_cap_]);
      }
      c->streams_.push_back(std::move(st));
    }
  } catch (const std::bad_alloc&) {
    *err = "staging memory exhausted: cannot allocate " +
           std::to_string(c->slot_cap_ * kLookahead * size_t(c->link_->streams())) +
           " bytes of send staging";
    return nullptr;
  }
  for (auto& st : c->streams_) {
    Stream* raw = st.get();
    SendComm* self = c.get();
    raw->thread = std::thread([self, raw] { self->stream_loop(*raw); });
  }
  return c;
}

SendComm::~SendComm() {
  stop_.store(true, std::memory_order_release);
  link_->shutdown();
  for (auto& st : streams_) {
    { std::lock_guard<std::mutex> lk(st->mu); }
    st->cv.notify_all();
  }
  for (auto& st : streams_)
    if (st->thread.joinable()) st->thread.join();
  adaptive_->detach(next_seq_ - completed_msgs_.load(), policy_handle_);
  stats_.report("send", peer_, settings_.stats_file);
}

ncclResult_t SendComm::isend(void* data, size_t size, void** request) {
  *request = nullptr;
  if (failed()) return report_failure();
  Request* r = alloc_request();
  if (!r) return ncclSuccess;  // back-pressure: NCCL calls again later
  const uint32_t sub = settings_.subchunk_bytes;
  const uint32_t S = uint32_t(streams_.size());
  r->data = static_cast<uint8_t*>(data);
  r->size = size;
  r->seq = next_seq_++;
  r->nchunks = size == 0 ? 1 : uint32_t((size + sub - 1) / sub);
  r->compress = adaptive_->post(Adaptive::clock_ns(), settings_.compress && codec_seam::available() &&
                                              size >= settings_.min_compress_bytes);
  stats_.messages.fetch_add(1, std::memory_order_relaxed);
  stats_.bytes_in.fetch_add(size, std::memory_order_relaxed);
  // Rotate the first stream so that one-chunk messages spread over all streams.
  uint32_t base = uint32_t(next_stream_ % S);
  next_stream_ += r->nchunks;
  for (uint32_t s = 0; s < S; ++s) {
    uint32_t first = (s + S - base) % S;
    if (first >= r->nchunks) continue;
    Stream& st = *streams_[s];
    {
      std::lock_guard<std::mutex> lk(st.mu);
      // Cannot overflow: at most kMaxRequests messages are queued per stream.
      st.queue[st.q_tail % kQueueCap] = MsgEntry{r, first};
      ++st.q_tail;
    }
    st.cv.notify_all();
  }
  *request = r;
  return ncclSuccess;
}

// Fills p with the stream's next sub-chunk, if any. Stream thread only.
bool SendComm::take_next_chunk(Stream& st, Prep& p) {
  std::lock_guard<std::mutex> lk(st.mu);
  if (st.q_head == st.q_tail) return false;
  MsgEntry& m = st.queue[st.q_head % kQueueCap];
  Request* r = m.req;
  // Claim the user buffer first, then look for a failure (both seq_cst, as on the receive side):
  // test() reports a failed send once no claim is left, and NCCL may free the buffer right then,
  // so another stream must not start a new sub-chunk of it after the comm has failed.
  r->inflight.fetch_add(1);  // released in write_chunk, or at stream exit if never written
  if (failed() || stop_.load()) {
    r->inflight.fetch_sub(1);
    return false;
  }
  const uint64_t sub = settings_.subchunk_bytes;
  p.req = r;
  p.index = m.next_chunk;
  p.offset = uint64_t(p.index) * sub;
  p.len = uint32_t(std::min<uint64_t>(sub, r->size - p.offset));
  p.src = r->data + p.offset;
  p.compress = r->compress && p.len > 0;
  p.use_frame = false;
  p.ready = !p.compress;
  m.next_chunk += uint32_t(streams_.size());
  if (m.next_chunk >= r->nchunks) ++st.q_head;
  return true;
}

void SendComm::encode_job(Job* job) {
  Prep& p = *static_cast<Prep*>(job);
  SendComm& c = *p.comm;
  auto t0 = Clock::now();
  codec_seam::EncodeConfig cfg{c.settings_.dtype, c.settings_.modes};
  size_t frame = 0;
  bool ok = codec_seam::encode(p.src, p.len, p.buf.get(), c.slot_cap_, &frame, cfg);
  uint64_t ns = ns_since(t0);
  c.stats_.codec_ns.fetch_add(ns, std::memory_order_relaxed);
  p.use_frame = ok && frame < p.len;
  p.frame_size = frame;
  if (ok) c.adaptive_->on_encoded(p.len, p.use_frame ? frame : p.len);
  if (p.use_frame && (c.settings_.faults & params::kFaultCorruptFrame))
    p.buf[frame - 1] ^= 0x5A;  // test only: the receiver's checksum must catch this
  // Notify under the lock: the stream (and the comm) may go away as soon as it sees ready.
  std::lock_guard<std::mutex> lk(p.stream->mu);
  p.ready = true;
  p.stream->cv.notify_all();
}

bool SendComm::write_chunk(Stream& st, Prep& p) {
  Request* r = p.req;
  tcp::ChunkHeader h;
  h.flags = p.use_frame ? tcp::kChunkFrame : 0;
  h.seq = r->seq;
  h.msg_size = r->size;
  h.offset = p.offset;
  h.orig_len = p.len;
  h.payload_len = uint32_t(p.use_frame ? p.frame_size : p.len);
  h.index = p.index;
  h.nchunks = r->nchunks;
  if (!p.use_frame) h.payload_check = codec_seam::raw_payload_check(p.src, p.len);
  const uint32_t faults = settings_.faults;
  // Test only: a frame that claims to be shorter than it is, on a connection that stays in step.
  if (p.use_frame && (faults & params::kFaultShortFrame) && !fault_fired_.exchange(true))
    h.payload_len = uint32_t(p.frame_size / 2);
  uint8_t hdr[tcp::kChunkHeaderSize];
  tcp::encode_chunk_header(h, hdr);
  iovec iov[3] = {{hdr, sizeof hdr},
                  {p.use_frame ? p.buf.get() : const_cast<uint8_t*>(p.src), h.payload_len},
                  {nullptr, 0}};
  int iovcnt = 2;
  uint8_t flipped = 0;
  if (!p.use_frame && h.payload_len > 0 && (faults & params::kFaultCorruptRaw)) {
    // Test only: the last payload byte goes out flipped; the user's buffer is not touched.
    flipped = p.src[h.payload_len - 1] ^ 0x5A;
    iov[1].iov_len = h.payload_len - 1;
    iov[2] = {&flipped, 1};
    iovcnt = 3;
  }
  bool truncate = (faults & params::kFaultTruncateFrame) && h.payload_len > 1 && !fault_fired_.exchange(true);
  if (truncate) iov[1].iov_len = h.payload_len / 2;  // test only: a frame cut short, then EOF
  transport::IoStatus s = link_->write(st.index, iov, iovcnt);
  if (!s) {
    if (s.code != transport::IoStatus::stopped) fail(to_nccl(s), s.what);
    return false;
  }
  if (truncate || ((faults & params::kFaultReset) && !fault_fired_.exchange(true))) {
    if (truncate) link_->shutdown(); else link_->inject_reset();
    fail(ncclSystemError, truncate ? "fault injected: truncated frame" : "fault injected: connection reset");
    return false;
  }
  stats_.bytes_out.fetch_add(sizeof hdr + h.payload_len, std::memory_order_relaxed);
  adaptive_->on_written(sizeof hdr + h.payload_len, h.orig_len);
  if (p.use_frame) stats_.chunks_compressed.fetch_add(1, std::memory_order_relaxed);
  else stats_.chunks_raw.fetch_add(1, std::memory_order_relaxed);
  if (p.compress && !p.use_frame) stats_.raw_fallbacks.fetch_add(1, std::memory_order_relaxed);
  r->inflight.fetch_sub(1);
  // Last touch of r: once done is visible, NCCL may reuse both the request and the buffer.
  if (r->chunks_done.fetch_add(1, std::memory_order_acq_rel) + 1 == r->nchunks) {
    adaptive_->on_sent(r->size, Adaptive::clock_ns());  // before done: r may be reused right after
    completed_msgs_.fetch_add(1, std::memory_order_relaxed);
    r->done.store(true, std::memory_order_release);
  }
  return true;
}

void SendComm::wait_encodes(Stream& st) {
  std::unique_lock<std::mutex> lk(st.mu);
  for (uint32_t i = st.p_head; i != st.p_tail; ++i) {
    Prep& p = st.prep[i % kLookahead];
    st.cv.wait(lk, [&] { return p.ready; });
  }
}

void SendComm::stream_loop(Stream& st) {
  for (;;) {
    // Keep the lookahead full: encodes run on the pool while this thread writes.
    while (st.p_tail - st.p_head < kLookahead) {
      Prep& p = st.prep[st.p_tail % kLookahead];
      if (!take_next_chunk(st, p)) break;
      ++st.p_tail;
      if (p.compress) settings_.pool->submit(&p);
    }
    if (stop_.load(std::memory_order_acquire) || failed()) break;  // a failed comm sends nothing more
    Prep* head = nullptr;
    {
      std::unique_lock<std::mutex> lk(st.mu);
      if (st.p_head == st.p_tail) {
        st.cv.wait(lk, [&] { return st.q_head != st.q_tail || stop_.load(std::memory_order_acquire); });
        continue;
      }
      head = &st.prep[st.p_head % kLookahead];
      st.cv.wait(lk, [&] { return head->ready || stop_.load(std::memory_order_acquire); });
      if (!head->ready) break;
    }
    if (!write_chunk(st, *head)) break;
    ++st.p_head;
  }
  wait_encodes(st);  // jobs in flight point into st.prep
  // Sub-chunks taken but never written (failure or close) no longer use their user buffers.
  for (uint32_t i = st.p_head; i != st.p_tail; ++i) st.prep[i % kLookahead].req->inflight.fetch_sub(1);
}

}  // namespace zipnet::pipeline
