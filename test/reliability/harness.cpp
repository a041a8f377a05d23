#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace rel {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string plugin_path() {
  const char* p = std::getenv("ZIPNET_TEST_PLUGIN");
  return p ? p : "";
}

void set_test_env(const std::vector<std::string>& extra) {
  setenv("ZIPNET_TIMEOUT", std::to_string(kPluginTimeoutS).c_str(), 1);
  setenv("ZIPNET_SOCKET_IFNAME", "lo", 0);
  for (const std::string& kv : extra) {
    const size_t eq = kv.find('=');
    setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }
}

// ---- Watchdog ---------------------------------------------------------------------------------

Watchdog::Watchdog(double seconds, std::string what) : what_(std::move(what)) {
  thread_ = std::thread([this, seconds] {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; })) {
      std::fprintf(stderr, "HANG: no progress within %.0f s in step: %s\n", seconds, what_.c_str());
      std::fflush(stderr);
      _exit(3);
    }
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::step(std::string what) {
  std::lock_guard<std::mutex> lock(mu_);
  what_ = std::move(what);
}

// ---- Net --------------------------------------------------------------------------------------

Net Net::open(zipperf::Abi abi, uint64_t comm_id) {
  Net n;
  std::string error;
  n.plugin = zipperf::Plugin::open(plugin_path(), abi, &error);
  if (!n.plugin) {
    std::fprintf(stderr, "cannot open plugin '%s': %s\n", plugin_path().c_str(), error.c_str());
    return n;
  }
  n.init_result = n.plugin->init(&n.ctx, comm_id, NCCL_NET_TRAFFIC_CLASS_UNDEF, zipperf::nccl_logger());
  if (n.init_result != ncclSuccess) n.ctx = nullptr;
  return n;
}

Net::Net(Net&& o) noexcept : plugin(std::move(o.plugin)), ctx(o.ctx), init_result(o.init_result) {
  o.ctx = nullptr;
}

Net::~Net() {
  if (plugin && init_result == ncclSuccess) plugin->finalize(ctx);
}

// ---- Channel ----------------------------------------------------------------------------------

Channel::~Channel() {
  if (fd_ >= 0) ::close(fd_);
}

Channel& Channel::operator=(Channel&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

namespace {

bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w, n -= size_t(w);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n, Clock::time_point deadline) {
  char* c = static_cast<char*>(p);
  while (n) {
    const int left_ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left_ms <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    const int r = ::poll(&pfd, 1, left_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    const ssize_t got = ::recv(fd, c, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    c += got, n -= size_t(got);
  }
  return true;
}

}  // namespace

bool Channel::send(const std::string& msg) {
  const uint32_t len = uint32_t(msg.size());
  return write_all(fd_, &len, 4) && write_all(fd_, msg.data(), msg.size());
}

bool Channel::recv(std::string* msg, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  uint32_t len = 0;
  if (!read_all(fd_, &len, 4, deadline) || len > (64u << 20)) return false;
  msg->resize(len);
  return read_all(fd_, msg->data(), len, deadline);
}

// ---- Peer -------------------------------------------------------------------------------------

Peer Peer::spawn(const std::function<int(Channel&)>& body) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    std::perror("socketpair");
    std::abort();
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::abort();
  }
  if (pid == 0) {
    ::close(sv[0]);
    Channel ch(sv[1]);
    const int code = body(ch);
    std::fflush(nullptr);
    _exit(code);
  }
  ::close(sv[1]);
  Peer p;
  p.pid_ = pid;
  p.channel_ = Channel(sv[0]);
  return p;
}

Peer::Peer(Peer&& o) noexcept : pid_(o.pid_), channel_(std::move(o.channel_)) { o.pid_ = -1; }

Peer::~Peer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int st;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }
}

