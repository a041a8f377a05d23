// Process-wide state: concurrent init/finalize/getProperties/listen from several threads (NCCL
// creates communicators from several threads), and dlclose + dlopen again in one process (NCCL
// unloads the plugin when the last communicator ends). Both must leave no thread, no descriptor and
// no state behind.
#include <dlfcn.h>
#include <malloc.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "harness.h"
#include "streams.h"

using namespace rel;

namespace {

// Waits briefly for a count to come back down (a joined thread leaves /proc a moment later).
template <class F>
int settle(F count, int target) {
  int n = count();
  for (int i = 0; i < 100 && n > target; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    n = count();
  }
  return n;
}

// Sends `count` messages over a connection inside this process and checks every byte.
void exchange(zipperf::Plugin& p, const LocalPair& pair, size_t size, Content content, int count) {
  std::vector<uint8_t> src(size ? size : 1), dst(size ? size : 1), expected(size ? size : 1);
  void *smh = nullptr, *rmh = nullptr;
  REQUIRE(p.reg_mr(pair.send_comm, src.data(), size, NCCL_PTR_HOST, &smh) == ncclSuccess);
  REQUIRE(p.reg_mr(pair.recv_comm, dst.data(), size, NCCL_PTR_HOST, &rmh) == ncclSuccess);
  for (int i = 0; i < count; ++i) {
    fill_message(src.data(), size, content, uint64_t(i));
    std::memset(dst.data(), 0xA5, size);
    void *sreq = nullptr, *rreq = nullptr;
    REQUIRE(post_isend(p, pair.send_comm, src.data(), size, 0, smh, &sreq, 10) == ncclSuccess);
    REQUIRE(post_irecv(p, pair.recv_comm, dst.data(), size, 0, rmh, &rreq, 10) == ncclSuccess);
    int sdone = 0, rdone = 0, rsize = -1;
    ncclResult_t sr = ncclSuccess, rr = ncclSuccess;
    const auto t0 = Clock::now();
    while ((!sdone || !rdone) && sr == ncclSuccess && rr == ncclSuccess && seconds_since(t0) < 10) {
      int sz = -1;
      if (!sdone) sr = p.test(sreq, &sdone, &sz);
      if (!rdone) rr = p.test(rreq, &rdone, &rsize);
    }
    REQUIRE(sr == ncclSuccess);
    REQUIRE(rr == ncclSuccess);
    REQUIRE(sdone);
    REQUIRE(rdone);
    CHECK(rsize == int(size));
    CHECK(std::memcmp(dst.data(), src.data(), size) == 0);
  }
  CHECK(p.dereg_mr(pair.send_comm, smh) == ncclSuccess);
  CHECK(p.dereg_mr(pair.recv_comm, rmh) == ncclSuccess);
}

}  // namespace

TEST_CASE("init, finalize, getProperties and listen are safe from many threads at once", "[threads]") {
  set_test_env();
  Watchdog wd(60, "threads calling init/finalize/getProperties/listen concurrently");
  const int base_threads = thread_count(), base_fds = open_fd_count();  // the watchdog included
  std::string error;
  auto plugin = zipperf::Plugin::open(plugin_path(), zipperf::Abi::Auto, &error);
  REQUIRE(plugin);

  constexpr int kThreads = 8, kRounds = 25;
  std::atomic<int> failures{0}, calls{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int round = 0; round < kRounds; ++round) {
        void* ctx = nullptr;
        if (plugin->init(&ctx, uint64_t(t * 1000 + round), NCCL_NET_TRAFFIC_CLASS_UNDEF, zipperf::nccl_logger()) !=
            ncclSuccess) {
          ++failures;
          continue;
        }
        int ndev = 0;
        if (plugin->devices(&ndev) != ncclSuccess || ndev < 1) ++failures;
        zipperf::Properties props;
        if (plugin->get_properties(0, &props) != ncclSuccess || props.name.empty()) ++failures;
        char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
        void* listen_comm = nullptr;
        if (plugin->listen(ctx, 0, handle, &listen_comm) != ncclSuccess || !listen_comm)
          ++failures;
        else if (plugin->close_listen(listen_comm) != ncclSuccess)
          ++failures;
        if (plugin->finalize(ctx) != ncclSuccess) ++failures;
        calls += 6;
      }
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  INFO("warnings:\n" << warnings_text());
  CHECK(failures == 0);
  CHECK(calls == kThreads * kRounds * 6);
  plugin.reset();  // dlclose
  CHECK(settle(thread_count, base_threads) == base_threads);
  CHECK(settle(open_fd_count, base_fds) == base_fds);
}

