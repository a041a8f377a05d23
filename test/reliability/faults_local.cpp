// Local resource faults, injected with the plugin's test-only ZIPNET_FAULT_INJECT: a failed memory
// registration and exhausted staging memory. Both ends run in this process.
#include <catch2/catch.hpp>
#include <cstring>
#include <deque>
#include <regex>
#include <vector>

#include "roles.h"

using namespace rel;

TEST_CASE("a failed memory registration is an error with a WARN", "[regmr_fail]") {
  set_test_env({"ZIPNET_FAULT_INJECT=regmr_fail"});
  Net net = Net::open();
  REQUIRE(net.init_result == ncclSuccess);
  Watchdog wd(30, "regMr with regmr_fail injected");
  LocalPair pair;
  REQUIRE(connect_local(*net, net.ctx, net.ctx, &pair, 20) == ncclSuccess);

  std::vector<uint8_t> buf(1 << 20);
  for (void* comm : {pair.send_comm, pair.recv_comm}) {
    void* mh = reinterpret_cast<void*>(0x1);
    const auto t0 = Clock::now();
    const ncclResult_t r = net->reg_mr(comm, buf.data(), buf.size(), NCCL_PTR_HOST, &mh);
    StreamResult as_stream;
    as_stream.result = r;
    as_stream.step = "regMr";
    record(comm == pair.send_comm ? "failed memory registration (send comm)" : "failed memory registration (recv comm)",
           as_stream, seconds_since(t0));
    INFO("warnings:\n" << warnings_text());
    CHECK(r != ncclSuccess);
    CHECK(r != ncclInProgress);
    CHECK(seconds_since(t0) < 1.0);
    CHECK(std::regex_search(warnings_text(), std::regex("regMr|regist|memory", std::regex::icase)));
    zipperf::clear_captured_log();
  }
  // The comms are still in a state NCCL can close.
  CHECK(net->close_send(pair.send_comm) == ncclSuccess);
  CHECK(net->close_recv(pair.recv_comm) == ncclSuccess);
}

TEST_CASE("exhausted staging memory is an error with a WARN, never wrong data", "[staging_exhausted]") {
  set_test_env({"ZIPNET_FAULT_INJECT=staging_exhausted"});
  Net net = Net::open();
  REQUIRE(net.init_result == ncclSuccess);
  Watchdog wd(40, "sending with staging_exhausted injected");
  // A plugin that sets its staging up front fails the connection; one that stages on demand fails
  // the transfer. Either is fine if it is a clear error, in time, with no wrong data.
  const std::regex staging_words("staging|memory|exhaust", std::regex::icase);
  LocalPair pair;
  const auto c0 = Clock::now();
  const ncclResult_t c = connect_local(*net, net.ctx, net.ctx, &pair, 20);
  if (c != ncclSuccess) {
    StreamResult as_stream;
    as_stream.result = c;
    as_stream.step = "connect/accept";
    record("staging memory exhausted", as_stream, seconds_since(c0));
    INFO("warnings:\n" << warnings_text());
    CHECK(c != ncclTimeout);
    CHECK(seconds_since(c0) < kDetectBoundS);
    CHECK(std::regex_search(warnings_text(), staging_words));
    if (pair.send_comm) net->close_send(pair.send_comm);
    if (pair.recv_comm) net->close_recv(pair.recv_comm);
    return;
  }

  // Sends posted before any receive (NCCL's proxy does that) need staging on one side or the other.
  constexpr int kMessages = 8;
  constexpr size_t kSize = size_t(1) << 20;
  std::vector<std::vector<uint8_t>> bufs(kMessages, std::vector<uint8_t>(kSize));
  std::vector<std::vector<uint8_t>> rbufs(kMessages, std::vector<uint8_t>(kSize, 0xA5));
  std::vector<void*> smh(kMessages), rmh(kMessages), sreq(kMessages), rreq(kMessages);
  for (int i = 0; i < kMessages; ++i) {
    fill_message(bufs[i].data(), kSize, Content::tensor, uint64_t(i));
    REQUIRE(net->reg_mr(pair.send_comm, bufs[i].data(), kSize, NCCL_PTR_HOST, &smh[i]) == ncclSuccess);
    REQUIRE(net->reg_mr(pair.recv_comm, rbufs[i].data(), kSize, NCCL_PTR_HOST, &rmh[i]) == ncclSuccess);
  }
  const auto t0 = Clock::now();
  ncclResult_t first_error = ncclSuccess;
  std::string step;
  int reported_done = 0, wrong = 0;
  for (int i = 0; i < kMessages && first_error == ncclSuccess; ++i) {
    first_error = post_isend(*net, pair.send_comm, bufs[i].data(), kSize, 0, smh[i], &sreq[i], kDetectBoundS);
    step = "isend";
  }
  for (int i = 0; i < kMessages && first_error == ncclSuccess; ++i) {
    first_error = post_irecv(*net, pair.recv_comm, rbufs[i].data(), kSize, 0, rmh[i], &rreq[i], kDetectBoundS);
    step = "irecv";
  }
  for (int i = 0; i < kMessages && first_error == ncclSuccess; ++i) {
    // Progress both directions, the way NCCL's progress thread polls the oldest request of each.
    const Completion s = wait_request(*net, sreq[i], kDetectBoundS);
    if (s.result != ncclSuccess) {
      first_error = s.result, step = "test(send)";
      break;
    }
    const Completion r = wait_request(*net, rreq[i], kDetectBoundS);
    if (r.result != ncclSuccess) {
      first_error = r.result, step = "test(recv)";
      break;
    }
    ++reported_done;
    if (r.size != int(kSize) || std::memcmp(rbufs[i].data(), bufs[i].data(), kSize) != 0) ++wrong;
  }
  StreamResult as_stream;
  as_stream.result = first_error;
  as_stream.step = step;
  as_stream.completed = uint64_t(reported_done);
  as_stream.corrupted = uint64_t(wrong);
  record("staging memory exhausted", as_stream, seconds_since(t0));
  INFO("result " << zipperf::result_name(first_error) << " at " << step << "\nwarnings:\n" << warnings_text());
  CHECK(wrong == 0);
  CHECK(first_error != ncclSuccess);
  CHECK(first_error != ncclTimeout);
  CHECK(seconds_since(t0) < kDetectBoundS);
  CHECK(std::regex_search(warnings_text(), staging_words));
  for (int i = 0; i < kMessages; ++i) {
    net->dereg_mr(pair.send_comm, smh[i]);
    net->dereg_mr(pair.recv_comm, rmh[i]);
  }
  net->close_send(pair.send_comm);
  net->close_recv(pair.recv_comm);
}
