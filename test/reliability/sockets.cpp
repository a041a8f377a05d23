#include "sockets.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace rel {
namespace {

std::set<unsigned long> own_socket_inodes() {
  std::set<unsigned long> inodes;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return inodes;
  while (dirent* e = readdir(d)) {
    char link[64], target[128];
    std::snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    const ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = 0;
    unsigned long inode = 0;
    if (std::sscanf(target, "socket:[%lu]", &inode) == 1) inodes.insert(inode);
  }
  closedir(d);
  return inodes;
}

// /proc/net/tcp lines: "sl local_address rem_address st ... inode"; addresses are hex, the IPv4 one
// as a host-order u32, the IPv6 one as four host-order u32 words.
void scan(const char* table, bool v6, const std::set<unsigned long>& inodes, std::vector<sockaddr_storage>* out) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string sl, local, remote, st, txrx, tr, retr, uid, timeout;
    unsigned long inode = 0;
    ls >> sl >> local >> remote >> st >> txrx >> tr >> retr >> uid >> timeout >> inode;
    if (st != "0A" || !inodes.count(inode)) continue;
    const size_t colon = local.find(':');
    const unsigned port = unsigned(std::strtoul(local.c_str() + colon + 1, nullptr, 16));
    sockaddr_storage ss{};
    if (!v6) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_port = htons(uint16_t(port));
      a->sin_addr.s_addr = uint32_t(std::strtoul(local.substr(0, colon).c_str(), nullptr, 16));
      if (a->sin_addr.s_addr == 0) a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(uint16_t(port));
      for (int w = 0; w < 4; ++w) {
        const uint32_t word = uint32_t(std::strtoul(local.substr(size_t(w) * 8, 8).c_str(), nullptr, 16));
        std::memcpy(&a->sin6_addr.s6_addr[w * 4], &word, 4);
      }
      if (IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr)) a->sin6_addr = in6addr_loopback;
    }
    out->push_back(ss);
  }
}

}  // namespace

std::vector<sockaddr_storage> own_listen_addrs() {
  const std::set<unsigned long> inodes = own_socket_inodes();
  std::vector<sockaddr_storage> out;
  scan("/proc/net/tcp", false, inodes, &out);
  scan("/proc/net/tcp6", true, inodes, &out);
  return out;
}

std::string to_string(const sockaddr_storage& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (a.ss_family == AF_INET) {
    auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    port = ntohs(v4->sin_port);
  } else {
    auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
    port = ntohs(v6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

int tcp_connect(const sockaddr_storage& addr, double timeout_s) {
  const int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  const socklen_t len = addr.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  pollfd pfd{fd, POLLOUT, 0};
  int err = 0;
  socklen_t elen = sizeof err;
  if (poll(&pfd, 1, int(timeout_s * 1000)) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0 || err) {
    ::close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

bool send_bytes(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w, n -= size_t(w);
  }
  return true;
}

size_t send_some(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  size_t sent = 0;
  while (sent < n) {
    const ssize_t w = ::send(fd, c + sent, n - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    sent += size_t(w);
  }
  return sent;
}

namespace {

// Calls fn(fd) for each TCP socket of this process until it returns false.
void for_each_tcp_socket(const std::function<bool(int)>& fn) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    const int fd = std::atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == dirfd(d)) continue;
    int type = 0;
    socklen_t tlen = sizeof type;
    sockaddr_storage ss{};
    socklen_t slen = sizeof ss;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) != 0 || type != SOCK_STREAM) continue;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &slen) != 0 ||
        (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
      continue;
    if (!fn(fd)) break;
  }
  closedir(d);
}

}  // namespace

int arm_reset_on_close() {
  int armed = 0;
  for_each_tcp_socket([&](int fd) {
    linger l{1, 0};
    if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l) == 0) ++armed;
    return true;
  });
  return armed;
}

bool half_close_one_socket() {
  bool done = false;
  for_each_tcp_socket([&](int fd) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return true;  // a listener
    done = ::shutdown(fd, SHUT_WR) == 0;
    return !done;
  });
  return done;
}

}  // namespace rel
