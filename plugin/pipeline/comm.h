// What send and receive comms share: the link, the settings, a fixed pool of requests, stats and
// the comm's first error (set by whichever thread sees it, reported by test()).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "plugin/nccl/net_abi.h"
#include "plugin/pipeline/settings.h"
#include "plugin/pipeline/stats.h"
#include "transport/transport.h"

namespace zipnet::pipeline {

// NCCL keeps at most NCCL_NET_MAX_REQUESTS (32) in flight per comm; twice that leaves headroom.
inline constexpr uint32_t kMaxRequests = 64;

class CommBase;

struct Request {
  static constexpr uint32_t kMagic = 0x5A524551;  // "QERZ": recognises our requests in test()
  uint32_t magic = kMagic;
  bool in_use = false;
  CommBase* comm = nullptr;
  uint8_t* data = nullptr;
  uint64_t size = 0;  // send: message size; recv: posted capacity
  uint64_t seq = 0;
  uint32_t nchunks = 0;  // send side
  bool compress = false;
  std::atomic<uint32_t> chunks_done{0};
  std::atomic<uint64_t> recv_size{0};
  std::atomic<bool> done{false};
  // Sub-chunks whose user memory is in use right now (send: taken for encode/write until written;
  // receive: being copied or decoded into data). A failed request is reported only once this is
  // 0, and later sub-chunks of a failed request are dropped, so after test() returns the error
  // the plugin no longer touches the user's buffer.
  std::atomic<uint32_t> inflight{0};
  // A request-level error (truncated message, corrupt frame). First one wins.
  std::atomic<bool> failed{false};
  std::atomic_flag fail_claimed = ATOMIC_FLAG_INIT;
  ncclResult_t fail_code = ncclSuccess;
  std::string fail_why;

  void fail(ncclResult_t code, std::string why) {
    if (fail_claimed.test_and_set()) return;
    fail_code = code;
    fail_why = std::move(why);
    failed.store(true);  // seq_cst: pairs with the writers' inflight check
  }
};

class CommBase {
 public:
  static constexpr uint32_t kSendMagic = 0x5A534E44, kRecvMagic = 0x5A524356;
  CommBase(uint32_t magic, std::unique_ptr<transport::Link> link, Settings settings)
      : magic_(magic), link_(std::move(link)), settings_(std::move(settings)), peer_(link_->describe()) {}
  virtual ~CommBase() = default;
  uint32_t magic() const { return magic_; }

  // test() for either kind of request; frees the request when done.
  ncclResult_t test(Request* r, int* done, int* sizes);

  // Records the comm's first error (later ones are dropped) and shuts the link down so every
  // stream thread stops promptly. Thread-safe.
  void fail(ncclResult_t code, std::string why);
  bool failed() const { return failed_.load(); }  // seq_cst, see Request::inflight
  // Returns the error and WARNs once.
  ncclResult_t report_failure();
  const std::string& peer() const { return peer_; }

 protected:
  Request* alloc_request();  // progress thread only; nullptr when all are in use
  void free_request(Request* r);

  uint32_t magic_;
  std::unique_ptr<transport::Link> link_;
  Settings settings_;
  std::string peer_;
  CommStats stats_;
  Request requests_[kMaxRequests];
  uint32_t next_request_ = 0;

 private:
  std::atomic<bool> failed_{false};
  std::atomic_flag fail_claimed_ = ATOMIC_FLAG_INIT;
  std::atomic<bool> warned_{false};
  ncclResult_t fail_code_ = ncclSuccess;
  std::string fail_why_;
};

// Maps a transport failure to the NCCL code the plugin README asks for.
ncclResult_t to_nccl(const transport::IoStatus& s);

}  // namespace zipnet::pipeline
