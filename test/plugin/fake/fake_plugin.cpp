// A tiny NCCL net plugin for testing the conformance driver itself: it moves bytes over loopback
// TCP with non-blocking sockets (so both ends can live in one thread or in two processes), and can
// be told to misbehave in the ways a real plugin might (FAKE_NET_BUG), so the tests can check that
// the driver notices each one. Not a model of a good plugin: no threads, no compression.
//
// FAKE_NET_BUG values: none, irecv_no_request, corrupt, wrong_size, send_size, null_requests,
// read_after_done, write_past_end, hang, crash, init_fail, null_listen.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

#include "net_abi.h"

namespace {

ncclDebugLogger_t g_log = nullptr;
std::string g_bug = "none";
int g_inits = 0;
unsigned g_null_toggle = 0;

constexpr uint32_t kMagic = 0xFA4E7001;

struct Handle {
  uint32_t magic;
  uint16_t port;
};

struct Request {
  bool send = true;
  char* data = nullptr;
  size_t size = 0;      // send: bytes to send; recv: posted bytes
  uint64_t header = 0;  // the size on the wire
  size_t header_done = 0;
  size_t body_done = 0;
  bool done = false;
  bool reported = false;  // read_after_done: done was already reported
};

struct Comm {
  int fd = -1;
  std::deque<Request*> queue;  // in posting order; only the front makes progress
};

struct Listen {
  int fd = -1;
};

struct Connecting {
  int fd = -1;
};

bool bug(const char* name) { return g_bug == name; }

void warn(const char* msg) {
  if (g_log) g_log(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, "NET/fake : %s", msg);
}

ncclResult_t fake_init(void** ctx, uint64_t, ncclNetCommConfig_v12_t*, ncclDebugLogger_t log, ncclProfilerCallback_t) {
  g_log = log;
  const char* b = std::getenv("FAKE_NET_BUG");
  g_bug = b ? b : "none";
  if (bug("init_fail")) {
    warn("FAKE_NET_BUG=init_fail: refusing to initialise");
    return ncclInvalidUsage;
  }
  ++g_inits;
  *ctx = &g_inits;
  return ncclSuccess;
}

ncclResult_t fake_devices(int* n) {
  *n = 1;
  return ncclSuccess;
}

template <class P>
ncclResult_t fill_props(int dev, P* p) {
  if (dev != 0) return ncclInvalidArgument;
  std::memset(p, 0, sizeof *p);
  p->name = const_cast<char*>("fake0");
  p->pciPath = nullptr;
  p->guid = 0xFA4E;
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = 10000;
  p->maxComms = 1024;
  p->maxRecvs = 1;
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = 0;
  p->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
  p->maxCollBytes = NCCL_MAX_COLLNET_SIZE_BYTES;
  p->maxMultiRequestSize = 1;
  return ncclSuccess;
}
ncclResult_t fake_props_v11(int dev, ncclNetProperties_v11_t* p) { return fill_props(dev, p); }
ncclResult_t fake_props_v12(int dev, ncclNetProperties_v12_t* p) {
  ncclResult_t r = fill_props(dev, p);
  p->railId = -1;
  p->planeId = -1;
  return r;
}

int nonblocking_socket() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

ncclResult_t fake_listen(void*, int, void* handle, void** listen_comm) {
  if (bug("null_listen")) {
    *listen_comm = nullptr;
    return ncclSuccess;
  }
  int fd = nonblocking_socket();
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    warn("listen failed");
    return ncclSystemError;
  }
  Handle h{kMagic, ntohs(a.sin_port)};
  std::memcpy(handle, &h, sizeof h);
  *listen_comm = new Listen{fd};
  return ncclSuccess;
}

// The handle is writable and comes back on every retry: the pending socket lives after the Handle.
struct ConnectState {
  Handle h;
  int fd;
  int started;
};