void Peer::kill(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

int Peer::wait(double timeout_s) {
  const auto t0 = Clock::now();
  while (pid_ > 0) {
    int st = 0;
    const pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (seconds_since(t0) > timeout_s) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

// ---- plugin calls -----------------------------------------------------------------------------

ncclResult_t poll_connect(zipperf::Plugin& p, void* ctx, void* handle, void** send_comm, double timeout_s) {
  const auto t0 = Clock::now();
  *send_comm = nullptr;
  for (;;) {
    void* dev_comm = nullptr;
    const ncclResult_t r = p.connect(ctx, 0, handle, send_comm, &dev_comm);
    if (r != ncclSuccess && r != ncclInProgress) return r;
    if (*send_comm) return ncclSuccess;
    if (seconds_since(t0) > timeout_s) return ncclTimeout;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

ncclResult_t poll_accept(zipperf::Plugin& p, void* listen_comm, void** recv_comm, double timeout_s) {
  const auto t0 = Clock::now();
  *recv_comm = nullptr;
  for (;;) {
    void* dev_comm = nullptr;
    const ncclResult_t r = p.accept(listen_comm, recv_comm, &dev_comm);
    if (r != ncclSuccess && r != ncclInProgress) return r;
    if (*recv_comm) return ncclSuccess;
    if (seconds_since(t0) > timeout_s) return ncclTimeout;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

Completion wait_request(zipperf::Plugin& p, void* request, double timeout_s) {
  Completion c;
  const auto t0 = Clock::now();
  for (;;) {
    int done = 0, size = -1;
    const ncclResult_t r = p.test(request, &done, &size);
    c.seconds = seconds_since(t0);
    if (r != ncclSuccess) {
      c.result = r;
      return c;
    }
    if (done) {
      c.done = true;
      c.size = size;
      return c;
    }
    if (c.seconds > timeout_s) {
      c.result = ncclTimeout;
      return c;
    }
    std::this_thread::yield();
  }
}

ncclResult_t post_isend(zipperf::Plugin& p, void* comm, void* data, size_t size, int tag, void* mh,
                        void** request, double timeout_s) {
  const auto t0 = Clock::now();
  for (;;) {
    *request = nullptr;
    const ncclResult_t r = p.isend(comm, data, size, tag, mh, request);
    if (r != ncclSuccess || *request) return r;
    if (seconds_since(t0) > timeout_s) return ncclTimeout;
    std::this_thread::yield();
  }
}

ncclResult_t post_irecv(zipperf::Plugin& p, void* comm, void* data, size_t size, int tag, void* mh,
                        void** request, double timeout_s) {
  const auto t0 = Clock::now();
  for (;;) {
    *request = reinterpret_cast<void*>(0x1);  // NCCL may preset it; the plugin must always write it
    void* bufs[1] = {data};
    size_t sizes[1] = {size};
    int tags[1] = {tag};
    void* mhs[1] = {mh};
    const ncclResult_t r = p.irecv(comm, 1, bufs, sizes, tags, mhs, request);
    if (r != ncclSuccess || *request) return r;
    if (seconds_since(t0) > timeout_s) return ncclTimeout;
    std::this_thread::yield();
  }
}

ncclResult_t connect_local(zipperf::Plugin& p, void* send_ctx, void* recv_ctx, LocalPair* out, double timeout_s) {
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  void* listen_comm = nullptr;
  ncclResult_t r = p.listen(recv_ctx, 0, handle, &listen_comm);
  if (r != ncclSuccess) return r;
  const auto t0 = Clock::now();
  out->send_comm = out->recv_comm = nullptr;
  while (!out->send_comm || !out->recv_comm) {
    void* dev = nullptr;
    if (!out->send_comm) {
      r = p.connect(send_ctx, 0, handle, &out->send_comm, &dev);
      if (r != ncclSuccess) break;
    }
    if (!out->recv_comm) {
      r = p.accept(listen_comm, &out->recv_comm, &dev);
      if (r != ncclSuccess) break;
    }
    if (seconds_since(t0) > timeout_s) {
      r = ncclTimeout;
      break;
    }
    if (!out->send_comm || !out->recv_comm) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  p.close_listen(listen_comm);
  return r;
}

// ---- content ----------------------------------------------------------------------------------

const std::vector<uint8_t>& tensor_bytes() {
  static const std::vector<uint8_t> bytes = [] {
    const char* dir = std::getenv("ZIPNET_TEST_DATA_DIR");
    std::string path = std::string(dir ? dir : ZIPNET_TEST_DATA_DIR) + "/tensors/grads.bf16";
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }();
  return bytes;
}

void fill_message(uint8_t* dst, size_t n, Content c, uint64_t seq) {
  if (c == Content::tensor && !tensor_bytes().empty()) {
    const std::vector<uint8_t>& t = tensor_bytes();
    size_t off = size_t((seq * 2654435761u) % t.size()) & ~size_t(1);
    for (size_t done = 0; done < n;) {
      const size_t k = std::min(n - done, t.size() - off);
      std::memcpy(dst + done, t.data() + off, k);
      done += k;
      off = 0;
    }
    return;
  }
  uint64_t x = seq * 0x9E3779B97F4A7C15ull + 0x1234567;
  for (size_t i = 0; i < n; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(dst + i, &x, std::min<size_t>(8, n - i));
  }
}

// ---- process resources ------------------------------------------------------------------------

size_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  size_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * size_t(sysconf(_SC_PAGESIZE));
}

namespace {
int count_dir(const char* path) {
  DIR* d = opendir(path);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - (std::strcmp(path, "/proc/self/fd") == 0 ? 1 : 0);  // the DIR's own fd
}
}  // namespace

int open_fd_count() { return count_dir("/proc/self/fd"); }
int thread_count() { return count_dir("/proc/self/task"); }

std::string warnings_text() {
  std::string s;
  for (const std::string& w : zipperf::captured_warnings()) s += w + "\n";
  return s;
}

}  // namespace rel
