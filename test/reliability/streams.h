// A stream of messages over one connection, driven the way NCCL's proxy progress thread does it:
// up to `inflight` requests posted, the oldest one tested, NULL requests retried. The receiver
// checks every byte of every message it is told is done.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "harness.h"

namespace rel {

struct StreamSpec {
  size_t size = size_t(1) << 20;
  Content content = Content::tensor;
  uint64_t count = 0;  // 0: until the plugin reports an error
  int inflight = 8;
  double stall_s = kDetectBoundS;  // no completion for this long ends the stream with ncclTimeout
  std::function<void(uint64_t completed)> on_complete;  // after each message reported done
  std::function<void()> before_close;  // when the stream ends, before deregMr/close (fault hooks)
};
// At the end, as NCCL tears a connection down: deregMr every buffer, close the comm, and only then
// free the buffers (a plugin may read a pending send's buffer until close returns).

struct StreamResult {
  ncclResult_t result = ncclSuccess;  // the first error the plugin returned; ncclTimeout = stalled
  std::string step;                   // the call that returned it: regMr, isend, irecv, test
  uint64_t completed = 0;             // messages reported done
  uint64_t corrupted = 0;             // reported done with a wrong size or wrong bytes
  Clock::time_point end;              // when the error (or the last completion) was seen
  ncclResult_t close_result = ncclSuccess;  // closeSend/closeRecv at the end
  double close_seconds = 0;
};

StreamResult stream_send(zipperf::Plugin& p, void* send_comm, const StreamSpec& spec);
StreamResult stream_recv(zipperf::Plugin& p, void* recv_comm, const StreamSpec& spec);

}  // namespace rel
