// Faults of the peer connection: the peer process killed mid-transfer, and the connection reset
// (RST), and the peer's host vanishing (no FIN or RST: its link goes down), each seen from the
// receiving and from the sending side; a peer that closes one stream of a connection and keeps the
// others open. The plugin must return an error
// from test()/isend()/irecv() within ZIPNET_TIMEOUT, name the problem in a WARN, and never report a
// message done with wrong bytes.
#include <signal.h>

#include <catch2/catch.hpp>
#include <regex>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>
#include <utility>

#include "netns.h"
#include "roles.h"
#include "sockets.h"

using namespace rel;

namespace {

const std::regex kPeerWords("peer|connection|closed|reset|remote|eof|broken", std::regex::icase);

void check_peer_fault(const char* name, const StreamResult& r, double detect_s, uint64_t min_completed) {
  record(name, r, detect_s);
  INFO("result " << zipperf::result_name(r.result) << " at " << r.step << ", detected after " << detect_s
                 << " s\nwarnings:\n" << warnings_text());
  CHECK(r.corrupted == 0);
  CHECK(r.completed >= min_completed);
  CHECK(is_peer_error(r.result));
  CHECK(detect_s < kDetectBoundS);
  CHECK(r.close_seconds < kDetectBoundS);  // closing the failed comm does not hang either
  CHECK(std::regex_search(warnings_text(), kPeerWords));
}

// Runs this end of the stream against `peer` (receiving from a sender, or sending to a receiver),
// expecting more messages than the peer handles. The peer reports right before its fault, and
// `on_report` (if any) then runs here: that report's arrival times the fault. Returns what this end
// saw and the seconds from the report to the error.
std::pair<StreamResult, double> run_until_fault(Peer& peer, bool receive, const std::string& what,
                                                const std::function<void()>& on_report = {}) {
  set_test_env();
  Net net = Net::open();
  REQUIRE(net.init_result == ncclSuccess);
  void* comm = nullptr;
  REQUIRE((receive ? accept_from(net, peer, &comm) : connect_to(net, peer, &comm)) == ncclSuccess);
  Watchdog wd(30, what);
  Clock::time_point fault_at{};
  std::thread watcher([&] {
    peer_report(peer, 30);
    if (on_report) on_report();
    fault_at = Clock::now();
  });
  StreamSpec spec;  // expects more than the peer will handle
  const StreamResult r = receive ? stream_recv(*net, comm, spec) : stream_send(*net, comm, spec);
  watcher.join();
  return {r, std::chrono::duration<double>(r.end - fault_at).count()};
}

}  // namespace

TEST_CASE("a sender killed mid-transfer fails the receiver's requests", "[peer_killed][recv]") {
  StreamSpec spec;  // 1 MiB compressible messages, 8 in flight, until the kill
  Peer peer = spawn_sender(spec);
  set_test_env();
  Net net = Net::open();
  REQUIRE(net.init_result == ncclSuccess);
  void* recv_comm = nullptr;
  REQUIRE(accept_from(net, peer, &recv_comm) == ncclSuccess);

  Watchdog wd(30, "receiving from a sender that gets killed");
  Clock::time_point killed{};
  spec.on_complete = [&](uint64_t n) {
    if (n == 24) peer.kill(SIGKILL), killed = Clock::now();
  };
  const StreamResult r = stream_recv(*net, recv_comm, spec);
  if (killed == Clock::time_point{})
    FAIL("the stream ended (" << zipperf::result_name(r.result) << " at " << r.step << " after " << r.completed
                              << " messages) before the peer was killed\nwarnings:\n" << warnings_text());
  check_peer_fault("sender killed (SIGKILL), receiver side", r, std::chrono::duration<double>(r.end - killed).count(), 24);
}

