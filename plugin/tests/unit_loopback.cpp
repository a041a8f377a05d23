// End-to-end through the version-neutral API over loopback, in one process: the sender and the
// receiver are driven from this thread the way NCCL's proxy drives them (post, then poll test).
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "plugin/tests/test_util.h"

using namespace zipnet;
using namespace zipnet::test;

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

std::string stats_path(const char* tag) { return "/tmp/zipnet-unit-stats-" + std::to_string(getpid()) + "-" + tag + ".jsonl"; }

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Mr {
  void* comm;
  void* handle = nullptr;
  Mr(void* c, void* data, size_t size) : comm(c) { REQUIRE(api::reg_mr(c, data, size, NCCL_PTR_HOST, &handle) == ncclSuccess); }
  ~Mr() { api::dereg_mr(comm, handle); }
};

// Sends src (size n) and receives into a buffer of capacity cap; returns the received bytes.
std::vector<uint8_t> roundtrip(Pair& p, const std::vector<uint8_t>& src, size_t cap) {
  std::vector<uint8_t> dst(cap ? cap : 1, 0xEE);
  Mr smr(p.send, const_cast<uint8_t*>(src.data()), src.size());
  Mr rmr(p.recv, dst.data(), cap);
  void* sreq = nullptr;
  void* rreq = nullptr;
  void* rdata = dst.data();
  size_t rsize = cap;
  int tag = 0;
  REQUIRE(api::irecv(p.recv, 1, &rdata, &rsize, &tag, &rmr.handle, nullptr, &rreq) == ncclSuccess);
  REQUIRE(rreq);
  REQUIRE(api::isend(p.send, const_cast<uint8_t*>(src.data()), src.size(), 0, smr.handle, nullptr, &sreq) == ncclSuccess);
  REQUIRE(sreq);
  int ssize = -1, got = -1;
  REQUIRE(wait_done(sreq, &ssize) == ncclSuccess);
  REQUIRE(wait_done(rreq, &got) == ncclSuccess);
  CHECK(ssize == int(src.size()));
  REQUIRE(got == int(src.size()));
  dst.resize(size_t(got));
  return dst;
}

}  // namespace

TEST_CASE("messages of every shape arrive bit-exact, compressed", "[loopback]") {
  std::string stats = stats_path("shapes");
  std::remove(stats.c_str());
  Env env{{"ZIPNET_SOCKET_IFNAME", "=lo"}, {"ZIPNET_MIN_COMPRESS_BYTES", "0"}, {"ZIPNET_ADAPTIVE", "0"},
          {"ZIPNET_STATS_FILE", stats.c_str()}, {"ZIPNET_STREAMS", "3"}, {"ZIPNET_SUBCHUNK_BYTES", "64K"}};
  {
    Pair p;
    REQUIRE(p.setup_error == ncclSuccess);
    std::vector<uint8_t> bf16 = read_tensor("grads.bf16");
    REQUIRE(bf16.size() == 2u << 20);
    std::vector<std::vector<uint8_t>> msgs = {
        {}, {0x42}, random_bytes(7, 1), random_bytes(4096, 2), random_bytes((64 << 10) + 3, 3),
        std::vector<uint8_t>(bf16.begin(), bf16.begin() + (1 << 20) + 13), bf16};
    for (const auto& m : msgs) {
      INFO("size " << m.size());
      CHECK(roundtrip(p, m, m.size()) == m);
    }
    // Unaligned source inside a larger registered buffer.
    std::vector<uint8_t> big(bf16.begin(), bf16.begin() + 300001);
    std::vector<uint8_t> odd(big.begin() + 1, big.end());
    CHECK(roundtrip(p, odd, odd.size()) == odd);
  }
  std::string s = slurp(stats);
  INFO(s);
  CHECK_THAT(s, Catch::Contains("\"comm\":\"send\""));
  CHECK_THAT(s, Catch::Contains("\"comm\":\"recv\""));
  CHECK_THAT(s, !Catch::Contains("\"chunks_compressed\":0,"));  // the tensors went through the codec
  std::remove(stats.c_str());
}

