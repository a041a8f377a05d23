#include "plugin/pipeline/comm.h"

#include "plugin/log.h"

namespace zipnet::pipeline {

ncclResult_t to_nccl(const transport::IoStatus& s) {
  switch (s.code) {
    case transport::IoStatus::ok: return ncclSuccess;
    case transport::IoStatus::closed:
    case transport::IoStatus::reset:
    case transport::IoStatus::timeout: return ncclRemoteError;  // the peer went away or stalled
    default: return ncclSystemError;
  }
}

void CommBase::fail(ncclResult_t code, std::string why) {
  if (fail_claimed_.test_and_set()) return;
  fail_code_ = code;
  fail_why_ = std::move(why);
  failed_.store(true);
  link_->shutdown();
}

ncclResult_t CommBase::report_failure() {
  if (!warned_.exchange(true))
    ZN_WARN(NCCL_NET, "connection to %s failed: %s", peer_.c_str(), fail_why_.c_str());
  return fail_code_;
}

Request* CommBase::alloc_request() {
  for (uint32_t i = 0; i < kMaxRequests; ++i) {
    Request& r = requests_[(next_request_ + i) % kMaxRequests];
    if (r.in_use) continue;
    next_request_ = (next_request_ + i + 1) % kMaxRequests;
    r.in_use = true;
    r.comm = this;
    r.chunks_done.store(0, std::memory_order_relaxed);
    r.recv_size.store(0, std::memory_order_relaxed);
    r.done.store(false, std::memory_order_relaxed);
    r.inflight.store(0, std::memory_order_relaxed);
    r.failed.store(false, std::memory_order_relaxed);
    r.fail_claimed.clear();
    r.fail_code = ncclSuccess;
    r.fail_why.clear();
    return &r;
  }
  return nullptr;
}

void CommBase::free_request(Request* r) { r->in_use = false; }

ncclResult_t CommBase::test(Request* r, int* done, int* sizes) {
  *done = 0;
  if (r->failed.load(std::memory_order_acquire)) {
    if (r->inflight.load() != 0) return ncclSuccess;  // not done; report once writers are gone
    // The request stays allocated: stream threads may still account its remaining chunks, and
    // NCCL tears the comm down after an error anyway.
    ZN_WARN(NCCL_NET, "request to/from %s failed: %s", peer_.c_str(), r->fail_why.c_str());
    return r->fail_code;
  }
  if (r->done.load(std::memory_order_acquire)) {
    *done = 1;
    if (sizes) *sizes = int(magic_ == kRecvMagic ? r->recv_size.load(std::memory_order_relaxed) : r->size);
    free_request(r);
    return ncclSuccess;
  }
  if (failed()) {
    if (r->inflight.load() != 0) return ncclSuccess;  // let running decodes finish first
    return report_failure();
  }
  return ncclSuccess;
}

}  // namespace zipnet::pipeline
