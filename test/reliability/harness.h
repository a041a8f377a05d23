// Test harness for the reliability and soak suites, on top of the conformance driver's plugin
// wrapper (tools/zipperf/plugin_api.h) and logger (nccl_logger.h).
//
// Fault tests run the plugin under test in this process and its peer in a forked child, so the
// peer can be killed, reset or replaced by a raw socket. Every wait is bounded: a Watchdog ends the
// process with a message naming the step that hung, so a hang is a clear failure and not a CI timeout.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl_logger.h"
#include "plugin_api.h"

namespace rel {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0);

// The built plugin: $ZIPNET_TEST_PLUGIN (meson sets it to the build's libnccl-net-zipnet.so).
std::string plugin_path();
// The ZIPNET_TIMEOUT the tests give the plugin (seconds); faults must surface well within it.
constexpr int kPluginTimeoutS = 5;
// The bound a test allows for a fault to surface: the plugin's timeout plus scheduling slack on a
// shared 2-core machine.
constexpr double kDetectBoundS = kPluginTimeoutS + 3.0;

// Sets the ZIPNET_* variables tests rely on (ZIPNET_TIMEOUT, loopback interface) plus `extra`
// ("NAME=value" each). Call before the plugin's first init in this process.
void set_test_env(const std::vector<std::string>& extra = {});

// Ends the whole process with exit code 3 and "HANG: <what>" if not disarmed within `seconds`.
class Watchdog {
 public:
  Watchdog(double seconds, std::string what);
  ~Watchdog();
  void step(std::string what);  // names the step that is running, for the message
 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string what_;
  std::thread thread_;
};

// One opened plugin with one initialised context (one "communicator" in NCCL terms).
struct Net {
  std::unique_ptr<zipperf::Plugin> plugin;
  void* ctx = nullptr;
  ncclResult_t init_result = ncclInternalError;
  // Opens the plugin at plugin_path() with `abi` and calls init; check init_result.
  static Net open(zipperf::Abi abi = zipperf::Abi::Auto, uint64_t comm_id = 1);
  ~Net();  // finalize (if initialised), then dlclose
  Net() = default;
  Net(Net&& o) noexcept;
  Net& operator=(Net&&) = delete;
  zipperf::Plugin& operator*() { return *plugin; }
  zipperf::Plugin* operator->() { return plugin.get(); }
};

// A message channel between the test process and its forked peer (a socketpair): length-prefixed
// byte strings, every receive bounded by a timeout.
class Channel {
 public:
  explicit Channel(int fd = -1) : fd_(fd) {}
  ~Channel();
  Channel(Channel&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Channel& operator=(Channel&& o) noexcept;
  bool send(const std::string& msg);
  // False on timeout, EOF or error.
  bool recv(std::string* msg, double timeout_s);
  int fd() const { return fd_; }

 private:
  int fd_;
};

// A forked peer process running `body(channel)`; its return value is the exit code (_exit, so no
// static destructors or Catch2 teardown run in the child).
class Peer {
 public:
  static Peer spawn(const std::function<int(Channel&)>& body);
  ~Peer();  // SIGKILLs and reaps the child if it is still running
  Peer(Peer&& o) noexcept;
  Channel& channel() { return channel_; }
  pid_t pid() const { return pid_; }
  void kill(int sig);
  // Waits up to timeout_s; returns the exit code, 128+signal if killed, or -1 on timeout.
  int wait(double timeout_s);

 private:
  Peer() = default;
  pid_t pid_ = -1;
  Channel channel_;
};

// Polls connect (sender) or accept (receiver) until the comm is ready, an error is returned, or the
// deadline passes (then ncclTimeout). Returns the last result.
ncclResult_t poll_connect(zipperf::Plugin& p, void* ctx, void* handle, void** send_comm, double timeout_s);
ncclResult_t poll_accept(zipperf::Plugin& p, void* listen_comm, void** recv_comm, double timeout_s);

// What test() said about one request.
struct Completion {
  ncclResult_t result = ncclSuccess;  // the first non-success result, or ncclTimeout if still pending
  bool done = false;
  int size = -1;
  double seconds = 0;  // from the first test() call to the outcome
};
// Calls test() until done, an error, or timeout_s.
Completion wait_request(zipperf::Plugin& p, void* request, double timeout_s);

// Posting that NCCL retries while the plugin answers with a NULL request (back-pressure).
ncclResult_t post_isend(zipperf::Plugin& p, void* comm, void* data, size_t size, int tag, void* mh,
                        void** request, double timeout_s);
ncclResult_t post_irecv(zipperf::Plugin& p, void* comm, void* data, size_t size, int tag, void* mh,
                        void** request, double timeout_s);

// Deterministic message contents, so the receiver can check every byte without being sent a copy.
// Compressible: a slice of the shipped bf16 gradients; incompressible: xorshift bytes.
enum class Content { tensor, random };
void fill_message(uint8_t* dst, size_t n, Content c, uint64_t seq);
// Reads a file from test/data/tensors (ZIPNET_TEST_DATA_DIR); empty if missing.
const std::vector<uint8_t>& tensor_bytes();

// Both ends of one connection in this process (listen/connect/accept as NCCL's proxy does).
struct LocalPair {
  void* send_comm = nullptr;
  void* recv_comm = nullptr;
};
ncclResult_t connect_local(zipperf::Plugin& p, void* send_ctx, void* recv_ctx, LocalPair* out, double timeout_s);

// Process resource counts used to show that nothing leaks across cycles.
size_t rss_bytes();
int open_fd_count();
int thread_count();

// Warnings captured from the plugin's logger since the last clear, joined by newlines.
std::string warnings_text();

}  // namespace rel
