// TCP transport: listen / connect / accept as non-blocking state machines (NCCL polls them), one
// socket per stream, grouped at the listener by the connection id in each stream's hello.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "plugin/log.h"
#include "transport/tcp/handshake.h"
#include "transport/tcp/interfaces.h"
#include "transport/tcp/tcp_link.h"
#include "transport/transport.h"

namespace zipnet::tcp {
namespace {

using transport::Poll;
using Clock = std::chrono::steady_clock;

static_assert(kHandleSize <= transport::kHandleBytes);

uint64_t random_u64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != sizeof v)
    v = uint64_t(Clock::now().time_since_epoch().count()) ^ (uint64_t(getpid()) << 32);
  return v ? v : 1;
}

struct Fd {  // owns a file descriptor
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept { std::swap(fd, o.fd); return *this; }
  ~Fd() { if (fd >= 0) ::close(fd); }
  int release() { int f = fd; fd = -1; return f; }
};

std::string endpoint(const sockaddr_storage& ss) {
  std::string s = format_address(reinterpret_cast<const sockaddr*>(&ss));
  uint16_t port = ss.ss_family == AF_INET ? ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port)
                                          : ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return s + ":" + std::to_string(port);
}

bool expired(Clock::time_point since, int timeout_s) {
  return Clock::now() - since > std::chrono::seconds(timeout_s);
}

// ---------------------------------------------------------------- listener
class TcpListener final : public transport::Listener {
 public:
  TcpListener(Fd lfd, HandleInfo info, int timeout_s, std::string where)
      : lfd_(std::move(lfd)), info_(info), timeout_s_(timeout_s), where_(std::move(where)) {}

  Poll poll_accept(std::unique_ptr<transport::Link>* out, std::string* err) override {
    if (!started_) { started_ = Clock::now(); }
    accept_new();
    for (size_t i = 0; i < pending_.size();) {
      std::optional<std::string> fatal;
      if (advance(pending_[i], &fatal)) {
        pending_.erase(pending_.begin() + long(i));  // consumed (grouped) or rejected
      } else {
        ++i;
      }
      if (fatal) { *err = *fatal; return Poll::failed; }
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
      Group& grp = groups_[g];
      if (grp.count < grp.fds.size()) continue;
      std::vector<int> fds;
      for (Fd& f : grp.fds) fds.push_back(f.release());
      *out = std::make_unique<TcpLink>(std::move(fds), timeout_s_, grp.from, grp.subchunk_bytes);
      groups_.erase(groups_.begin() + long(g));
      return Poll::ready;
    }
    if (expired(*started_, timeout_s_)) {
      *err = "no zipnet peer completed a connection to " + where_ + " within " +
             std::to_string(timeout_s_) + " s (ZIPNET_TIMEOUT)";
      return Poll::failed;
    }
    return Poll::pending;
  }

 private:
  struct Pending {
    Fd fd;
    uint8_t buf[kHelloSize] = {};
    size_t got = 0;
    Clock::time_point since;
    std::string from;
  };
  struct Group {
    uint64_t conn_id = 0;
    std::vector<Fd> fds;
    size_t count = 0;
    std::string from;
    uint32_t subchunk_bytes = 0;
  };

  void accept_new() {
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      int fd = ::accept4(lfd_.fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a transient error: try again on the next poll
      Pending p;
      p.fd = Fd(fd);
      p.since = Clock::now();
      p.from = endpoint(ss);
      pending_.push_back(std::move(p));
    }
  }

  void reject(const Pending& p, const std::string& why) {
    ZN_WARN(NCCL_NET, "rejected connection from %s to %s: %s; still waiting for the peer",
            p.from.c_str(), where_.c_str(), why.c_str());
  }

