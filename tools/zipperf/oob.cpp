#include "oob.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace zipperf {
namespace {

// Waits for `events` on fd until the deadline; empty on ready.
std::string wait_fd(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return fmt::format("out-of-band {} timed out (peer gone or stuck)", what);
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r < 0 && errno != EINTR) return fmt::format("out-of-band poll failed: {}", std::strerror(errno));
    if (r > 0) return {};
  }
}

}  // namespace

std::string Oob::send(const void* data, size_t n, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    if (std::string e = wait_fd(fd_, POLLOUT, deadline, "send"); !e.empty()) return e;
    ssize_t w = ::send(fd_, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fmt::format("out-of-band send failed: {} (peer exited?)", std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

std::string Oob::recv(void* data, size_t n, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    if (std::string e = wait_fd(fd_, POLLIN, deadline, "receive"); !e.empty()) return e;
    ssize_t r = ::recv(fd_, p, n, 0);
    if (r == 0) return "out-of-band channel closed: the peer process exited";
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fmt::format("out-of-band receive failed: {}", std::strerror(errno));
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return {};
}

std::string Oob::barrier(Clock::time_point deadline) {
  char token = 'B', got = 0;
  if (std::string e = send(&token, 1, deadline); !e.empty()) return e;
  if (std::string e = recv(&got, 1, deadline); !e.empty()) return e;
  if (got != token) return "out-of-band barrier out of step (the peer is in another phase)";
  return {};
}

}  // namespace zipperf
