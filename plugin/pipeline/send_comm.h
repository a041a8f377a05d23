// Sending side of a connection: split-send over the link's streams.
//
// isend() cuts a message into sub-chunks (Settings::subchunk_bytes) and deals them round-robin to
// the streams. Each stream thread keeps up to kLookahead of its next sub-chunks being compressed
// by the worker pool (each its own codec frame, in its own staging slot) while it writes earlier
// ones, so the wire is busy before the whole message is compressed. A sub-chunk that does not
// shrink goes raw, straight from the user buffer. The request is done when every sub-chunk is in
// the socket: NCCL may then reuse the buffer at once.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "plugin/pipeline/adaptive.h"
#include "plugin/pipeline/comm.h"
#include "plugin/pipeline/worker_pool.h"

namespace zipnet::pipeline {

class SendComm final : public CommBase {
 public:
  // nullptr + err if staging memory cannot be had.
  static std::unique_ptr<SendComm> create(std::unique_ptr<transport::Link> link, Settings settings,
                                          std::string* err);
  ~SendComm() override;  // stops and joins the stream threads, reports stats
  ncclResult_t isend(void* data, size_t size, void** request);

  static constexpr uint32_t kLookahead = 4;   // staged sub-chunks per stream
  static constexpr uint32_t kQueueCap = 2 * kMaxRequests;

 private:
  struct Stream;
  struct Prep : Job {  // one sub-chunk being prepared or written
    SendComm* comm = nullptr;
    Stream* stream = nullptr;
    Request* req = nullptr;
    uint32_t index = 0;
    const uint8_t* src = nullptr;
    uint32_t len = 0;
    uint64_t offset = 0;
    bool compress = false;
    std::unique_ptr<uint8_t[]> buf;  // staging, max_frame_size(subchunk)
    size_t frame_size = 0;
    bool use_frame = false;
    bool ready = false;  // guarded by stream->mu
  };
  struct MsgEntry {
    Request* req = nullptr;
    uint32_t next_chunk = 0;
  };
  struct Stream {
    int index = 0;
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    MsgEntry queue[kQueueCap];  // guarded by mu
    uint32_t q_head = 0, q_tail = 0;
    Prep prep[kLookahead];      // ring, owned by the stream thread (ready guarded by mu)
    uint32_t p_head = 0, p_tail = 0;
  };

  SendComm(std::unique_ptr<transport::Link> link, Settings settings);
  void stream_loop(Stream& st);
  bool take_next_chunk(Stream& st, Prep& p);
  bool write_chunk(Stream& st, Prep& p);
  void wait_encodes(Stream& st);
  static void encode_job(Job* job);

  std::vector<std::unique_ptr<Stream>> streams_;
  size_t slot_cap_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t next_stream_ = 0;
  std::atomic<bool> stop_{false};
  std::shared_ptr<Adaptive> adaptive_;          // shared with the other connections to this peer host
  int policy_handle_ = -1;                      // this connection in adaptive_ (its queue probe)
  std::atomic<uint64_t> completed_msgs_{0};     // messages whose every sub-chunk is in the socket
  std::atomic<bool> fault_fired_{false};  // test-only faults fire once per comm
};

}  // namespace zipnet::pipeline