// Small messages must cost what they cost with compression off: below ZIPNET_MIN_COMPRESS_BYTES
// nothing reaches the codec (no encode, no worker hand-off, no staging), and the sub-chunk counts
// as sent raw but not as a raw fallback (nothing was tried). The threshold is exact: 128K - 1 goes
// raw, 128K is compressed (ADAPTIVE=0 so that an eligible message is always compressed).
TEST_CASE("with compression on, messages below the threshold skip the codec", "[loopback]") {
  std::string stats = stats_path("threshold");
  std::remove(stats.c_str());
  {
    Env env{{"ZIPNET_SOCKET_IFNAME", "=lo"}, {"ZIPNET_ADAPTIVE", "0"}, {"ZIPNET_STATS_FILE", stats.c_str()}};
    Pair p;
    REQUIRE(p.setup_error == ncclSuccess);
    std::vector<uint8_t> g = read_tensor("grads.bf16");
    for (size_t n : {size_t(0), size_t(256), size_t(4096), size_t(16384), size_t(65536), size_t(131071), size_t(131072)}) {
      INFO("size " << n);
      std::vector<uint8_t> m(g.begin(), g.begin() + std::ptrdiff_t(n));
      CHECK(roundtrip(p, m, m.size()) == m);
    }
  }
  std::string s = slurp(stats);
  INFO(s);
  const size_t at = s.find("{\"comm\":\"send\"");
  REQUIRE(at != std::string::npos);
  std::string send_line = s.substr(at);
  send_line = send_line.substr(0, send_line.find('\n'));
  CHECK_THAT(send_line, Catch::Contains("\"messages\":7,"));
  CHECK_THAT(send_line, Catch::Contains("\"chunks_compressed\":1,"));  // only the 128K message
  CHECK_THAT(send_line, Catch::Contains("\"chunks_raw\":6,"));
  CHECK_THAT(send_line, Catch::Contains("\"raw_fallbacks\":0}"));
  std::remove(stats.c_str());
}

TEST_CASE("a receive posted larger than the send reports the sent size", "[loopback]") {
  Env env{{"ZIPNET_SOCKET_IFNAME", "=lo"}, {"ZIPNET_MIN_COMPRESS_BYTES", "0"}};
  Pair p;
  REQUIRE(p.setup_error == ncclSuccess);
  std::vector<uint8_t> m = read_tensor("activations.bf16");
  m.resize(500000);
  std::vector<uint8_t> got = roundtrip(p, m, 1 << 20);
  CHECK(got == m);
}

TEST_CASE("isend before irecv, 8 and more in flight, mixed sizes", "[loopback]") {
  for (const char* compress : {"1", "0"}) {
    Env env{{"ZIPNET_SOCKET_IFNAME", "=lo"}, {"ZIPNET_MIN_COMPRESS_BYTES", "0"}, {"ZIPNET_COMPRESS", compress},
            {"ZIPNET_ADAPTIVE", "0"}};
    Pair p;
    REQUIRE(p.setup_error == ncclSuccess);
    std::vector<uint8_t> w = read_tensor("weights.bf16");
    const size_t sizes[] = {0, 100, 65536, 131072, 131073, 600000, 1 << 20, 3};
    constexpr int kRounds = 3, kInFlight = 8;
    std::vector<uint8_t> recv_buf(kInFlight << 20);
    Mr rmr(p.recv, recv_buf.data(), recv_buf.size());
    Mr smr(p.send, w.data(), w.size());
    for (int round = 0; round < kRounds; ++round) {
      void* sreq[kInFlight];
      void* rreq[kInFlight];
      size_t off[kInFlight];
      // All sends first: the receiver has posted nothing yet.
      for (int i = 0; i < kInFlight; ++i) {
        off[i] = size_t(i * 7919 + round * 104729) % (w.size() - sizes[i]);
        REQUIRE(api::isend(p.send, w.data() + off[i], sizes[i], 0, smr.handle, nullptr, &sreq[i]) == ncclSuccess);
        REQUIRE(sreq[i]);
      }
      for (int i = 0; i < kInFlight; ++i) {
        void* d = recv_buf.data() + (size_t(i) << 20);
        size_t cap = 1 << 20;
        int tag = 0;
        REQUIRE(api::irecv(p.recv, 1, &d, &cap, &tag, &rmr.handle, nullptr, &rreq[i]) == ncclSuccess);
        REQUIRE(rreq[i]);
      }
      for (int i = 0; i < kInFlight; ++i) {
        int s = -1, r = -1;
        REQUIRE(wait_done(sreq[i], &s) == ncclSuccess);
        REQUIRE(wait_done(rreq[i], &r) == ncclSuccess);
        REQUIRE(r == int(sizes[i]));
        INFO("compress " << compress << " round " << round << " msg " << i);
        CHECK(std::memcmp(recv_buf.data() + (size_t(i) << 20), w.data() + off[i], sizes[i]) == 0);
      }
    }
  }
}

