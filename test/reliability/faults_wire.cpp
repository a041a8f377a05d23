// Faults in what arrives on the wire: a corrupted frame or raw sub-chunk (checksum mismatch), a
// truncated frame (with the connection closed after it, or kept in step), a peer of another wire
// version, and a stray client on the listen port. Corrupt and truncated frames and the version
// mismatch come from the plugin's test-only ZIPNET_FAULT_INJECT in the peer; the stray client is a
// plain socket from this test.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <regex>
#include <thread>

#include "roles.h"
#include "transport/tcp/handshake.h"
#include "sockets.h"

using namespace rel;

namespace {

// The peer sends with `fault` injected; this process receives and must fail, never accept bad bytes.
void receive_injected(const char* name, const char* fault, Content content, const char* words) {
  StreamSpec spec;
  spec.content = content;
  spec.count = 8;
  // ADAPTIVE=0: a short stream must be compressed (the adaptive policy starts raw).
  Peer peer = spawn_sender(spec, {std::string("ZIPNET_FAULT_INJECT=") + fault, "ZIPNET_ADAPTIVE=0"});
  set_test_env();
  Net net = Net::open();
  REQUIRE(net.init_result == ncclSuccess);
  void* recv_comm = nullptr;
  REQUIRE(accept_from(net, peer, &recv_comm) == ncclSuccess);
  Watchdog wd(30, std::string("receiving from a peer injecting ") + fault);
  const auto t0 = Clock::now();
  const StreamResult r = stream_recv(*net, recv_comm, spec);
  const double detect = std::chrono::duration<double>(r.end - t0).count();
  record(name, r, detect);
  INFO("result " << zipperf::result_name(r.result) << " at " << r.step << "\nwarnings:\n" << warnings_text());
  CHECK(r.corrupted == 0);
  CHECK(r.result != ncclSuccess);
  CHECK(r.result != ncclTimeout);  // the plugin must say so itself, not leave the request pending
  CHECK(detect < kDetectBoundS);
  CHECK(r.close_seconds < kDetectBoundS);  // closing the failed comm does not hang either
  CHECK(std::regex_search(warnings_text(), std::regex(words, std::regex::icase)));
}

}  // namespace

TEST_CASE("a corrupted frame is an error, not data", "[corrupt]") {
  receive_injected("corrupted frame (compressed data)", "corrupt_frame", Content::tensor, "checksum|corrupt");
}

TEST_CASE("a corrupted raw sub-chunk is an error, not data", "[corrupt_raw]") {
  // Random bytes do not compress, so every sub-chunk goes raw; the peer flips its last byte.
  receive_injected("corrupted raw sub-chunk", "corrupt_raw", Content::random, "checksum|corrupt");
}

TEST_CASE("a frame shorter than its header says is an error, not data", "[short_frame]") {
  // The chunk header and the bytes sent agree, so the connection stays in step; the frame inside
  // is half of what its own header claims.
  receive_injected("truncated frame (connection stays up)", "short_frame", Content::tensor, "truncated");
}

TEST_CASE("a truncated frame is an error, not data", "[truncated]") {
  // The plugin's injection writes half a frame and closes the connection, so "closed" is the
  // accurate description of what the receiver sees.
  receive_injected("truncated frame", "truncate_frame", Content::tensor, "truncat|short|size|corrupt|closed");
}

namespace {

// One side runs with ZIPNET_FAULT_INJECT=wrong_version; the other must refuse the connection with a
// WARN naming both versions, within the timeout.
void check_version_refused(const char* name, ncclResult_t r, double seconds) {
  StreamResult as_stream;
  as_stream.result = r;
  as_stream.step = "connect/accept";
  record(name, as_stream, seconds);
  INFO("result " << zipperf::result_name(r) << "\nwarnings:\n" << warnings_text());
  CHECK(r != ncclSuccess);
  CHECK(r != ncclTimeout);
  CHECK(seconds < kDetectBoundS);
  CHECK(std::regex_search(warnings_text(), std::regex("version", std::regex::icase)));
  // Both versions are named: the peer's (ours + 1, from the fault) and ours.
  const std::string ours = std::to_string(zipnet::tcp::kWireVersion), theirs = std::to_string(zipnet::tcp::kWireVersion + 1);
  CHECK(std::regex_search(warnings_text(), std::regex("version " + theirs + "\\b[^\\n]*version " + ours + "\\b")));
}

}  // namespace

TEST_CASE("a connecting peer of another wire version is refused by accept", "[version][accept]") {
  StreamSpec spec;
  spec.count = 1;
  Peer peer = spawn_sender(spec, {"ZIPNET_FAULT_INJECT=wrong_version"});
  set_test_env();
  Net net = Net::open();
  REQUIRE(net.init_result == ncclSuccess);
  Watchdog wd(30, "accepting a peer of another wire version");
  const auto t0 = Clock::now();
  void* recv_comm = nullptr;
  const ncclResult_t r = accept_from(net, peer, &recv_comm, kDetectBoundS + 2);
  check_version_refused("peer of another wire version, accept side", r, seconds_since(t0));
  if (recv_comm) net->close_recv(recv_comm);
}

