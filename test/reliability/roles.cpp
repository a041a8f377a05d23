#include "roles.h"

#include <algorithm>
#include <cstdio>

namespace rel {
namespace {

std::string encode_result(const StreamResult& r) {
  return std::string(zipperf::result_name(r.result)) + " " + (r.step.empty() ? "-" : r.step) + " " +
         std::to_string(r.completed) + " " + std::to_string(r.corrupted);
}

// Runs one end's stream and reports its result to the test. With before_exit, an empty report
// goes out first (the test times the fault from its arrival) and before_exit replaces the close.
template <class Stream>
int stream_and_report(Channel& ch, const StreamSpec& spec, const std::function<void()>& before_exit, Stream stream) {
  StreamSpec with_hook = spec;
  with_hook.before_close = [&] {
    if (before_exit) {
      ch.send(encode_result(StreamResult{}));
      before_exit();
    }
  };
  const StreamResult r = stream(with_hook);
  if (!before_exit) ch.send(encode_result(r));
  return 0;
}

}  // namespace

Peer spawn_sender(const StreamSpec& spec, const std::vector<std::string>& env, std::function<void()> before_exit) {
  return Peer::spawn([=](Channel& ch) {
    zipperf::set_print_level(NCCL_LOG_NONE);
    set_test_env(env);
    Net net = Net::open();
    if (net.init_result != ncclSuccess) return ch.send("init-failed"), 10;
    std::string handle;
    if (!ch.recv(&handle, 30)) return 11;
    handle.resize(NCCL_NET_HANDLE_MAXSIZE);
    void* send_comm = nullptr;
    const ncclResult_t c = poll_connect(*net, net.ctx, handle.data(), &send_comm, 20);
    if (c != ncclSuccess) {
      ch.send(std::string(zipperf::result_name(c)) + " connect 0 0");
      return 12;
    }
    return stream_and_report(ch, spec, before_exit,
                             [&](const StreamSpec& s) { return stream_send(*net, send_comm, s); });
  });
}

Peer spawn_receiver(const StreamSpec& spec, const std::vector<std::string>& env, std::function<void()> before_exit) {
  return Peer::spawn([=](Channel& ch) {
    zipperf::set_print_level(NCCL_LOG_NONE);
    set_test_env(env);
    Net net = Net::open();
    if (net.init_result != ncclSuccess) return ch.send("init-failed"), 10;
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    void* listen_comm = nullptr;
    if (net->listen(net.ctx, 0, handle, &listen_comm) != ncclSuccess) return 11;
    ch.send(std::string(handle, sizeof handle));
    void* recv_comm = nullptr;
    const ncclResult_t a = poll_accept(*net, listen_comm, &recv_comm, 20);
    net->close_listen(listen_comm);
    if (a != ncclSuccess) {
      ch.send(std::string(zipperf::result_name(a)) + " accept 0 0");
      return 12;
    }
    return stream_and_report(ch, spec, before_exit,
                             [&](const StreamSpec& s) { return stream_recv(*net, recv_comm, s); });
  });
}

ncclResult_t accept_from(Net& net, Peer& peer, void** recv_comm, double timeout_s) {
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  void* listen_comm = nullptr;
  ncclResult_t r = net->listen(net.ctx, 0, handle, &listen_comm);
  if (r != ncclSuccess) return r;
  peer.channel().send(std::string(handle, sizeof handle));
  r = poll_accept(*net, listen_comm, recv_comm, timeout_s);
  net->close_listen(listen_comm);
  return r;
}

ncclResult_t connect_to(Net& net, Peer& peer, void** send_comm, double timeout_s) {
  std::string handle;
  if (!peer.channel().recv(&handle, timeout_s)) return ncclTimeout;
  handle.resize(NCCL_NET_HANDLE_MAXSIZE);
  return poll_connect(*net, net.ctx, handle.data(), send_comm, timeout_s);
}

std::string peer_report(Peer& peer, double timeout_s) {
  std::string s;
  peer.channel().recv(&s, timeout_s);
  return s;
}

void record(const std::string& name, const StreamResult& r, double detect_s) {
  // The most telling warning: the last one, not the banner announcing test-only fault injection.
  std::vector<std::string> w;
  for (const std::string& line : zipperf::captured_warnings())
    if (line.find("TEST-ONLY") == std::string::npos) w.insert(w.begin(), line);
  std::printf("FAULT %s: %s at %s after %.3f s; completed %llu, corrupted %llu; WARN: %s\n", name.c_str(),
              zipperf::result_name(r.result), r.step.c_str(), std::max(0.0, detect_s), (unsigned long long)r.completed,
              (unsigned long long)r.corrupted, w.empty() ? "(none)" : w.front().c_str());
  std::fflush(stdout);
}

bool is_peer_error(ncclResult_t r) { return r == ncclRemoteError || r == ncclSystemError; }

}  // namespace rel
