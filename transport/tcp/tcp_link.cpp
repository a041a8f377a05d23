#include "transport/tcp/tcp_link.h"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace zipnet::tcp {

using transport::IoStatus;
using Clock = std::chrono::steady_clock;

// Blocked calls wake at least this often to notice shutdown() even if no event arrives.
static constexpr int kPollSliceMs = 200;

void set_stream_options(int fd, int timeout_s) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  int idle = std::max(1, timeout_s / 3), intvl = std::max(1, timeout_s / 9), cnt = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
  unsigned user_timeout_ms = unsigned(timeout_s) * 1000u;
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

TcpLink::TcpLink(std::vector<int> fds, int timeout_s, std::string peer, uint32_t peer_subchunk_bytes)
    : fds_(std::move(fds)), timeout_s_(timeout_s), peer_(std::move(peer)),
      peer_subchunk_bytes_(peer_subchunk_bytes) {
  for (int fd : fds_) set_stream_options(fd, timeout_s_);
}

TcpLink::~TcpLink() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

IoStatus TcpLink::from_errno(int err, const char* op) const {
  if (stopped_.load(std::memory_order_acquire)) return {IoStatus::stopped, "connection closed locally"};
  IoStatus s;
  s.code = (err == ECONNRESET || err == EPIPE || err == ENOTCONN) ? IoStatus::reset
           : err == ETIMEDOUT                                      ? IoStatus::timeout
                                                                   : IoStatus::error;
  s.what = std::string(op) + " to/from " + peer_ + " failed: " + std::strerror(err);
  return s;
}

IoStatus TcpLink::write(int stream, const iovec* iov_in, int iovcnt) {
  iovec iov[8];
  int n = std::min(iovcnt, 8);
  std::copy(iov_in, iov_in + n, iov);
  int fd = fds_[size_t(stream)];
  auto last_progress = Clock::now();
  int at = 0;
  bool waited = false;
  while (at < n) {
    if (iov[at].iov_len == 0) { ++at; continue; }
    if (stopped_.load(std::memory_order_acquire)) return {IoStatus::stopped, "connection closed locally"};
    msghdr m{};
    m.msg_iov = iov + at;
    m.msg_iovlen = size_t(n - at);
    ssize_t r = ::sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r > 0) {
      size_t left = size_t(r);
      while (left > 0) {
        size_t take = std::min(left, iov[at].iov_len);
        iov[at].iov_base = static_cast<char*>(iov[at].iov_base) + take;
        iov[at].iov_len -= take;
        left -= take;
        if (iov[at].iov_len == 0) ++at;
      }
      last_progress = Clock::now();
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Clock::now() - last_progress > std::chrono::seconds(timeout_s_))
        return {IoStatus::timeout, "peer " + peer_ + " has not read for " +
                                       std::to_string(timeout_s_) + " s (ZIPNET_TIMEOUT)"};
      waited = true;
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, kPollSliceMs);
      continue;
    }
    return from_errno(r < 0 ? errno : EPIPE, "send");
  }
  IoStatus ok;
  ok.waited = waited;
  return ok;
}

IoStatus TcpLink::read(int stream, void* buf, size_t len, bool bounded) {
  int fd = fds_[size_t(stream)];
  char* p = static_cast<char*>(buf);
  auto last_progress = Clock::now();
  while (len > 0) {
    if (stopped_.load(std::memory_order_acquire)) return {IoStatus::stopped, "connection closed locally"};
    ssize_t r = ::recv(fd, p, len, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      len -= size_t(r);
      last_progress = Clock::now();
      bounded = true;  // once bytes of a unit arrived, the rest must follow within the timeout
      continue;
    }
    if (r == 0) {
      if (stopped_.load(std::memory_order_acquire)) return {IoStatus::stopped, "connection closed locally"};
      return {IoStatus::closed, "connection closed by peer " + peer_};
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (bounded && Clock::now() - last_progress > std::chrono::seconds(timeout_s_))
        return {IoStatus::timeout, "peer " + peer_ + " sent a partial frame and nothing for " +
                                       std::to_string(timeout_s_) + " s (ZIPNET_TIMEOUT)"};
      pollfd pf{fd, POLLIN, 0};
      ::poll(&pf, 1, kPollSliceMs);
      continue;
    }
    return from_errno(errno, "recv");
  }
  return {};
}

uint64_t TcpLink::queued_bytes() const {
  uint64_t total = 0;
  for (int fd : fds_) {
    int unacked = 0;
    if (fd >= 0 && ::ioctl(fd, SIOCOUTQ, &unacked) == 0 && unacked > 0) total += uint64_t(unacked);
  }
  return total;
}

void TcpLink::shutdown() {
  if (stopped_.exchange(true)) return;
  for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);  // wakes threads blocked in poll()
}

void TcpLink::inject_reset() {
  // Replace each socket with a fresh unconnected one (dup2 is atomic for concurrent users); the
  // old socket closes with linger 0, which sends an RST like a crashed peer's kernel would.
  for (int fd : fds_) {
    linger lg{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    int fresh = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fresh >= 0) {
      ::dup2(fresh, fd);
      ::close(fresh);
    }
  }
}

}  // namespace zipnet::tcp