  // Returns true when p is finished with (grouped or rejected). Sets *fatal for a real peer of
  // another wire version: waiting longer cannot help, and the user must hear both versions.
  bool advance(Pending& p, std::optional<std::string>* fatal) {
    while (p.got < kHelloSize) {
      ssize_t r = ::recv(p.fd.fd, p.buf + p.got, kHelloSize - p.got, MSG_DONTWAIT);
      if (r > 0) { p.got += size_t(r); continue; }
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      reject(p, r == 0 ? "closed before its hello" : std::string("recv: ") + std::strerror(errno));
      return true;
    }
    // Garbage is rejected as soon as the magic is wrong, without waiting for 40 bytes.
    if (p.got >= 4 && std::memcmp(p.buf, "ZHEL", 4) != 0) { reject(p, "not a zipnet hello (bad magic)"); return true; }
    if (p.got < kHelloSize) {
      if (expired(p.since, timeout_s_)) { reject(p, "no hello within ZIPNET_TIMEOUT"); return true; }
      return false;
    }
    Hello h;
    uint16_t peer_version = 0;
    ParseError e = parse_hello(p.buf, p.got, &h, &peer_version);
    if (e == ParseError::bad_version) {
      *fatal = "peer " + p.from + " speaks zipnet wire version " + std::to_string(peer_version) +
               ", this side speaks version " + std::to_string(kWireVersion) +
               "; run the same zipnet build on every node";
      return true;
    }
    if (e != ParseError::none) { reject(p, std::string("bad hello: ") + to_string(e)); return true; }
    if (h.token != info_.token) { reject(p, "hello for another listener (token mismatch)"); return true; }
    Group* grp = nullptr;
    for (Group& g : groups_) if (g.conn_id == h.conn_id) grp = &g;
    if (!grp) {
      groups_.push_back(Group{h.conn_id, std::vector<Fd>(h.nstreams), 0, p.from, h.subchunk_bytes});
      grp = &groups_.back();
    }
    if (grp->fds.size() != h.nstreams || grp->fds[h.stream].fd >= 0 ||
        grp->subchunk_bytes != h.subchunk_bytes) {
      reject(p, "inconsistent stream numbering");
      return true;
    }
    grp->fds[h.stream] = std::move(p.fd);
    ++grp->count;
    return true;
  }

  Fd lfd_;
  HandleInfo info_;
  int timeout_s_;
  std::string where_;
  std::optional<Clock::time_point> started_;
  std::vector<Pending> pending_;
  std::vector<Group> groups_;
};