TEST_CASE("LL and LL128 shaped buffers survive compression", "[loopback]") {
  Env env{{"ZIPNET_SOCKET_IFNAME", "=lo"}, {"ZIPNET_MIN_COMPRESS_BYTES", "0"}, {"ZIPNET_ADAPTIVE", "0"}};
  Pair p;
  REQUIRE(p.setup_error == ncclSuccess);
  std::vector<uint8_t> g = read_tensor("grads.bf16");
  // LL: 16-byte lines {d1, flag, d2, flag}; 64 KiB step.
  std::vector<uint8_t> ll(64 << 10);
  for (size_t line = 0; line < ll.size() / 16; ++line) {
    uint32_t flag = 7;
    std::memcpy(&ll[line * 16], &g[line * 8], 4);
    std::memcpy(&ll[line * 16 + 4], &flag, 4);
    std::memcpy(&ll[line * 16 + 8], &g[line * 8 + 4], 4);
    std::memcpy(&ll[line * 16 + 12], &flag, 4);
  }
  CHECK(roundtrip(p, ll, ll.size()) == ll);
  // LL128: 128-byte lines, 120 data bytes then a u64 flag; a 614400-byte step.
  std::vector<uint8_t> ll128(614400);
  for (size_t line = 0; line < ll128.size() / 128; ++line) {
    uint64_t flag = 3;
    std::memcpy(&ll128[line * 128], &g[line * 120], 120);
    std::memcpy(&ll128[line * 128 + 120], &flag, 8);
  }
  CHECK(roundtrip(p, ll128, ll128.size()) == ll128);
}

TEST_CASE("properties describe a host-memory device", "[loopback]") {
  Env env{{"ZIPNET_SOCKET_IFNAME", "=lo"}};
  void* ctx = nullptr;
  REQUIRE(api::init(&ctx, 1, nullptr, record_log, 11) == ncclSuccess);
  int n = 0;
  REQUIRE(api::devices(&n) == ncclSuccess);
  REQUIRE(n == 1);
  api::DeviceProps props;
  REQUIRE(api::get_properties(0, &props) == ncclSuccess);
  CHECK(std::string(props.name) == "lo");
  CHECK(props.ptr_support == NCCL_PTR_HOST);
  CHECK(props.max_recvs == 1);
  CHECK(props.max_p2p_bytes > 0);
  CHECK(api::get_properties(1, &props) == ncclInvalidArgument);
  void* flush_req = reinterpret_cast<void*>(1);
  CHECK(api::iflush(nullptr, 1, nullptr, nullptr, nullptr, &flush_req) == ncclSuccess);
  CHECK(flush_req == nullptr);
  CHECK(api::finalize(ctx) == ncclSuccess);
}
