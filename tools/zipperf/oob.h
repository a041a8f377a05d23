// The out-of-band channel between the two ends (NCCL uses its bootstrap network for this): the
// listen handle, barriers between phases, and latency timestamps. A socketpair inherited by fork.
// Every wait is bounded by a deadline, so a dead or hung peer gives an error, not a hang.
#pragma once

#include <cstddef>
#include <string>

#include "engine.h"

namespace zipperf {

class Oob {
 public:
  explicit Oob(int fd) : fd_(fd) {}
  // Each returns an empty string on success, else what went wrong.
  std::string send(const void* data, size_t n, Clock::time_point deadline);
  std::string recv(void* data, size_t n, Clock::time_point deadline);
  // Both ends call it; returns when both have arrived.
  std::string barrier(Clock::time_point deadline);
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace zipperf