TEST_CASE("a listening peer of another wire version is refused by connect", "[version][connect]") {
  StreamSpec spec;
  spec.count = 1;
  Peer peer = spawn_receiver(spec, {"ZIPNET_FAULT_INJECT=wrong_version"});
  set_test_env();
  Net net = Net::open();
  REQUIRE(net.init_result == ncclSuccess);
  Watchdog wd(30, "connecting to a peer of another wire version");
  const auto t0 = Clock::now();
  void* send_comm = nullptr;
  const ncclResult_t r = connect_to(net, peer, &send_comm, kDetectBoundS + 2);
  check_version_refused("peer of another wire version, connect side", r, seconds_since(t0));
  if (send_comm) net->close_send(send_comm);
}

namespace {

// What a stray client does to the listen port before the real peer connects.
enum class Stray { garbage, garbage_large, silent, close_at_once };

void stray_then_peer(Stray kind, const char* name) {
  StreamSpec spec;
  spec.count = 16;
  Peer peer = spawn_sender(spec);
  set_test_env();
  Net net = Net::open();
  REQUIRE(net.init_result == ncclSuccess);
  Watchdog wd(40, std::string("accept with a stray client: ") + name);

  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  void* listen_comm = nullptr;
  REQUIRE(net->listen(net.ctx, 0, handle, &listen_comm) == ncclSuccess);
  const auto addrs = own_listen_addrs();
  REQUIRE(!addrs.empty());
  // The stray client gets there first, on every listening socket of this process.
  std::vector<int> strays;
  for (const auto& a : addrs) {
    const int fd = tcp_connect(a, 5);
    REQUIRE(fd >= 0);
    std::vector<uint8_t> junk(kind == Stray::garbage_large ? (1 << 20) : 200);
    fill_message(junk.data(), junk.size(), Content::random, 7);
    // Whatever fits without blocking: the plugin owes a stray no reads.
    if (kind == Stray::garbage || kind == Stray::garbage_large) send_some(fd, junk.data(), junk.size());
    if (kind == Stray::close_at_once) {
      ::close(fd);
      continue;
    }
    strays.push_back(fd);
  }
  // Poll accept for a while before the real peer is even told the handle: the stray must not
  // produce a comm, crash, or block accept.
  const auto t0 = Clock::now();
  void* recv_comm = nullptr;
  ncclResult_t r = ncclSuccess;
  while (seconds_since(t0) < 1.0 && r == ncclSuccess && recv_comm == nullptr) {
    void* dev = nullptr;
    const auto call = Clock::now();
    r = net->accept(listen_comm, &recv_comm, &dev);
    CHECK(seconds_since(call) < 0.5);  // accept is non-blocking even with a stray on the port
  }
  CHECK(recv_comm == nullptr);
  StreamResult as_stream;
  as_stream.step = "accept";
  if (r != ncclSuccess) {
    // Failing the accept is allowed if it says why.
    as_stream.result = r;
    record(name, as_stream, seconds_since(t0));
    INFO("warnings:\n" << warnings_text());
    CHECK(!warnings_text().empty());
  } else {
    // Otherwise the real peer still gets through and every byte arrives intact.
    peer.channel().send(std::string(handle, sizeof handle));
    r = poll_accept(*net, listen_comm, &recv_comm, 20);
    INFO("accept after the stray: " << zipperf::result_name(r) << "\nwarnings:\n" << warnings_text());
    REQUIRE(r == ncclSuccess);
    const StreamResult got = stream_recv(*net, recv_comm, spec);
    as_stream = got;
    record(name, got, seconds_since(t0));
    CHECK(got.result == ncclSuccess);
    CHECK(got.completed == 16);
    CHECK(got.corrupted == 0);
  }
  net->close_listen(listen_comm);
  for (int fd : strays) ::close(fd);
}

}  // namespace

TEST_CASE("a stray client sending garbage does not break accept", "[stray][garbage]") {
  stray_then_peer(Stray::garbage, "stray client sends 200 random bytes");
}

TEST_CASE("a stray client sending 1 MiB of garbage does not break accept", "[stray][garbage_large]") {
  stray_then_peer(Stray::garbage_large, "stray client sends 1 MiB of random bytes");
}

TEST_CASE("a silent stray client does not block accept", "[stray][silent]") {
  stray_then_peer(Stray::silent, "stray client connects and sends nothing");
}

TEST_CASE("a stray client that closes at once does not break accept", "[stray][close]") {
  stray_then_peer(Stray::close_at_once, "stray client connects and closes");
}