// ---------------------------------------------------------------- connector
class TcpConnector final : public transport::Connector {
 public:
  TcpConnector(const HandleInfo& peer, int nstreams, const transport::Config& cfg)
      : timeout_s_(cfg.timeout_s), since_(Clock::now()) {
    std::memset(&addr_, 0, sizeof addr_);
    if (peer.family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr_);
      a->sin_family = AF_INET;
      a->sin_port = htons(peer.port);
      std::memcpy(&a->sin_addr, peer.addr, 4);
      addr_len_ = sizeof(sockaddr_in);
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr_);
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(peer.port);
      std::memcpy(&a->sin6_addr, peer.addr, 16);
      a->sin6_scope_id = peer.scope_id;
      addr_len_ = sizeof(sockaddr_in6);
    }
    where_ = endpoint(addr_);
    uint64_t conn_id = random_u64();
    streams_.resize(size_t(nstreams));
    for (int s = 0; s < nstreams; ++s) {
      Hello h;
      h.wire_version = cfg.fault_wrong_version ? uint16_t(kWireVersion + 1) : kWireVersion;
      h.token = peer.token;
      h.conn_id = conn_id;
      h.stream = uint16_t(s);
      h.nstreams = uint16_t(nstreams);
      h.subchunk_bytes = cfg.subchunk_bytes;
      encode_hello(h, streams_[size_t(s)].hello);
    }
  }

  Poll poll_connect(std::unique_ptr<transport::Link>* out, std::string* err) override {
    bool all_done = true;
    for (Stream& s : streams_) {
      if (!step(s, err)) return Poll::failed;
      all_done &= s.stage == Stage::done;
    }
    if (all_done) {
      std::vector<int> fds;
      for (Stream& s : streams_) fds.push_back(s.fd.release());
      *out = std::make_unique<TcpLink>(std::move(fds), timeout_s_, where_);
      return Poll::ready;
    }
    if (expired(since_, timeout_s_)) {
      *err = "connecting to " + where_ + " did not complete within " + std::to_string(timeout_s_) +
             " s (ZIPNET_TIMEOUT)";
      return Poll::failed;
    }
    return Poll::pending;
  }

 private:
  enum class Stage { start, connecting, hello, done };
  struct Stream {
    Fd fd;
    Stage stage = Stage::start;
    uint8_t hello[kHelloSize];
    size_t sent = 0;
  };

  bool step(Stream& s, std::string* err) {
    if (s.stage == Stage::start) {
      s.fd = Fd(::socket(addr_.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (s.fd.fd < 0) { *err = std::string("socket: ") + std::strerror(errno); return false; }
      int r = ::connect(s.fd.fd, reinterpret_cast<sockaddr*>(&addr_), addr_len_);
      if (r != 0 && errno != EINPROGRESS) {
        *err = "connect to " + where_ + ": " + std::strerror(errno);
        return false;
      }
      s.stage = r == 0 ? Stage::hello : Stage::connecting;
    }
    if (s.stage == Stage::connecting) {
      pollfd p{s.fd.fd, POLLOUT, 0};
      if (::poll(&p, 1, 0) <= 0) return true;
      int soerr = 0;
      socklen_t len = sizeof soerr;
      getsockopt(s.fd.fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
      if (soerr != 0) { *err = "connect to " + where_ + ": " + std::strerror(soerr); return false; }
      s.stage = Stage::hello;
    }
    if (s.stage == Stage::hello) {
      ssize_t r = ::send(s.fd.fd, s.hello + s.sent, kHelloSize - s.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (r > 0) s.sent += size_t(r);
      else if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        *err = "sending hello to " + where_ + ": " + std::strerror(errno);
        return false;
      }
      if (s.sent == kHelloSize) s.stage = Stage::done;
    }
    return true;
  }

  int timeout_s_;
  Clock::time_point since_;
  sockaddr_storage addr_{};
  socklen_t addr_len_ = 0;
  std::string where_;
  std::vector<Stream> streams_;
};

// ---------------------------------------------------------------- transport
class TcpTransport final : public transport::Transport {
 public:
  TcpTransport(std::vector<Interface> itfs, const transport::Config& cfg) : itfs_(std::move(itfs)), cfg_(cfg) {
    for (const Interface& i : itfs_) devices_.push_back({i.name, i.printable, i.speed_mbps});
  }
  const char* name() const override { return "tcp"; }
  int device_count() const override { return int(devices_.size()); }
  const transport::DeviceInfo& device(int dev) const override { return devices_[size_t(dev)]; }

  std::unique_ptr<transport::Listener> listen(int dev, void* handle, std::string* err) override {
    const Interface& itf = itfs_[size_t(dev)];
    Fd lfd(::socket(itf.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (lfd.fd < 0) { *err = std::string("socket: ") + std::strerror(errno); return nullptr; }
    sockaddr_storage ss = itf.addr;
    int first = cfg_.port_lo, last = cfg_.port_lo ? cfg_.port_hi : 0;
    bool bound = false;
    for (int port = first; port <= last && !bound; ++port) {
      if (ss.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(uint16_t(port));
      else reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(uint16_t(port));
      bound = ::bind(lfd.fd, reinterpret_cast<sockaddr*>(&ss), itf.addr_len) == 0;
    }
    if (!bound || ::listen(lfd.fd, 128) != 0) {
      *err = "cannot listen on " + itf.name + " (" + itf.printable + ") port range " +
             (cfg_.port_lo ? std::to_string(first) + "-" + std::to_string(last) : "any") + ": " +
             std::strerror(errno);
      return nullptr;
    }
    socklen_t len = sizeof ss;
    getsockname(lfd.fd, reinterpret_cast<sockaddr*>(&ss), &len);
    HandleInfo h;
    h.wire_version = cfg_.fault_wrong_version ? uint16_t(kWireVersion + 1) : kWireVersion;
    h.token = random_u64();
    h.family = ss.ss_family;
    if (ss.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      h.port = ntohs(a->sin_port);
      std::memcpy(h.addr, &a->sin_addr, 4);
    } else {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      h.port = ntohs(a->sin6_port);
      std::memcpy(h.addr, &a->sin6_addr, 16);
      h.scope_id = a->sin6_scope_id;
    }
    encode_handle(h, static_cast<uint8_t*>(handle));
    return std::make_unique<TcpListener>(std::move(lfd), h, cfg_.timeout_s, endpoint(ss));
  }

  std::unique_ptr<transport::Connector> connect(int, const void* handle, std::string* err) override {
    HandleInfo peer;
    uint16_t peer_version = 0;
    ParseError e = parse_handle(static_cast<const uint8_t*>(handle), kHandleSize, &peer, &peer_version);
    if (e == ParseError::bad_version) {
      *err = "the peer's connect handle carries zipnet wire version " + std::to_string(peer_version) +
             ", this side speaks version " + std::to_string(kWireVersion) +
             "; run the same zipnet build on every node";
      return nullptr;
    }
    if (e != ParseError::none) {
      *err = std::string("invalid connect handle: ") + to_string(e);
      return nullptr;
    }
    return std::make_unique<TcpConnector>(peer, cfg_.streams, cfg_);
  }

 private:
  std::vector<Interface> itfs_;
  std::vector<transport::DeviceInfo> devices_;
  transport::Config cfg_;
};

}  // namespace
}  // namespace zipnet::tcp

namespace zipnet::transport {

std::unique_ptr<Transport> make_tcp_transport(const Config& cfg, std::string* err) {
  auto itfs = tcp::find_interfaces(cfg.ifname, 8);
  if (itfs.empty()) {
    *err = cfg.ifname.empty() ? "no usable network interface is up"
                              : "no up interface matches ZIPNET_SOCKET_IFNAME='" + cfg.ifname + "'";
    return nullptr;
  }
  return std::make_unique<tcp::TcpTransport>(std::move(itfs), cfg);
}

}  // namespace zipnet::transport
