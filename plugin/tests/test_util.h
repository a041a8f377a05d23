// Helpers for the plugin's own unit tests: a logger that records what the plugin says, env
// overrides that undo themselves, and a two-sided connection driven through the plugin API
// exactly as NCCL's proxy threads drive it (in one process).
#pragma once

#include <cstdarg>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "plugin/api.h"
#include "plugin/log.h"

namespace zipnet::test {

struct Logged {
  ncclDebugLogLevel level;
  std::string text;
};
std::mutex& log_mu();
std::vector<Logged>& logged();
void record_log(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...);
bool log_contains(ncclDebugLogLevel level, const std::string& needle);
void clear_log();

// Sets env vars for one scope, restoring them afterwards.
class Env {
 public:
  Env(std::initializer_list<std::pair<const char*, const char*>> vars);
  ~Env();

 private:
  std::vector<std::pair<std::string, std::string>> saved_;
  std::vector<std::string> unset_;
};

// init + listen + connect/accept over loopback. ok() false if setup failed (see setup_error).
struct Pair {
  void* ctx = nullptr;
  void* listen = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ncclResult_t setup_error = ncclSuccess;
  explicit Pair(bool connect_now = true);
  ~Pair();
  bool ok() const { return send && recv; }
  ncclResult_t connect_accept(double timeout_s = 10);
};

// Polls test() until done or an error; returns the error or ncclSuccess, sets *size.
ncclResult_t wait_done(void* request, int* size, double timeout_s = 20);

std::vector<uint8_t> read_tensor(const std::string& name);

}  // namespace zipnet::test
