// Every entry of ncclNetPlugin_v11 and ncclNetPlugin_v12, called directly the way NCCL calls it,
// with the values NCCL checks (properties) and the contracts NCCL relies on (non-blocking
// connect/accept, *request always written, iflush with nothing to do, finalize per context).
#include <catch2/catch.hpp>

#include <cstring>

#include "plugin_test_util.h"

using namespace zipperf;
using plugin_test::plugin_path;

TEST_CASE("the table: name zipnet, every mandatory entry set", "[abi]") {
  const Abi abi = GENERATE(Abi::V11, Abi::V12);
  INFO(plugin_test::abi_name(abi));
  std::string err;
  auto p = Plugin::open(plugin_path(), abi, &err);  // fails on any NULL mandatory entry
  INFO(err);
  REQUIRE(p != nullptr);
  CHECK(p->abi_version() == (abi == Abi::V11 ? 11 : 12));
  CHECK(std::string(p->name()) == "zipnet");
  CHECK(p->has_set_net_attr());
}

TEST_CASE("init, devices and getProperties give values NCCL accepts", "[abi]") {
  const Abi abi = GENERATE(Abi::V11, Abi::V12);
  INFO(plugin_test::abi_name(abi));
  std::string err;
  auto p = Plugin::open(plugin_path(), abi, &err);
  REQUIRE(p != nullptr);
  void* ctx = nullptr;
  REQUIRE(p->init(&ctx, 42, NCCL_NET_TRAFFIC_CLASS_UNDEF, nccl_logger()) == ncclSuccess);
  CHECK(ctx != nullptr);
  int ndev = 0;
  REQUIRE(p->devices(&ndev) == ncclSuccess);
  REQUIRE(ndev >= 1);
  for (int d = 0; d < ndev; ++d) {
    Properties pr;
    REQUIRE(p->get_properties(d, &pr) == ncclSuccess);
    INFO("device " << d << " " << pr.name);
    CHECK_FALSE(pr.name.empty());
    CHECK(pr.ptr_support == NCCL_PTR_HOST);  // the host pipeline: NCCL must hand us host memory
    CHECK(pr.speed > 0);
    CHECK(pr.port >= 0);
    CHECK(pr.latency >= 0);
    CHECK(pr.max_comms > 0);
    CHECK(pr.max_recvs == 1);
    CHECK(pr.force_flush == 0);
    CHECK((pr.reg_is_global == 0 || pr.reg_is_global == 1));
    CHECK(pr.net_device_type == NCCL_NET_DEVICE_HOST);
    CHECK(pr.net_device_version == 0);
    CHECK(pr.vdev_count == 1);
    CHECK(pr.vdevs[0] == d);
    CHECK(pr.max_p2p_bytes > 0);
    CHECK(pr.max_p2p_bytes <= NCCL_MAX_NET_SIZE_BYTES);
    CHECK(pr.max_coll_bytes > 0);
    CHECK(pr.max_coll_bytes <= NCCL_MAX_NET_SIZE_BYTES);
    CHECK(pr.max_multi_request_size >= 1);
    if (abi == Abi::V12) {  // written, not left as the 0xCDCD we filled in
      CHECK(pr.rail_id >= -1);
      CHECK(pr.rail_id < 0x4000);
      CHECK(pr.plane_id >= -1);
      CHECK(pr.plane_id < 0x4000);
    }
  }
  Properties none;
  CHECK(p->get_properties(ndev, &none) != ncclSuccess);  // out of range: an error, not a crash
  CHECK(p->get_properties(-1, &none) != ncclSuccess);
  CHECK(p->finalize(ctx) == ncclSuccess);
}

