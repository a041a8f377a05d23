#include "plugin/pipeline/recv_comm.h"

#include <chrono>
#include <new>

#include "plugin/log.h"
#include "plugin/pipeline/codec_seam.h"
#include "plugin/pipeline/link_policy.h"
#include "plugin/pipeline/ordered_copy.h"

namespace zipnet::pipeline {

using Clock = std::chrono::steady_clock;
static int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

RecvComm::RecvComm(std::unique_ptr<transport::Link> link, Settings settings)
    : CommBase(kRecvMagic, std::move(link), std::move(settings)) {
  if (settings_.adaptive && settings_.compress && codec_seam::available())
    link_policy_ = link_policy(peer_host(peer_), true);
}

std::unique_ptr<RecvComm> RecvComm::create(std::unique_ptr<transport::Link> link, Settings settings,
                                           std::string* err) {
  std::unique_ptr<RecvComm> c(new RecvComm(std::move(link), std::move(settings)));
  c->peer_subchunk_ = c->link_->peer_subchunk_bytes();
  c->slot_cap_ = codec_seam::max_frame_size(c->peer_subchunk_);
  try {
    if (c->settings_.faults & params::kFaultStagingExhausted) throw std::bad_alloc();
    for (int s = 0; s < c->link_->streams(); ++s) {
      auto st = std::make_unique<Stream>();
      st->index = s;
      for (Slot& sl : st->slots) {
        sl.comm = c.get();
        sl.stream = st.get();
        sl.run = &RecvComm::decode_job;
        sl.buf.reset(new uint8_t[c->slot_cap_]);
      }
      c->streams_.push_back(std::move(st));
    }
  } catch (const std::bad_alloc&) {
    *err = "staging memory exhausted: cannot allocate " +
           std::to_string(c->slot_cap_ * kSlots * size_t(c->link_->streams())) +
           " bytes of receive staging";
    return nullptr;
  }
  for (auto& st : c->streams_) {
    Stream* raw = st.get();
    RecvComm* self = c.get();
    raw->thread = std::thread([self, raw] { self->stream_loop(*raw); });
  }
  return c;
}

RecvComm::~RecvComm() {
  stop_.store(true, std::memory_order_release);
  link_->shutdown();
  { std::lock_guard<std::mutex> lk(post_mu_); }
  post_cv_.notify_all();
  for (auto& st : streams_) {
    { std::lock_guard<std::mutex> lk(st->mu); }
    st->cv.notify_all();
  }
  { std::lock_guard<std::mutex> lk(end_mu_); }
  end_cv_.notify_all();
  for (auto& st : streams_)
    if (st->thread.joinable()) st->thread.join();
  stats_.report("recv", peer_, settings_.stats_file);
}

ncclResult_t RecvComm::irecv(int n, void** data, size_t* sizes, void** request) {
  *request = nullptr;
  if (n != 1) {
    ZN_WARN(NCCL_NET, "irecv with n=%d buffers; zipnet advertises maxRecvs=1", n);
    return ncclInternalError;
  }
  if (failed()) return report_failure();
  Request* r = alloc_request();
  if (!r) return ncclSuccess;  // back-pressure
  r->data = static_cast<uint8_t*>(data[0]);
  r->size = sizes[0];
  {
    std::lock_guard<std::mutex> lk(post_mu_);
    r->seq = posted_count_;
    posted_[posted_count_ % kMaxRequests] = r;
    ++posted_count_;
  }
  post_cv_.notify_all();
  *request = r;
  return ncclSuccess;
}

Request* RecvComm::wait_posted(uint64_t seq) {
  std::unique_lock<std::mutex> lk(post_mu_);
  post_cv_.wait(lk, [&] { return posted_count_ > seq || stop_.load(std::memory_order_acquire); });
  if (posted_count_ <= seq) return nullptr;
  return posted_[seq % kMaxRequests];
}

RecvComm::Slot* RecvComm::wait_free_slot(Stream& st) {
  std::unique_lock<std::mutex> lk(st.mu);
  Slot* free_slot = nullptr;
  st.cv.wait(lk, [&] {
    for (Slot& sl : st.slots)
      if (!sl.busy) { free_slot = &sl; return true; }
    return stop_.load(std::memory_order_acquire);
  });
  return free_slot;
}

void RecvComm::chunk_done(Request* r, const tcp::ChunkHeader& h) {
  r->recv_size.store(h.msg_size, std::memory_order_relaxed);
  if (r->chunks_done.fetch_add(1, std::memory_order_acq_rel) + 1 == h.nchunks) {
    stats_.messages.fetch_add(1, std::memory_order_relaxed);
    if (link_policy_) link_policy_->on_received(h.msg_size, Adaptive::clock_ns());
    r->done.store(true, std::memory_order_release);  // last touch of r
  }
}

// Reads and drops len payload bytes, keeping the stream in step after a rejected message.
bool RecvComm::discard(Stream& st, uint32_t len) {
  Slot* sl = wait_free_slot(st);
  if (!sl) return false;
  while (len > 0) {
    uint32_t take = uint32_t(std::min<size_t>(len, slot_cap_));
    transport::IoStatus s = link_->read(st.index, sl->buf.get(), take, true);
    if (!s) {
      if (s.code != transport::IoStatus::stopped) fail(to_nccl(s), s.what);
      return false;
    }
    len -= take;
  }
  return true;
}

void RecvComm::decode_job(Job* job) {
  Slot& sl = *static_cast<Slot*>(job);
  RecvComm& c = *sl.comm;
  Request* r = sl.req;
  const tcp::ChunkHeader h = sl.h;
  auto t0 = Clock::now();
  std::string why = codec_seam::decode(sl.buf.get(), h.payload_len, r->data + h.offset, h.orig_len);
  c.stats_.codec_ns.fetch_add(
      uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()),
      std::memory_order_relaxed);
  if (!why.empty())
    r->fail(ncclRemoteError, "corrupt frame from " + c.peer_ + " (message " + std::to_string(h.seq) +
                                 ", bytes " + std::to_string(h.offset) + ".." +
                                 std::to_string(h.offset + h.orig_len) + "): " + why);
  c.stats_.chunks_compressed.fetch_add(1, std::memory_order_relaxed);
  r->inflight.fetch_sub(1);
  c.chunk_done(r, h);
  // Notify under the lock: once the stream thread sees the slot free it may exit and the comm
  // may be destroyed, so this thread must not touch the stream after unlocking.
  std::lock_guard<std::mutex> lk(sl.stream->mu);
  sl.busy = false;
  sl.stream->cv.notify_all();
}