TEST_CASE("a receiver killed mid-transfer fails the sender's requests", "[peer_killed][send]") {
  StreamSpec spec;
  Peer peer = spawn_receiver(spec);
  set_test_env();
  Net net = Net::open();
  REQUIRE(net.init_result == ncclSuccess);
  void* send_comm = nullptr;
  REQUIRE(connect_to(net, peer, &send_comm) == ncclSuccess);

  Watchdog wd(30, "sending to a receiver that gets killed");
  Clock::time_point killed{};
  spec.on_complete = [&](uint64_t n) {
    if (n == 24) peer.kill(SIGKILL), killed = Clock::now();
  };
  const StreamResult r = stream_send(*net, send_comm, spec);
  if (killed == Clock::time_point{})
    FAIL("the stream ended (" << zipperf::result_name(r.result) << " at " << r.step << " after " << r.completed
                              << " messages) before the peer was killed\nwarnings:\n" << warnings_text());
  check_peer_fault("receiver killed (SIGKILL), sender side", r, std::chrono::duration<double>(r.end - killed).count(), 24);
}

TEST_CASE("a connection reset by the sender fails the receiver's requests", "[reset][recv]") {
  StreamSpec peer_spec;
  peer_spec.count = 16;
  // After 16 messages the peer arms SO_LINGER {1,0} on its TCP sockets and exits: the kernel resets
  // every stream of the connection.
  Peer peer = spawn_sender(peer_spec, {}, [] {
    arm_reset_on_close();
    _exit(0);
  });
  const auto [r, detect] = run_until_fault(peer, true, "receiving from a sender whose connection is reset");
  CHECK(peer.wait(10) == 0);
  // A reset discards what the peer had not yet put on the wire, so fewer than 16 may arrive.
  CHECK(r.completed <= 16);
  check_peer_fault("connection reset (RST from sender), receiver side", r, detect, 0);
}

TEST_CASE("a connection reset by the receiver fails the sender's requests", "[reset][send]") {
  StreamSpec peer_spec;
  peer_spec.count = 16;
  Peer peer = spawn_receiver(peer_spec, {}, [] {
    arm_reset_on_close();
    _exit(0);
  });
  const auto [r, detect] = run_until_fault(peer, false, "sending to a receiver whose connection is reset");
  CHECK(peer.wait(10) == 0);
  check_peer_fault("connection reset (RST from receiver), sender side", r, detect, 16);
}

TEST_CASE("a sender that closes one stream and keeps the others open fails the receiver's requests",
          "[half_closed]") {
  StreamSpec peer_spec;
  peer_spec.count = 16;
  // After 16 messages the peer sends FIN on one of its TCP streams, keeps the rest open and sends
  // nothing more. No close of a real peer looks like this, and the receiver must not wait forever.
  Peer peer = spawn_sender(peer_spec, {}, [] {
    if (!half_close_one_socket()) _exit(3);
    std::this_thread::sleep_for(std::chrono::seconds(60));  // killed by the test before this ends
    _exit(0);
  });
  const auto [r, detect] =
      run_until_fault(peer, true, "receiving from a sender that closed one stream and kept the others open");
  CHECK(r.completed == 16);
  check_peer_fault("one stream closed, the others kept open and silent (receiver side)", r, detect, 16);
  CHECK(std::regex_search(warnings_text(), std::regex("closed 1 of the connection's 2 streams")));
}