ncclResult_t fake_connect(void*, int, void* handle, void** send_comm, ncclNetDeviceHandle_v12_t**) {
  *send_comm = nullptr;
  auto* st = static_cast<ConnectState*>(handle);
  if (st->h.magic != kMagic) {
    warn("connect: bad handle");
    return ncclInvalidArgument;
  }
  if (st->started != 1) {
    st->fd = nonblocking_socket();
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(st->h.port);
    if (::connect(st->fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
      warn("connect failed");
      return ncclSystemError;
    }
    st->started = 1;
  }
  pollfd p{st->fd, POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0) return ncclSuccess;  // not yet: NCCL calls again
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(st->fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    warn("connect failed asynchronously");
    return ncclSystemError;
  }
  *send_comm = new Comm{st->fd, {}};
  st->started = 2;
  return ncclSuccess;
}

ncclResult_t fake_accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v12_t**) {
  *recv_comm = nullptr;
  int fd = accept4(static_cast<Listen*>(listen_comm)->fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? ncclSuccess : ncclSystemError;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *recv_comm = new Comm{fd, {}};
  return ncclSuccess;
}

ncclResult_t fake_regmr(void*, void*, size_t, int type, void** mh) {
  if (type != NCCL_PTR_HOST) return ncclInternalError;
  *mh = reinterpret_cast<void*>(0x4D52);
  return ncclSuccess;
}
ncclResult_t fake_regmr_dmabuf(void*, void*, size_t, int, uint64_t, int, void**) { return ncclInternalError; }
ncclResult_t fake_deregmr(void*, void* mh) { return mh == reinterpret_cast<void*>(0x4D52) ? ncclSuccess : ncclInternalError; }

bool null_now() { return bug("null_requests") && (g_null_toggle++ % 3) != 0; }

ncclResult_t fake_isend(void* comm, void* data, size_t size, int, void*, void*, void** request) {
  *request = nullptr;
  if (null_now()) return ncclSuccess;
  auto* r = new Request;  // read_after_done leaks the ones it reported early: a fake, in a child
  r->send = true;
  r->size = size;
  r->header = size;
  r->data = static_cast<char*>(data);
  static_cast<Comm*>(comm)->queue.push_back(r);
  *request = r;
  return ncclSuccess;
}

ncclResult_t fake_irecv(void* comm, int n, void** data, size_t* sizes, int*, void**, void**, void** request) {
  if (bug("irecv_no_request")) return ncclSuccess;  // the bug: *request left as NCCL preset it
  *request = nullptr;
  if (n != 1) return ncclInternalError;
  if (null_now()) return ncclSuccess;
  auto* r = new Request;
  r->send = false;
  r->data = static_cast<char*>(data[0]);
  r->size = sizes[0];
  static_cast<Comm*>(comm)->queue.push_back(r);
  *request = r;
  return ncclSuccess;
}

ncclResult_t fake_iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;
  return ncclSuccess;
}

// Moves the front request as far as the socket allows; returns false on a socket error.
bool progress(Comm* c, Request* r) {
  while (true) {
    char* hp = reinterpret_cast<char*>(&r->header);
    if (r->header_done < sizeof r->header) {
      ssize_t n = r->send ? ::send(c->fd, hp + r->header_done, sizeof r->header - r->header_done, MSG_NOSIGNAL)
                          : ::recv(c->fd, hp + r->header_done, sizeof r->header - r->header_done, 0);
      if (n == 0 && !r->send) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
      r->header_done += static_cast<size_t>(n);
      if (r->header_done == sizeof r->header && !r->send && r->header > r->size) return false;  // truncated
      continue;
    }
    size_t total = r->header;
    if (r->body_done == total) return true;
    ssize_t n = r->send ? ::send(c->fd, r->data + r->body_done, total - r->body_done, MSG_NOSIGNAL)
                        : ::recv(c->fd, r->data + r->body_done, total - r->body_done, 0);
    if (n == 0 && !r->send) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    r->body_done += static_cast<size_t>(n);
  }
}

Comm* owner_of(Request* r);  // requests remember their comm through this map-free trick below