TEST_CASE("connections on several threads at once, each with its own communicator", "[threads][traffic]") {
  set_test_env();
  std::string error;
  auto plugin = zipperf::Plugin::open(plugin_path(), zipperf::Abi::Auto, &error);
  REQUIRE(plugin);
  Watchdog wd(90, "threads each running their own communicator and connection");
  constexpr int kThreads = 4;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      void* ctx = nullptr;
      if (plugin->init(&ctx, uint64_t(100 + t), NCCL_NET_TRAFFIC_CLASS_UNDEF, zipperf::nccl_logger()) != ncclSuccess) {
        ++failures;
        return;
      }
      LocalPair pair;
      if (connect_local(*plugin, ctx, ctx, &pair, 20) != ncclSuccess) {
        ++failures;
      } else {
        StreamSpec spec;
        spec.size = (t % 2) ? 300000 : 4096;
        spec.content = (t % 2) ? Content::tensor : Content::random;
        spec.count = 64;
        // The receiving end on a second thread, as another rank's progress thread would drive it.
        std::thread rx([&] {
          const StreamResult r = stream_recv(*plugin, pair.recv_comm, spec);
          if (r.result != ncclSuccess || r.corrupted || r.completed != spec.count) ++failures;
        });
        const StreamResult s = stream_send(*plugin, pair.send_comm, spec);
        rx.join();
        if (s.result != ncclSuccess || s.completed != spec.count) ++failures;
      }
      plugin->finalize(ctx);
    });
  }
  for (auto& th : threads) th.join();
  INFO("warnings:\n" << warnings_text());
  CHECK(failures == 0);
}

TEST_CASE("the plugin survives dlclose and dlopen again, with traffic in between", "[reload]") {
  set_test_env();
  Watchdog wd(60, "dlopen/init/traffic/finalize/dlclose cycles");
  const int base_threads = thread_count(), base_fds = open_fd_count();  // the watchdog included
  constexpr int kCycles = 6;
  int unloaded = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    wd.step("cycle " + std::to_string(cycle));
    {
      Net net = Net::open(cycle % 2 ? zipperf::Abi::V11 : zipperf::Abi::V12, uint64_t(cycle));
      REQUIRE(net.plugin);
      REQUIRE(net.init_result == ncclSuccess);
      LocalPair pair;
      REQUIRE(connect_local(*net, net.ctx, net.ctx, &pair, 20) == ncclSuccess);
      exchange(*net, pair, 1 << 20, Content::tensor, 4);  // compressed
      exchange(*net, pair, 200000, Content::random, 4);   // incompressible: raw
      exchange(*net, pair, 0, Content::random, 2);
      CHECK(net->close_send(pair.send_comm) == ncclSuccess);
      CHECK(net->close_recv(pair.recv_comm) == ncclSuccess);
    }  // finalize, then dlclose
    // Whether the library really left the process (it may not, if the loader pins it).
    void* still = dlopen(plugin_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (still) dlclose(still); else ++unloaded;
    INFO("cycle " << cycle);
    CHECK(settle(thread_count, base_threads) == base_threads);
    CHECK(settle(open_fd_count, base_fds) == base_fds);
  }
  std::printf("reload: %d dlopen/dlclose cycles, library unmapped after %d of them\n", kCycles, unloaded);
}

TEST_CASE("dlclose with comms NCCL never closed stops their threads first", "[reload][left_open]") {
  // NCCL's error paths (a failed regMr during connection setup, then ncclCommAbort) can finalize
  // and dlclose the plugin with connections still open. Their stream threads must not outlive the
  // library's code: that was a SIGSEGV in both ranks under real NCCL (docs/reliability.md, bug 9).
  set_test_env();
  Watchdog wd(60, "dlclose with open comms");
  const int base_threads = thread_count(), base_fds = open_fd_count();  // the watchdog included
  for (int cycle = 0; cycle < 3; ++cycle) {
    wd.step("cycle " + std::to_string(cycle));
    Net net = Net::open();
    REQUIRE(net.init_result == ncclSuccess);
    LocalPair pair;
    REQUIRE(connect_local(*net, net.ctx, net.ctx, &pair, 20) == ncclSuccess);
    if (cycle == 1) exchange(*net, pair, 1 << 20, Content::tensor, 2);  // streams idle after traffic
    if (cycle == 2) {  // and with a receive still pending
      static uint8_t dst[4096];
      void* rreq = nullptr;
      REQUIRE(post_irecv(*net, pair.recv_comm, dst, sizeof dst, 0, nullptr, &rreq, 10) == ncclSuccess);
    }
    // No closeSend / closeRecv: ~Net finalizes the context and dlcloses the library.
  }
  // Threads still running in the unmapped library would have crashed this process by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(settle(thread_count, base_threads) == base_threads);
  CHECK(settle(open_fd_count, base_fds) == base_fds);
}

TEST_CASE("dlopen/dlclose cycles do not leak heap", "[reload][heap]") {
  // NCCL loads the plugin again for every new set of communicators; what one load allocates must
  // be given back by its dlclose. Heap in use is measured after a warm-up cycle and after the rest.
  set_test_env();
  Watchdog wd(60, "heap across dlopen/dlclose cycles");
  auto cycle = [] {
    Net net = Net::open();
    REQUIRE(net.init_result == ncclSuccess);
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    void* listen_comm = nullptr;
    REQUIRE(net->listen(net.ctx, 0, handle, &listen_comm) == ncclSuccess);
    REQUIRE(net->close_listen(listen_comm) == ncclSuccess);
    zipperf::clear_captured_log();
  };
  cycle();
  cycle();
  const size_t before = mallinfo2().uordblks;
  constexpr int kCycles = 8;
  for (int i = 0; i < kCycles; ++i) cycle();
  const size_t after = mallinfo2().uordblks;
  const double per_cycle = (double(after) - double(before)) / kCycles;
  std::printf("heap in use: %zu bytes before, %zu after %d more cycles (%.0f bytes per cycle)\n", before, after,
              kCycles, per_cycle);
  CHECK(per_cycle < 4096);
}
