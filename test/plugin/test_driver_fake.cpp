// The driver checked against a fake plugin (test/plugin/fake): a correct transfer passes, and every
// misbehaviour the fake can be told to show (FAKE_NET_BUG) is reported as a failure that names it.
// If the driver missed one of these, the plugin suites could pass on a broken plugin.
#include <catch2/catch.hpp>

#include "driver.h"

using namespace zipperf;

namespace {

RunConfig fake_config(const std::string& bug) {
  RunConfig cfg;
  cfg.plugin_path = ZIPPERF_FAKE_PLUGIN;
  cfg.env = {{"FAKE_NET_BUG", bug}};
  cfg.spec.sizes = {64 << 10};
  cfg.iters = 64;
  cfg.warmup = 4;
  cfg.timeout_s = 20;
  return cfg;
}

const Payload& random_payload() {
  static Payload p = Payload::random(1 << 20, 42);
  return p;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a correct plugin passes between two processes, under v11 and v12", "[fake-ok]") {
  for (Abi abi : {Abi::V11, Abi::V12}) {
    RunConfig cfg = fake_config("none");
    cfg.abi = abi;
    RunReport r = run_pair(cfg, random_payload());
    INFO(r.error);
    REQUIRE(r.ok);
    CHECK(r.receiver.abi == (abi == Abi::V11 ? 11 : 12));
    CHECK(r.bytes_verified() == cfg.iters * (64u << 10));
    CHECK(r.receiver.messages == cfg.iters);
    CHECK(r.sender.messages == cfg.iters);
    CHECK(r.gbps() > 0);
  }
}

TEST_CASE("NULL requests from isend and irecv are retried, not lost", "[fake-ok]") {
  RunConfig cfg = fake_config("null_requests");
  RunReport r = run_pair(cfg, random_payload());
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(r.bytes_verified() == cfg.iters * (64u << 10));
  CHECK(r.sender.null_requests > 0);
  CHECK(r.receiver.null_requests > 0);
}

TEST_CASE("mixed sizes, size 0, a larger posted receive, LL and LL128 lines, isend first", "[fake-ok]") {
  RunConfig cfg = fake_config("none");
  cfg.spec.sizes = {0, 4096, 1 << 20, 128, 0, 1536};
  cfg.spec.posted_extra = 4096;
  cfg.isend_before_irecv = true;
  RunReport r = run_pair(cfg, random_payload());
  INFO(r.error);
  REQUIRE(r.ok);
  for (Shape shape : {Shape::LL, Shape::LL128}) {
    cfg.spec.shape = shape;
    cfg.spec.sizes = {128 * 512, 128, 0, 128 * 4800};
    RunReport l = run_pair(cfg, random_payload());
    INFO(shape_name(shape) << ": " << l.error);
    REQUIRE(l.ok);
  }
}

TEST_CASE("latency mode measures one message at a time", "[fake-ok]") {
  RunConfig cfg = fake_config("none");
  cfg.mode = Mode::Latency;
  cfg.spec.inflight = 1;
  cfg.spec.sizes = {4096};
  cfg.iters = 50;
  RunReport r = run_pair(cfg, random_payload());
  INFO(r.error);
  REQUIRE(r.ok);
  REQUIRE(r.receiver.latencies_us.size() == 50);
  CHECK(r.median_latency_us() > 0);
  CHECK(r.median_latency_us() < 1e6);
}

TEST_CASE("in one process: LocalPair connects and transfers", "[fake-ok]") {
  std::string err;
  auto pair = LocalPair::create(ZIPPERF_FAKE_PLUGIN, Abi::V12, 10, &err);
  REQUIRE(pair != nullptr);
  TransferSpec spec;
  spec.sizes = {100000, 0, 7};
  uint64_t verified = 0;
  CHECK(pair->transfer(spec, random_payload(), 30, 10, true, &verified) == "");
  CHECK(verified == 10 * (100000 + 7));
  CHECK(pair->close() == "");
}

TEST_CASE("the driver catches each misbehaviour", "[fake-bugs]") {
  struct Case {
    const char* bug;
    const char* expect;  // a piece of the error the driver must give
  };
  const Case cases[] = {
      {"irecv_no_request", "without writing *request"},
      {"corrupt", "bytes differ"},
      {"wrong_size", "reported"},
      {"send_size", "reported"},
      {"read_after_done", "bytes differ"},
      {"write_past_end", "wrote past"},
      {"hang", "timed out"},
      {"crash", "signal 11"},
      {"init_fail", "init returned ncclInvalidUsage"},
      {"null_listen", "listenComm NULL"},
  };
  for (const Case& c : cases) {
    RunConfig cfg = fake_config(c.bug);
    cfg.spec.posted_extra = 64;  // room past the send, so writing past it is visible
    cfg.timeout_s = 3;
    RunReport r = run_pair(cfg, random_payload());
    INFO("FAKE_NET_BUG=" << c.bug << " -> " << r.error);
    CHECK_FALSE(r.ok);
    CHECK(contains(r.error, c.expect));
  }
}

TEST_CASE("a missing plugin, a missing symbol and a NULL mandatory entry are clear errors", "[fake-bugs]") {
  std::string err;
  CHECK(Plugin::open("/nonexistent/libnccl-net-nothing.so", Abi::Auto, &err) == nullptr);
  CHECK(contains(err, "dlopen"));
  CHECK(Plugin::open("libc.so.6", Abi::Auto, &err) == nullptr);
  CHECK(contains(err, "exports no ncclNetPlugin_v12 or ncclNetPlugin_v11"));
}

TEST_CASE("warnings the plugin logs in a child come back to the parent", "[fake-bugs]") {
  RunConfig cfg = fake_config("init_fail");
  RunReport r = run_pair(cfg, random_payload());
  REQUIRE_FALSE(r.ok);
  REQUIRE_FALSE(r.receiver.warnings.empty());
  CHECK(contains(r.receiver.warnings[0], "FAKE_NET_BUG=init_fail"));
}