namespace {

// The peer's host vanishes after 16 messages: its end of a veth pair between two network
// namespaces goes down, so it sends neither FIN nor RST, like a host that lost power. TCP
// keepalive (an idle receive) and TCP_USER_TIMEOUT with the plugin's write-progress check (a
// send), all from ZIPNET_TIMEOUT, must turn that into an error.
void vanished_host(bool receive) {
  const std::string why = zipperf::NetnsPair::unavailable_reason();
  if (!why.empty()) {
    std::printf("SKIP: a vanished host needs two network namespaces here: %s\n", why.c_str());
    std::fflush(stdout);
    std::_Exit(77);  // meson: SKIP
  }
  std::string err;
  const auto ns = zipperf::NetnsPair::create("10gbit", &err);
  REQUIRE(ns);
  INFO(err);
  setenv("ZIPNET_SOCKET_IFNAME", zipperf::NetnsPair::ifname(), 1);  // the veth, in both processes
  const int peer_side = receive ? 0 : 1;
  StreamSpec peer_spec;
  peer_spec.count = 16;
  auto linger = [] {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // killed by the test before this ends
    _exit(0);
  };
  // Forked while this thread is in the peer's namespace, the peer lives there; then this thread
  // moves to the other one.
  REQUIRE(zipperf::NetnsPair::enter(peer_side == 0 ? ns->sender_ns() : ns->receiver_ns()).empty());
  Peer peer = receive ? spawn_sender(peer_spec, {}, linger) : spawn_receiver(peer_spec, {}, linger);
  REQUIRE(zipperf::NetnsPair::enter(peer_side == 0 ? ns->receiver_ns() : ns->sender_ns()).empty());
  std::string down_error;
  const auto [r, detect] =
      run_until_fault(peer, receive, receive ? "receiving from a host that vanishes" : "sending to a host that vanishes",
                      [&] { down_error = ns->set_link(peer_side, false); });
  REQUIRE(down_error.empty());
  if (receive) CHECK(r.completed <= 16);
  check_peer_fault(receive ? "peer host vanished (no FIN/RST), receiver side" : "peer host vanished (no FIN/RST), sender side",
                   r, detect, receive ? 0 : 16);
}

}  // namespace

TEST_CASE("a sending host that vanishes fails the receiver's requests within ZIPNET_TIMEOUT", "[vanished][recv]") {
  vanished_host(true);
}

TEST_CASE("a receiving host that vanishes fails the sender's requests within ZIPNET_TIMEOUT", "[vanished][send]") {
  vanished_host(false);
}

TEST_CASE("a sender that closes right after its last send completes loses nothing", "[close][graceful]") {
  // NCCL may destroy the sending rank's comm as soon as its last isend is done, while the
  // receiving rank is still receiving: everything the sender was told is sent must arrive.
  // 4 KiB messages: all 40 fit in the socket buffers, so the receiver starts only once the sender
  // has closed and exited. 1 MiB messages: the receiver runs alongside but slower, so the sender
  // closes with megabytes still on their way.
  for (size_t size : {size_t(4096), size_t(1) << 20}) {
    const bool after_exit = size == 4096;
    StreamSpec spec;
    spec.size = size;
    spec.count = 40;
    Peer peer = spawn_sender(spec);  // closes its comm and exits after the 40th completion
    set_test_env();
    Net net = Net::open();
    REQUIRE(net.init_result == ncclSuccess);
    void* recv_comm = nullptr;
    REQUIRE(accept_from(net, peer, &recv_comm) == ncclSuccess);
    Watchdog wd(30, "receiving from a sender that closes when done");
    std::string report;
    if (after_exit) {
      report = peer_report(peer, 20);
      CHECK(peer.wait(20) == 0);
    } else {
      spec.on_complete = [](uint64_t) { std::this_thread::sleep_for(std::chrono::milliseconds(3)); };
    }
    const StreamResult r = stream_recv(*net, recv_comm, spec);
    if (!after_exit) {
      report = peer_report(peer, 20);
      CHECK(peer.wait(20) == 0);
    }
    INFO("message size " << size << ": sender reported '" << report << "'; receiver " << zipperf::result_name(r.result)
                         << " at " << r.step << " after " << r.completed << " messages\nwarnings:\n"
                         << warnings_text());
    REQUIRE(report == "ncclSuccess - 40 0");  // the sender was told all 40 were sent
    CHECK(r.result == ncclSuccess);
    CHECK(r.completed == 40);
    CHECK(r.corrupted == 0);
    zipperf::clear_captured_log();
  }
}