void RecvComm::stream_loop(Stream& st) {
  uint8_t hdr[tcp::kChunkHeaderSize];
  transport::IoStatus ended;  // set when the peer closed this stream between chunks
  for (;;) {
    st.idle_since_ns.store(now_ns(), std::memory_order_relaxed);
    transport::IoStatus s = link_->read(st.index, hdr, sizeof hdr, false);
    st.idle_since_ns.store(0, std::memory_order_relaxed);
    if (!s) {
      // A peer that closes after its last send (NCCL may destroy the sending comm at once) ends
      // each stream between chunks; the other streams, and decodes still in flight, may still
      // complete posted messages. See below: such an end fails the comm only after the last one.
      if (s.code == transport::IoStatus::closed) ended = s;
      else if (s.code != transport::IoStatus::stopped) fail(to_nccl(s), s.what);
      break;
    }
    tcp::ChunkHeader h;
    tcp::ParseError e = tcp::parse_chunk_header(hdr, sizeof hdr, peer_subchunk_, slot_cap_, &h);
    if (e != tcp::ParseError::none) {
      fail(ncclRemoteError, "protocol error from " + peer_ + ": bad chunk header (" + tcp::to_string(e) + ")");
      break;
    }
    Request* r = wait_posted(h.seq);
    if (!r) break;
    stats_.bytes_out.fetch_add(sizeof hdr + h.payload_len, std::memory_order_relaxed);
    stats_.bytes_in.fetch_add(h.orig_len, std::memory_order_relaxed);
    if (h.msg_size > r->size) {
      r->fail(ncclInvalidUsage, "message truncated: " + peer_ + " sent " + std::to_string(h.msg_size) +
                                    " bytes, the receive posted " + std::to_string(r->size));
      if (!discard(st, h.payload_len)) break;
      chunk_done(r, h);
      continue;
    }
    // Count this writer before checking for failure (seq_cst both): test() either sees the
    // writer, or the writer sees the failure and drops the sub-chunk.
    r->inflight.fetch_add(1);
    if (r->failed.load() || failed()) {
      r->inflight.fetch_sub(1);
      if (!discard(st, h.payload_len)) break;
      chunk_done(r, h);
      continue;
    }
    Slot* sl = wait_free_slot(st);
    if (!sl) { r->inflight.fetch_sub(1); break; }
    s = link_->read(st.index, sl->buf.get(), h.payload_len, true);
    if (!s) {
      r->inflight.fetch_sub(1);
      if (s.code != transport::IoStatus::stopped) fail(to_nccl(s), s.what);
      break;
    }
    if (!(h.flags & tcp::kChunkFrame)) {
      if (codec_seam::raw_payload_check(sl->buf.get(), h.orig_len) != h.payload_check) {
        // The stream is still in step (the header was sound), so only this message fails.
        r->fail(ncclRemoteError, "corrupt data from " + peer_ + " (message " + std::to_string(h.seq) +
                                     ", raw bytes " + std::to_string(h.offset) + ".." +
                                     std::to_string(h.offset + h.orig_len) + "): checksum mismatch");
      } else {
        ordered_copy(r->data + h.offset, sl->buf.get(), h.orig_len);
      }
      stats_.chunks_raw.fetch_add(1, std::memory_order_relaxed);
      r->inflight.fetch_sub(1);
      chunk_done(r, h);
      continue;
    }
    {
      std::lock_guard<std::mutex> lk(st.mu);
      sl->busy = true;
    }
    sl->req = r;
    sl->h = h;
    settings_.pool->submit(sl);
  }
  // Decodes in flight point into st.slots: wait for them before the thread (and comm) goes.
  std::unique_lock<std::mutex> lk(st.mu);
  st.cv.wait(lk, [&] {
    for (Slot& sl : st.slots)
      if (sl.busy) return false;
    return true;
  });
  lk.unlock();
  // Every stream ended cleanly and all their decodes are done: nothing more can arrive, so
  // requests still pending fail now (completed ones are still reported done by test()).
  if (ended.code != transport::IoStatus::closed) return;
  if (streams_ended_.fetch_add(1, std::memory_order_acq_rel) + 1 == streams_.size()) {
    fail(to_nccl(ended), ended.what);
    { std::lock_guard<std::mutex> lk(end_mu_); }
    end_cv_.notify_all();
  } else {
    watch_half_closed(st);
  }
}