ncclResult_t fake_test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  *done = 0;
  if (bug("crash")) raise(SIGSEGV);  // what a plugin's bad pointer does, without UB in the fake
  if (bug("hang")) return ncclSuccess;
  if (bug("read_after_done") && r->send && !r->reported) {
    // The bug: report the send done before its bytes left; they are read on a later call (after
    // NCCL has reused the buffer). Earlier sends go out now.
    Comm* c = owner_of(r);
    while (!c->queue.empty() && c->queue.front() != r) {
      Request* front = c->queue.front();
      if (!progress(c, front)) return ncclSystemError;
      if (front->header_done < sizeof front->header || front->body_done < front->header) break;
      c->queue.pop_front();
    }
    r->reported = true;
    *done = 1;
    if (sizes) *sizes = static_cast<int>(r->header);
    return ncclSuccess;
  }
  Comm* c = owner_of(r);
  if (c == nullptr) return ncclInternalError;
  // Progress everything ahead of r, then r itself, in order.
  while (!c->queue.empty()) {
    Request* front = c->queue.front();
    if (!progress(c, front)) {
      warn("connection failed or message truncated");
      return ncclSystemError;
    }
    if (front->header_done < sizeof front->header || front->body_done < front->header) break;
    c->queue.pop_front();
    front->done = true;
    front->header_done = ~size_t{0};  // marks "finished on the wire" for read_after_done
    if (front == r) break;
  }
  bool finished = r->header_done == ~size_t{0};
  if (!finished) return ncclSuccess;
  if (!r->send && bug("corrupt") && r->header > 0) r->data[r->header / 2] ^= 0x10;
  if (!r->send && bug("write_past_end") && r->size > r->header) r->data[r->header] = 0;
  *done = 1;
  if (sizes) {
    *sizes = static_cast<int>(r->header);
    if (bug("wrong_size") && !r->send) *sizes = static_cast<int>(r->size);
    if (bug("send_size") && r->send) *sizes = static_cast<int>(r->header) + 1;
  }
  delete r;
  return ncclSuccess;
}

// Every comm keeps its requests in its queue, so a request's owner is the comm whose queue holds it,
// or (finished) none. The fake tracks live comms in a small list.
std::deque<Comm*> g_comms;
Comm* owner_of(Request* r) {
  for (Comm* c : g_comms)
    for (Request* q : c->queue)
      if (q == r) return c;
  // Not queued any more: finished already (read_after_done sends that completed on the wire).
  static Comm none;
  return &none;
}

ncclResult_t close_comm(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  for (auto it = g_comms.begin(); it != g_comms.end(); ++it)
    if (*it == c) {
      g_comms.erase(it);
      break;
    }
  for (Request* r : c->queue) delete r;
  ::close(c->fd);
  delete c;
  return ncclSuccess;
}
ncclResult_t fake_close_listen(void* l) {
  ::close(static_cast<Listen*>(l)->fd);
  delete static_cast<Listen*>(l);
  return ncclSuccess;
}
ncclResult_t fake_finalize(void* ctx) {
  if (ctx != &g_inits) return ncclInternalError;
  --g_inits;
  return ncclSuccess;
}
ncclResult_t fake_set_attr(void*, ncclNetAttr_v12_t*) { return ncclSuccess; }

// Connect and accept register their comms so test() can find a request's comm.
ncclResult_t connect_tracked(void* ctx, int dev, void* handle, void** send_comm, ncclNetDeviceHandle_v12_t** d) {
  ncclResult_t r = fake_connect(ctx, dev, handle, send_comm, d);
  if (r == ncclSuccess && *send_comm) g_comms.push_back(static_cast<Comm*>(*send_comm));
  return r;
}
ncclResult_t accept_tracked(void* l, void** recv_comm, ncclNetDeviceHandle_v12_t** d) {
  ncclResult_t r = fake_accept(l, recv_comm, d);
  if (r == ncclSuccess && *recv_comm) g_comms.push_back(static_cast<Comm*>(*recv_comm));
  return r;
}

}  // namespace

#define FAKE_TABLE(props)                                                                                        \
  "fake", fake_init, fake_devices, props, fake_listen, connect_tracked, accept_tracked, fake_regmr,              \
      fake_regmr_dmabuf, fake_deregmr, fake_isend, fake_irecv, fake_iflush, fake_test, close_comm, close_comm,  \
      fake_close_listen, nullptr, nullptr, nullptr, fake_finalize, fake_set_attr

extern "C" __attribute__((visibility("default"))) const ncclNet_v12_t ncclNetPlugin_v12 = {FAKE_TABLE(fake_props_v12)};
extern "C" __attribute__((visibility("default"))) const ncclNet_v11_t ncclNetPlugin_v11 = {FAKE_TABLE(fake_props_v11)};
