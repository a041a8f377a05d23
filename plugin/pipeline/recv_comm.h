// Receiving side of a connection. Each stream thread reads a chunk header, waits until the
// matching irecv is posted (messages and irecvs pair up in order; until then the bytes wait in
// the kernel's socket buffer, which is what lets isend run ahead of irecv), reads the payload into
// one of its staging slots and then either copies it (raw) or hands it to the worker pool, which
// decodes it straight into the posted buffer. The request is done, with the original size, only
// when every sub-chunk of the message has been written. Writes into the user buffer are ascending
// ordinary stores, lines whole (LL/LL128 flags).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "plugin/pipeline/adaptive.h"
#include "plugin/pipeline/comm.h"
#include "plugin/pipeline/worker_pool.h"
#include "transport/tcp/handshake.h"

namespace zipnet::pipeline {

class RecvComm final : public CommBase {
 public:
  static std::unique_ptr<RecvComm> create(std::unique_ptr<transport::Link> link, Settings settings,
                                          std::string* err);
  ~RecvComm() override;
  // n must be 1 (maxRecvs = 1).
  ncclResult_t irecv(int n, void** data, size_t* sizes, void** request);

  static constexpr uint32_t kSlots = 4;  // staged sub-chunks per stream

 private:
  struct Stream;
  struct Slot : Job {
    RecvComm* comm = nullptr;
    Stream* stream = nullptr;
    std::unique_ptr<uint8_t[]> buf;
    Request* req = nullptr;
    tcp::ChunkHeader h;
    bool busy = false;  // guarded by stream->mu
  };
  struct Stream {
    int index = 0;
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    Slot slots[kSlots];
    // Steady-clock ns since this stream started waiting for its next chunk header with nothing
    // else to wait for; 0 while it is busy (reading a payload, waiting for an irecv or a slot).
    std::atomic<int64_t> idle_since_ns{0};
  };

  RecvComm(std::unique_ptr<transport::Link> link, Settings settings);
  void stream_loop(Stream& st);
  Request* wait_posted(uint64_t seq);
  Slot* wait_free_slot(Stream& st);
  bool discard(Stream& st, uint32_t len);
  void chunk_done(Request* r, const tcp::ChunkHeader& h);
  void watch_half_closed(const Stream& ended_stream);
  static void decode_job(Job* job);

  std::vector<std::unique_ptr<Stream>> streams_;
  size_t slot_cap_ = 0;
  uint32_t peer_subchunk_ = 0;
  std::mutex post_mu_;
  std::condition_variable post_cv_;
  Request* posted_[kMaxRequests] = {};  // by seq % kMaxRequests, guarded by post_mu_
  uint64_t posted_count_ = 0;           // guarded by post_mu_
  std::atomic<bool> stop_{false};
  std::atomic<size_t> streams_ended_{0};  // streams the peer closed between chunks
  std::mutex end_mu_;                     // with end_cv_: wakes watch_half_closed at close
  std::condition_variable end_cv_;
  std::shared_ptr<Adaptive> link_policy_;  // our sends' policy for this peer host: told of arrivals
};

}  // namespace zipnet::pipeline
