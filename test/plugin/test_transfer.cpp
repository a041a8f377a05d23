// The data path between two processes, driven as NCCL's proxy drives it, for every case NCCL
// produces: size 0, receives larger than the send, isend before irecv, 8+ in flight, LL and LL128
// lines, real tensors and random bytes, with compression on and off, under both ABIs. Every
// received byte is compared; the driver also checks sizes, *request and bytes past the send.
#include <catch2/catch.hpp>

#include "plugin_test_util.h"

using namespace zipperf;
using plugin_test::config;

namespace {

void require_ok(const RunReport& r, uint64_t expect_verified) {
  for (const std::string& w : r.receiver.warnings) UNSCOPED_INFO("receiver WARN: " << w);
  for (const std::string& w : r.sender.warnings) UNSCOPED_INFO("sender WARN: " << w);
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(r.bytes_verified() == expect_verified);
}

uint64_t total_bytes(const RunConfig& cfg) {
  uint64_t t = 0;
  for (uint64_t i = 0; i < cfg.warmup + cfg.iters; ++i) t += cfg.spec.size_of(i);
  return t;
}

}  // namespace

TEST_CASE("real tensors, 1 MiB messages, 8 in flight, compressed and raw, v11 and v12", "[tensors]") {
  const Abi abi = GENERATE(Abi::V11, Abi::V12);
  const bool compress = GENERATE(true, false);
  INFO(plugin_test::abi_name(abi) << (compress ? " compressed" : " ZIPNET_COMPRESS=0"));
  RunConfig cfg = config(abi, compress);
  cfg.spec.sizes = {1 << 20};
  cfg.iters = 48;
  require_ok(run_pair(cfg, plugin_test::tensors()), total_bytes(cfg));
}

TEST_CASE("random bytes (incompressible) in sizes around the sub-chunk and threshold edges", "[random]") {
  const bool compress = GENERATE(true, false);
  INFO((compress ? "compressed" : "ZIPNET_COMPRESS=0"));
  RunConfig cfg = config(Abi::Auto, compress);
  cfg.spec.sizes = {(128 << 10) - 1, 128 << 10, (128 << 10) + 1, 3 << 20, 1, 4 << 20, 65537};
  cfg.iters = 28;
  require_ok(run_pair(cfg, plugin_test::random_bytes()), total_bytes(cfg));
}

TEST_CASE("messages of size 0 mixed with others", "[size0]") {
  const bool compress = GENERATE(true, false);
  RunConfig cfg = config(Abi::Auto, compress);
  cfg.spec.sizes = {0, 0, 512 << 10, 0, 1};
  cfg.iters = 40;
  require_ok(run_pair(cfg, plugin_test::tensors()), total_bytes(cfg));
  cfg.spec.sizes = {0};  // nothing but empty messages
  require_ok(run_pair(cfg, plugin_test::tensors()), 0);
}

TEST_CASE("receives posted larger than the send report the sent size", "[larger-posted]") {
  const bool compress = GENERATE(true, false);
  RunConfig cfg = config(Abi::Auto, compress);
  cfg.spec.sizes = {1 << 20, 300000, 4096, 0};
  cfg.spec.posted_extra = (1 << 20) + 12345;  // every receive is more than twice the largest send
  cfg.iters = 32;
  require_ok(run_pair(cfg, plugin_test::tensors()), total_bytes(cfg));
}

TEST_CASE("isend before irecv: the sender posts before the receiver posts anything", "[isend-first]") {
  const bool compress = GENERATE(true, false);
  RunConfig cfg = config(Abi::Auto, compress);
  cfg.spec.sizes = {2 << 20, 64 << 10};
  cfg.isend_before_irecv = true;
  cfg.iters = 32;
  require_ok(run_pair(cfg, plugin_test::tensors()), total_bytes(cfg));
}

TEST_CASE("8, 16 and 32 messages in flight", "[inflight]") {
  const int inflight = GENERATE(8, 16, 32);
  INFO(inflight << " in flight");
  RunConfig cfg = config(Abi::Auto, true);
  cfg.spec.inflight = inflight;
  cfg.spec.sizes = {512 << 10, 128 << 10, 16 << 10};
  cfg.iters = 96;
  require_ok(run_pair(cfg, plugin_test::tensors()), total_bytes(cfg));
}

TEST_CASE("LL and LL128 lines with in-line flags, NCCL's step sizes", "[ll]") {
  const Shape shape = GENERATE(Shape::LL, Shape::LL128);
  const bool compress = GENERATE(true, false);
  INFO(shape_name(shape) << (compress ? " compressed" : " ZIPNET_COMPRESS=0"));
  RunConfig cfg = config(Abi::Auto, compress);
  cfg.spec.shape = shape;
  // LL: 64 KiB steps; LL128: 614,400-byte steps (4,800 lines); partial steps; one line; nothing.
  cfg.spec.sizes = shape == Shape::LL ? std::vector<size_t>{64 << 10, 16, 4096, 0, 48 << 10}
                                      : std::vector<size_t>{614400, 128, 128 * 1000, 0, 307200};
  cfg.iters = 40;
  require_ok(run_pair(cfg, plugin_test::tensors()), total_bytes(cfg));
}

TEST_CASE("one connection in one process (NCCL's -g 2 shape): LocalPair", "[local]") {
  const Abi abi = GENERATE(Abi::V11, Abi::V12);
  std::string err;
  auto pair = LocalPair::create(plugin_test::plugin_path(), abi, 10, &err);
  INFO(err);
  REQUIRE(pair != nullptr);
  TransferSpec spec;
  spec.sizes = {1 << 20, 0, 77777};
  uint64_t verified = 0;
  CHECK(pair->transfer(spec, plugin_test::tensors(), 60, 30, false, &verified) == "");
  CHECK(verified == 20 * ((1 << 20) + 77777));
  CHECK(pair->close() == "");
}

TEST_CASE("several connections to one peer at once (NCCL's channels), sharing one adaptive policy", "[conns]") {
  // ZIPNET_ADAPTIVE stays on: the comms attach to one per-host policy, which must neither stall
  // nor mix up their messages. 5 connections x 24 messages, mixed sizes, all in flight together.
  const bool compress = GENERATE(true, false);
  INFO((compress ? "compressed" : "ZIPNET_COMPRESS=0"));
  RunConfig cfg = config(Abi::Auto, compress);
  cfg.conns = 5;
  cfg.spec.sizes = {1 << 20, 256 << 10, 0, (128 << 10) + 3};
  cfg.iters = 24;
  RunReport r = run_pair(cfg, plugin_test::tensors());
  require_ok(r, cfg.conns * total_bytes(cfg));
  CHECK(r.receiver.messages == uint64_t(cfg.conns) * cfg.iters);
  CHECK(r.sender.messages == uint64_t(cfg.conns) * cfg.iters);
}