TEST_CASE("listen, connect, accept, regMr, isend, irecv, test, iflush, deregMr, close, finalize", "[abi]") {
  const Abi abi = GENERATE(Abi::V11, Abi::V12);
  INFO(plugin_test::abi_name(abi));
  std::string err;
  auto p = Plugin::open(plugin_path(), abi, &err);
  REQUIRE(p != nullptr);
  Plugin& pl = *p;
  void *rctx = nullptr, *sctx = nullptr;
  REQUIRE(pl.init(&rctx, 1, NCCL_NET_TRAFFIC_CLASS_UNDEF, nccl_logger()) == ncclSuccess);
  REQUIRE(pl.init(&sctx, 2, NCCL_NET_TRAFFIC_CLASS_UNDEF, nccl_logger()) == ncclSuccess);
  CHECK(pl.set_net_attr(sctx, 1u << 2) == ncclSuccess);  // a protocol hint (Simple)

  char handle[NCCL_NET_HANDLE_MAXSIZE];
  std::memset(handle, 0, sizeof handle);
  void* lc = nullptr;
  REQUIRE(pl.listen(rctx, 0, handle, &lc) == ncclSuccess);
  REQUIRE(lc != nullptr);

  // connect and accept must not block: the first calls return with NULL comms and are retried.
  void *sc = nullptr, *rc = nullptr;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  REQUIRE(connect_and_accept(pl, sctx, 0, handle, &sc, lc, &rc, deadline) == "");
  REQUIRE(pl.close_listen(lc) == ncclSuccess);

  std::vector<uint8_t> sbuf(1 << 20), rbuf((1 << 20) + 4096, 0);
  for (size_t i = 0; i < sbuf.size(); ++i) sbuf[i] = static_cast<uint8_t>(i * 7 + (i >> 9));
  void *smh = nullptr, *rmh = nullptr;
  REQUIRE(pl.reg_mr(sc, sbuf.data(), sbuf.size(), NCCL_PTR_HOST, &smh) == ncclSuccess);
  REQUIRE(pl.reg_mr(rc, rbuf.data(), rbuf.size(), NCCL_PTR_HOST, &rmh) == ncclSuccess);
  CHECK(smh != nullptr);
  CHECK(rmh != nullptr);
  // The same range again (NCCL registers repeating ranges) and a second handle of it.
  void* smh2 = nullptr;
  CHECK(pl.reg_mr(sc, sbuf.data(), sbuf.size(), NCCL_PTR_HOST, &smh2) == ncclSuccess);
  CHECK(pl.dereg_mr(sc, smh2) == ncclSuccess);

  // irecv posted larger than the send; irecv must write *request even though NCCL preset it.
  void* rreq = reinterpret_cast<void*>(0x1);
  void* data = rbuf.data();
  size_t size = rbuf.size();
  int tag = 7;
  ncclResult_t r = ncclSuccess;
  do {  // a NULL request means "not now": NCCL retries
    rreq = reinterpret_cast<void*>(0x1);
    r = pl.irecv(rc, 1, &data, &size, &tag, &rmh, &rreq);
  } while (r == ncclSuccess && rreq == nullptr && Clock::now() < deadline);
  REQUIRE(r == ncclSuccess);
  REQUIRE(rreq != reinterpret_cast<void*>(0x1));
  REQUIRE(rreq != nullptr);
  void* sreq = nullptr;
  do {
    r = pl.isend(sc, sbuf.data(), sbuf.size(), 7, smh, &sreq);
  } while (r == ncclSuccess && sreq == nullptr && Clock::now() < deadline);
  REQUIRE(r == ncclSuccess);
  REQUIRE(sreq != nullptr);
  int sdone = 0, rdone = 0, ssize = -1, rsize = -1;
  ncclResult_t sr = ncclSuccess, rr = ncclSuccess;
  while (!(sdone && rdone) && sr == ncclSuccess && rr == ncclSuccess && Clock::now() < deadline) {
    if (!sdone) sr = pl.test(sreq, &sdone, &ssize);
    if (!rdone) rr = pl.test(rreq, &rdone, &rsize);
  }
  REQUIRE(sr == ncclSuccess);
  REQUIRE(rr == ncclSuccess);
  REQUIRE(sdone == 1);
  REQUIRE(rdone == 1);
  CHECK(ssize == static_cast<int>(sbuf.size()));
  CHECK(rsize == static_cast<int>(sbuf.size()));  // the sent size, not the posted one
  CHECK(std::memcmp(rbuf.data(), sbuf.data(), sbuf.size()) == 0);

  // Host memory needs no flush: iflush answers "nothing to do" with a NULL request.
  void* freq = reinterpret_cast<void*>(0x1);
  int fsize = static_cast<int>(sbuf.size());
  CHECK(pl.iflush(rc, 1, &data, &fsize, &rmh, &freq) == ncclSuccess);
  CHECK(freq == nullptr);

  CHECK(pl.dereg_mr(sc, smh) == ncclSuccess);
  CHECK(pl.dereg_mr(rc, rmh) == ncclSuccess);
  CHECK(pl.close_send(sc) == ncclSuccess);
  CHECK(pl.close_recv(rc) == ncclSuccess);
  CHECK(pl.finalize(sctx) == ncclSuccess);
  CHECK(pl.finalize(rctx) == ncclSuccess);
}

TEST_CASE("a listenComm closed without any accept (shared comms) and init/finalize per communicator", "[abi]") {
  const Abi abi = GENERATE(Abi::V11, Abi::V12);
  INFO(plugin_test::abi_name(abi));
  std::string err;
  auto p = Plugin::open(plugin_path(), abi, &err);
  REQUIRE(p != nullptr);
  std::vector<void*> ctxs(4, nullptr);
  for (size_t i = 0; i < ctxs.size(); ++i)
    REQUIRE(p->init(&ctxs[i], 100 + i, NCCL_NET_TRAFFIC_CLASS_UNDEF, nccl_logger()) == ncclSuccess);
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  void* lc = nullptr;
  REQUIRE(p->listen(ctxs[0], 0, handle, &lc) == ncclSuccess);
  CHECK(p->close_listen(lc) == ncclSuccess);
  for (void* c : ctxs) CHECK(p->finalize(c) == ncclSuccess);
}

TEST_CASE("NULL-request paths: up to 32 isends before any irecv, then everything arrives", "[abi]") {
  const Abi abi = GENERATE(Abi::V11, Abi::V12);
  INFO(plugin_test::abi_name(abi));
  std::string err;
  auto pair = LocalPair::create(plugin_path(), abi, 10, &err);
  INFO(err);
  REQUIRE(pair != nullptr);
  TransferSpec spec;
  spec.sizes = {256 << 10, 4096, 0, 1 << 20};
  spec.inflight = NCCL_NET_MAX_REQUESTS;  // more than NCCL's 8 per connection: the plugin may say NULL
  uint64_t verified = 0;
  CHECK(pair->transfer(spec, plugin_test::tensors(), 96, 30, true, &verified) == "");
  CHECK(verified == 24 * ((256 << 10) + 4096 + (1 << 20)));
  CHECK(pair->close() == "");
}
