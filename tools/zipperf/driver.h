// zipperf's driver: loads a NCCL net plugin and drives it exactly as NCCL's proxy does.
//
//   listen -> handle out of band -> poll connect/accept until both comms exist -> closeListen ->
//   regMr (host memory) -> isend/irecv/test with N in flight (engine.h) -> deregMr ->
//   closeSend/closeRecv -> finalize
//
// run_pair() does it between two forked processes (optionally each in its own network namespace),
// with ZIPNET_* settings applied in both before the plugin is loaded, so params that are read once
// per process still differ between runs. LocalPair does it inside one process, on one thread,
// the way NCCL's service thread connects two local comms; tests use it to call single ABI functions.
// Both are reused by the Catch2 suites in test/plugin and test/reliability.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine.h"
#include "nccl_logger.h"
#include "payload.h"
#include "plugin_api.h"

namespace zipperf {

// Variables to set (value) or unset (nullopt) before the plugin is loaded.
using EnvList = std::vector<std::pair<std::string, std::optional<std::string>>>;

// Polls connect and accept alternately until both comms are non-NULL, as NCCL's service thread does
// for two local ranks (either may be NULL to poll only one side). Empty on success. The device
// handles must come back NULL (no offload).
std::string connect_and_accept(Plugin& plugin, void* send_ctx, int dev, void* handle, void** send_comm,
                               void* listen_comm, void** recv_comm, Clock::time_point deadline);

// Steps the engines (either may be NULL) until both are done, one fails, or the deadline passes.
// Yields the CPU when nothing moved, as the proxy thread does when idle. Empty on success.
std::string drive(Engine* a, Engine* b, Clock::time_point deadline);
// The same for any number of engines (one per connection), stepped round-robin.
std::string drive_all(std::span<Engine* const> engines, Clock::time_point deadline);

enum class Mode { Bandwidth, Latency };

struct RunConfig {
  std::string plugin_path;
  Abi abi = Abi::Auto;
  int dev = 0;
  EnvList env;                     // applied in both processes before dlopen
  std::string netns_sender;        // network namespace names (ip netns); empty = this one
  std::string netns_receiver;
  TransferSpec spec;
  uint64_t warmup = 0;             // messages before the timed ones
  uint64_t iters = 100;            // timed messages
  Mode mode = Mode::Bandwidth;     // Latency: one message at a time, one-way time on a shared clock
  bool isend_before_irecv = false; // the sender posts what it can before the receiver posts anything
  int conns = 1;                   // connections between the two ends (NCCL: one per channel), each
                                   // moving `iters` messages; Bandwidth mode only
  double timeout_s = 60;           // bound on the whole run; each wait inside is bounded by it too
  uint64_t comm_id = 0x7a69706e6574ull;
};

struct SideReport {
  bool ok = false;
  std::string error;
  int abi = 0;
  std::string plugin_name;
  uint64_t messages = 0;
  uint64_t bytes = 0;
  uint64_t bytes_verified = 0;
  uint64_t null_requests = 0;
  double seconds = 0;
  std::vector<double> latencies_us;  // Latency mode, receiver: one-way time per timed message
  std::vector<std::string> warnings; // WARN lines the plugin logged in that process
  int64_t failed_at_ns = 0;          // steady-clock time of the failure, 0 if none was reported
};

struct RunReport {
  bool ok = false;
  std::string error;  // the first failure of either end, or of the run (timeout, crash)
  SideReport sender, receiver;
  double gbps() const;           // payload Gbit/s at the receiver over the timed messages
  double median_latency_us() const;
  uint64_t bytes_verified() const { return receiver.bytes_verified; }
};

RunReport run_pair(const RunConfig& config, const Payload& payload);

// Runs fn in a forked child with env applied (for tests of things read once per process, such as
// init with ZIPNET_ENABLE=0). A crash, a hang past timeout_s or an exception is reported as an error.
struct ChildOutcome {
  bool ok = false;
  std::string error;
  nlohmann::json value;
  std::vector<std::string> warnings;
};
ChildOutcome run_in_child(const EnvList& env, double timeout_s, const std::function<nlohmann::json()>& fn);

// Both ends of one connection in this process: two init contexts (like two communicators), a
// listen/connect/accept handshake, and the comms ready for regMr/isend/irecv.
class LocalPair {
 public:
  // Returns nullptr and sets *error when the plugin cannot be loaded or connected.
  static std::unique_ptr<LocalPair> create(const std::string& plugin_path, Abi abi, double timeout_s,
                                           std::string* error);
  ~LocalPair();  // close() if not done yet
  Plugin& plugin() { return *plugin_; }
  void* send_comm() { return send_comm_; }
  void* recv_comm() { return recv_comm_; }
  void* send_ctx() { return send_ctx_; }
  void* recv_ctx() { return recv_ctx_; }
  // Moves count messages through a SendEngine and a RecvEngine stepped alternately. Empty on success.
  std::string transfer(const TransferSpec& spec, const Payload& payload, uint64_t count, double timeout_s,
                       bool isend_before_irecv = false, uint64_t* bytes_verified = nullptr);
  // closeSend, closeRecv, finalize both contexts; empty on success.
  std::string close();

 private:
  LocalPair() = default;
  std::unique_ptr<Plugin> plugin_;
  void* send_ctx_ = nullptr;
  void* recv_ctx_ = nullptr;
  void* send_comm_ = nullptr;
  void* recv_comm_ = nullptr;
  bool closed_ = false;
};

// Default plugin path: libnccl-net-zipnet.so next to zipperf in the build tree.
std::string default_plugin_path(const char* argv0);

}  // namespace zipperf
