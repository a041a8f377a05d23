// NCCL's GPU polls the flags inside LL and LL128 lines while the plugin is still writing the
// receive buffer, and reads a line as soon as its flag is valid, before test() says done. So a
// line whose flag is visible must already hold its data: LL per 8-byte {data, flag} half, LL128
// per 128-byte line (flag last). A watcher thread here plays the GPU: it scans the receive buffer
// in ascending order while the plugin decodes into it and counts lines seen with a valid flag but
// wrong data. Compression is forced on for small messages so the decoder's writes are watched too.
// The watcher starts before the send, and after the transfer ends it makes one last pass, so that
// every line is counted whatever the scheduling; how many it saw while the transfer ran depends on
// the scheduling (a loaded CI machine may give it none), so that count is reported, not asserted.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <thread>

#include "plugin_test_util.h"

using namespace zipperf;

namespace {

nlohmann::json watch_messages(Shape shape, size_t size, int messages) {
  set_print_level(NCCL_LOG_WARN);
  std::string err;
  auto pair = LocalPair::create(plugin_test::plugin_path(), Abi::Auto, 10, &err);
  if (!pair) return {{"error", err}};
  Plugin& pl = pair->plugin();
  SlotBuffers sbuf(1, size), rbuf(1, size);
  if (pl.reg_mr(pair->send_comm(), sbuf.base(), sbuf.total(), NCCL_PTR_HOST, &sbuf.mhandle) != ncclSuccess ||
      pl.reg_mr(pair->recv_comm(), rbuf.base(), rbuf.total(), NCCL_PTR_HOST, &rbuf.mhandle) != ncclSuccess)
    return {{"error", "regMr failed"}};
  uint64_t violations = 0, flagged_lines = 0, inflight_lines = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  for (int m = 0; m < messages && err.empty(); ++m) {
    uint8_t* s = sbuf.base();
    uint8_t* r = rbuf.base();
    plugin_test::tensors().fill(static_cast<uint64_t>(m) * 7919, size, shape, s);
    // Re-stamp the flags with this message's value (fill() uses index + 1).
    const uint64_t flag = static_cast<uint64_t>(m) * 7919 + 1;
    std::memset(r, 0xA5, size);
    void* rreq = nullptr;
    void* data = r;
    size_t posted = size;
    int tag = 0;
    ncclResult_t res;
    do res = pl.irecv(pair->recv_comm(), 1, &data, &posted, &tag, &rbuf.mhandle, &rreq);
    while (res == ncclSuccess && rreq == nullptr && Clock::now() < deadline);
    if (res != ncclSuccess || !rreq) return {{"error", "irecv failed"}};

    std::atomic<bool> stop{false}, started{false};
    uint64_t bad = 0, seen = 0, seen_inflight = 0;
    std::thread gpu([&] {
      const size_t line = shape == Shape::LL ? 16 : 128;
      std::vector<bool> done(size / line * 2, false);
      size_t remaining = shape == Shape::LL ? size / 8 : size / 128;
      started = true;
      bool last = false;
      while (remaining > 0 && !last) {
        last = stop.load(std::memory_order_acquire);  // the transfer is done: one more pass
        if (last) seen_inflight = seen;
        for (size_t off = 0; off < size; off += line) {
          if (shape == Shape::LL) {
            for (int half = 0; half < 2; ++half) {
              const size_t at = off + half * 8;
              if (done[at / 8]) continue;
              uint64_t v = __atomic_load_n(reinterpret_cast<uint64_t*>(r + at), __ATOMIC_ACQUIRE);
              if ((v >> 32) != static_cast<uint32_t>(flag)) continue;
              uint32_t want;
              std::memcpy(&want, s + at, 4);
              bad += static_cast<uint32_t>(v) != want;
              done[at / 8] = true;
              ++seen;
              --remaining;
            }
          } else {
            if (done[off / 128]) continue;
            uint64_t f = __atomic_load_n(reinterpret_cast<uint64_t*>(r + off + 120), __ATOMIC_ACQUIRE);
            if (f != flag) continue;
            bad += std::memcmp(r + off, s + off, 120) != 0;
            done[off / 128] = true;
            ++seen;
            --remaining;
          }
        }
      }
      if (!last) seen_inflight = seen;  // every line arrived while the watcher looked
    });
    while (!started) std::this_thread::yield();
    void* sreq = nullptr;
    do res = pl.isend(pair->send_comm(), s, size, 0, sbuf.mhandle, &sreq);
    while (res == ncclSuccess && sreq == nullptr && Clock::now() < deadline);
    int sd = 0, rd = 0, ss = 0, rs = 0;
    while (res == ncclSuccess && sreq && !(sd && rd) && Clock::now() < deadline) {
      if (!sd) res = pl.test(sreq, &sd, &ss);
      if (res == ncclSuccess && !rd) res = pl.test(rreq, &rd, &rs);
    }
    stop = true;
    gpu.join();
    if (res != ncclSuccess || !sd || !rd) err = "transfer failed or timed out";
    else if (rs != static_cast<int>(size) || std::memcmp(r, s, size) != 0) err = "wrong bytes after done";
    violations += bad;
    flagged_lines += seen;
    inflight_lines += seen_inflight;
  }
  pl.dereg_mr(pair->send_comm(), sbuf.mhandle);
  pl.dereg_mr(pair->recv_comm(), rbuf.mhandle);
  sbuf.mhandle = rbuf.mhandle = nullptr;
  std::string e2 = pair->close();
  if (!err.empty() || !e2.empty()) return {{"error", err.empty() ? e2 : err}};
  return {{"violations", violations}, {"flagged_lines", flagged_lines}, {"inflight_lines", inflight_lines}};
}

}  // namespace

TEST_CASE("a line whose flag is visible already holds its data (LL, LL128), compressed and raw", "[ll-order]") {
  const Shape shape = GENERATE(Shape::LL, Shape::LL128);
  const bool compress = GENERATE(true, false);
  const size_t size = shape == Shape::LL ? (64 << 10) : 614400;  // NCCL's step sizes
  INFO(shape_name(shape) << (compress ? " compressed" : " ZIPNET_COMPRESS=0"));
  ChildOutcome o = run_in_child({{"ZIPNET_COMPRESS", compress ? "1" : "0"},
                                 {"ZIPNET_MIN_COMPRESS_BYTES", "4K"},
                                 {"ZIPNET_SUBCHUNK_BYTES", "16K"},
                                 {"ZIPNET_ADAPTIVE", "0"}},
                                60, [&] { return watch_messages(shape, size, 24); });
  INFO(o.error << " " << o.value.dump());
  REQUIRE(o.ok);
  REQUIRE_FALSE(o.value.contains("error"));
  CHECK(o.value["violations"].get<uint64_t>() == 0);
  // The watcher must have matched every line's flag (otherwise the check proved nothing).
  const uint64_t lines_per_message = shape == Shape::LL ? size / 8 : size / 128;
  CHECK(o.value["flagged_lines"].get<uint64_t>() == 24 * lines_per_message);
  if (o.value["inflight_lines"].get<uint64_t>() == 0) WARN("the watcher saw no line while a transfer ran");
}