// A peer that closes its comm, or dies, ends every stream within moments. One that ends some and
// keeps the others open without sending on them would leave a message that needs a sub-chunk of
// an ended stream pending forever; instead the comm fails once an open stream has sat idle for
// ZIPNET_TIMEOUT since the first stream ended. A stream waiting for its irecv is not idle: its
// data has arrived and the wait is the application's.
void RecvComm::watch_half_closed(const Stream& ended_stream) {
  const int64_t ended_at = now_ns();
  const int64_t limit = int64_t(settings_.timeout_s) * 1000000000;
  std::unique_lock<std::mutex> lk(end_mu_);
  while (!stop_.load(std::memory_order_acquire) && !failed() &&
         streams_ended_.load(std::memory_order_acquire) < streams_.size()) {
    end_cv_.wait_for(lk, std::chrono::milliseconds(100));
    const int64_t now = now_ns();
    for (const auto& other : streams_) {
      const int64_t idle = other->idle_since_ns.load(std::memory_order_relaxed);
      if (other.get() == &ended_stream || idle == 0 || now - std::max(idle, ended_at) <= limit) continue;
      lk.unlock();
      fail(ncclRemoteError, "peer " + peer_ + " closed " +
                                std::to_string(streams_ended_.load()) + " of the connection's " +
                                std::to_string(streams_.size()) + " streams and has sent nothing on stream " +
                                std::to_string(other->index) + " for " + std::to_string(settings_.timeout_s) +
                                " s (ZIPNET_TIMEOUT)");
      return;
    }
  }
}

}  // namespace zipnet::pipeline
