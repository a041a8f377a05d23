#include "plugin/tests/test_util.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>

namespace zipnet::test {

std::mutex& log_mu() {
  static std::mutex mu;
  return mu;
}
std::vector<Logged>& logged() {
  static std::vector<Logged> v;
  return v;
}

void record_log(ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (std::getenv("ZIPNET_TEST_VERBOSE")) std::fprintf(stderr, "[%d] %s\n", int(level), buf);
  std::lock_guard<std::mutex> lk(log_mu());
  logged().push_back({level, buf});
}

bool log_contains(ncclDebugLogLevel level, const std::string& needle) {
  std::lock_guard<std::mutex> lk(log_mu());
  for (const Logged& l : logged())
    if (l.level == level && l.text.find(needle) != std::string::npos) return true;
  return false;
}

void clear_log() {
  std::lock_guard<std::mutex> lk(log_mu());
  logged().clear();
}

Env::Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
  for (auto& [k, v] : vars) {
    if (const char* old = std::getenv(k)) saved_.emplace_back(k, old);
    else unset_.push_back(k);
    if (v) setenv(k, v, 1);
    else unsetenv(k);
  }
}
Env::~Env() {
  for (auto& [k, v] : saved_) setenv(k.c_str(), v.c_str(), 1);
  for (auto& k : unset_) unsetenv(k.c_str());
}

Pair::Pair(bool connect_now) {
  setup_error = api::init(&ctx, 1, nullptr, record_log, 12);
  if (setup_error != ncclSuccess) return;
  setup_error = api::listen(ctx, 0, handle, &listen);
  if (setup_error != ncclSuccess) return;
  if (connect_now) setup_error = connect_accept();
}

ncclResult_t Pair::connect_accept(double timeout_s) {
  auto t0 = std::chrono::steady_clock::now();
  while (!send || !recv) {
    if (!send) {
      ncclResult_t r = api::connect(ctx, 0, handle, &send, nullptr);
      if (r != ncclSuccess) return r;
    }
    if (!recv) {
      ncclResult_t r = api::accept(listen, &recv, nullptr);
      if (r != ncclSuccess) return r;
    }
    if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(timeout_s)) return ncclTimeout;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return ncclSuccess;
}

Pair::~Pair() {
  if (send) api::close_send(send);
  if (recv) api::close_recv(recv);
  if (listen) api::close_listen(listen);
  if (ctx) api::finalize(ctx);
}

ncclResult_t wait_done(void* request, int* size, double timeout_s) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    ncclResult_t r = api::test(request, &done, size);
    if (r != ncclSuccess) return r;
    if (done) return ncclSuccess;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(timeout_s)) return ncclTimeout;
    std::this_thread::yield();
  }
}

std::vector<uint8_t> read_tensor(const std::string& name) {
  std::ifstream f(std::string(ZIPNET_TEST_DATA_DIR) + "/tensors/" + name, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

}  // namespace zipnet::test
