// zipnet-latency-ab: small-message latency of the pipeline with compression on vs off, measured
// in ONE process with the messages of both modes interleaved, so that thread placement, CPU
// frequency and load hit both modes alike (zipperf --latency compares separate process pairs run
// one after the other, whose medians move by microseconds, under load by tens, between runs of
// the same mode).
//
// Three loopback connections of the real pipeline (SendComm/RecvComm over TcpLink, one shared
// worker pool): "on" (ZIPNET_COMPRESS=1 settings, adaptive policy on, default 128K threshold),
// "off" (compression off) and "off2" (compression off again: an A/A control whose difference to
// "off" is the noise floor of this measurement). Each round sends one message on each connection,
// in a rotating order, and the whole run is repeated on fresh connections (--repeat). One thread
// drives everything the way NCCL's proxy does: post irecv, post isend, poll test() on both
// (yielding every 32 idle polls). Latency = isend called -> the receive's test() reports done.
// Every received message is compared with what was sent.
//
// Besides each mode's median it prints the median of the per-round differences (on - off, and
// off2 - off): messages of one round are microseconds apart, so a burst of load from elsewhere
// hits both, while the medians alone flip between the fast and the slow mode of a bimodal
// distribution on a loaded machine. Not even the paired figure survives a connection whose
// threads stay unlucky for a whole run, hence the repeats; the A/A column shows what is left.
//
// A benchmark, not a test: it prints figures and asserts no timing (targets live in
// docs/benchmarks.md). Exit status 1 only if a transfer fails or data differs.
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "plugin/pipeline/recv_comm.h"
#include "plugin/pipeline/send_comm.h"
#include "plugin/pipeline/worker_pool.h"
#include "transport/transport.h"

using namespace zipnet;
using Clock = std::chrono::steady_clock;

namespace {

struct Conn {
  std::string name;
  std::unique_ptr<pipeline::SendComm> send;
  std::unique_ptr<pipeline::RecvComm> recv;
  std::vector<double> lat_us, isend_us;
};

// Listen + connect over loopback until both ends have their link.
bool make_links(transport::Transport& tr, std::unique_ptr<transport::Link>* tx, std::unique_ptr<transport::Link>* rx,
                std::string* err) {
  uint8_t handle[transport::kHandleBytes] = {};
  auto listener = tr.listen(0, handle, err);
  if (!listener) return false;
  auto connector = tr.connect(0, handle, err);
  if (!connector) return false;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!*tx || !*rx) {
    if (!*tx && connector->poll_connect(tx, err) == transport::Poll::failed) return false;
    if (!*rx && listener->poll_accept(rx, err) == transport::Poll::failed) return false;
    if (Clock::now() > deadline) {
      *err = "loopback connect/accept did not finish in 20 s";
      return false;
    }
    sched_yield();
  }
  return true;
}

double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// One message on c: returns "" or what went wrong.
std::string one_message(Conn& c, const uint8_t* src, uint8_t* dst, size_t size, bool record) {
  void* rreq = nullptr;
  void* sreq = nullptr;
  void* rdata = dst;
  size_t rsize = size;
  if (c.recv->irecv(1, &rdata, &rsize, &rreq) != ncclSuccess || !rreq) return "irecv failed";
  const Clock::time_point t0 = Clock::now();
  if (c.send->isend(const_cast<uint8_t*>(src), size, &sreq) != ncclSuccess || !sreq) return "isend failed";
  const Clock::time_point t_posted = Clock::now();
  Clock::time_point t_done{};
  bool sdone = false, rdone = false;
  const auto deadline = t0 + std::chrono::seconds(20);
  for (unsigned idle = 0; !sdone || !rdone;) {
    int done = 0, got = -1;
    bool moved = false;
    if (!rdone) {
      if (c.recv->test(static_cast<pipeline::Request*>(rreq), &done, &got) != ncclSuccess) return "receive failed";
      if (done) {
        t_done = Clock::now();
        rdone = moved = true;
        if (got != int(size)) return "receive reported " + std::to_string(got) + " bytes";
      }
    }
    if (!sdone) {
      if (c.send->test(static_cast<pipeline::Request*>(sreq), &done, &got) != ncclSuccess) return "send failed";
      if (done) sdone = moved = true;
    }
    if (moved) continue;
    if (++idle % 32 == 0) {
      if (Clock::now() > deadline) return "message did not complete in 20 s";
      sched_yield();
    }
  }
  if (std::memcmp(src, dst, size) != 0) return "received bytes differ from the sent ones";
  if (record) {
    c.lat_us.push_back(us_between(t0, t_done));
    c.isend_us.push_back(us_between(t0, t_posted));
  }
  return {};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Figures of one size in one run, all in microseconds.
struct Row {
  double on = 0, off = 0, off2 = 0;     // medians per mode
  double diff = 0, diff_aa = 0;         // on - off, off2 - off
  double paired = 0, paired_aa = 0;     // medians of per-round on - off and off2 - off
  double isend_on = 0, isend_off = 0;   // median time inside isend()
};

// Three fresh connections (new stream threads: on a loaded machine one connection's threads can
// stay unlucky for a whole run, which is why runs are repeated), every size, then closed.
bool run_once(transport::Transport& tr, const pipeline::Settings& on, const pipeline::Settings& off,
              const std::vector<size_t>& sizes, uint64_t warmup, uint64_t iters, const std::vector<uint8_t>& data,
              std::vector<Row>* rows) {
  std::string err;
  std::vector<Conn> conns;
  for (auto [name, settings] : {std::pair{"on", on}, std::pair{"off", off}, std::pair{"off2", off}}) {
    std::unique_ptr<transport::Link> tx, rx;
    if (!make_links(tr, &tx, &rx, &err)) {
      std::fprintf(stderr, "zipnet-latency-ab: %s\n", err.c_str());
      return false;
    }
    Conn c;
    c.name = name;
    c.send = pipeline::SendComm::create(std::move(tx), settings, &err);
    if (c.send) c.recv = pipeline::RecvComm::create(std::move(rx), settings, &err);
    if (!c.send || !c.recv) {
      std::fprintf(stderr, "zipnet-latency-ab: %s\n", err.c_str());
      return false;
    }
    conns.push_back(std::move(c));
  }
  std::vector<uint8_t> dst(data.size());
  for (size_t size : sizes) {
    for (Conn& c : conns) c.lat_us.clear(), c.isend_us.clear();
    for (uint64_t i = 0; i < warmup + iters; ++i)
      for (size_t k = 0; k < conns.size(); ++k) {  // rotate the order so no mode always goes first
        Conn& c = conns[(i + k) % conns.size()];
        std::string e = one_message(c, data.data(), dst.data(), size, i >= warmup);
        if (!e.empty()) {
          std::fprintf(stderr, "zipnet-latency-ab: %s, %zu bytes, message %llu: %s\n", c.name.c_str(), size,
                       (unsigned long long)i, e.c_str());
          return false;
        }
      }
    Row r;
    r.on = median(conns[0].lat_us);
    r.off = median(conns[1].lat_us);
    r.off2 = median(conns[2].lat_us);
    r.diff = r.on - r.off;
    r.diff_aa = r.off2 - r.off;
    std::vector<double> d_on, d_aa;  // same round, so the same moment's load
    for (size_t i = 0; i < conns[1].lat_us.size(); ++i) {
      d_on.push_back(conns[0].lat_us[i] - conns[1].lat_us[i]);
      d_aa.push_back(conns[2].lat_us[i] - conns[1].lat_us[i]);
    }
    r.paired = median(d_on);
    r.paired_aa = median(d_aa);
    r.isend_on = median(conns[0].isend_us);
    r.isend_off = median(conns[1].isend_us);
    rows->push_back(r);
  }
  return true;
}

void print_header() {
  std::printf("%10s %9s %9s %9s %9s %9s %15s %15s %12s %12s\n", "bytes", "on", "off", "off2", "on-off",
              "off2-off", "paired on-off", "paired off2-off", "isend on", "isend off");
}

void print_row(size_t size, const Row& r) {
  std::printf("%10zu %9.2f %9.2f %9.2f %9.2f %9.2f %15.2f %15.2f %12.3f %12.3f\n", size, r.on, r.off, r.off2,
              r.diff, r.diff_aa, r.paired, r.paired_aa, r.isend_on, r.isend_off);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zipnet-latency-ab: pipeline latency, compression on vs off, interleaved in one process"};
  std::vector<size_t> sizes{256, 4096, 16384, 65536};
  uint64_t iters = 2000, warmup = 200;
  int threads = 2, repeat = 5;
  bool each = false;
  std::string input = std::string(ZIPNET_TEST_DATA_DIR) + "/tensors/grads.bf16";
  app.add_option("--sizes", sizes, "message sizes in bytes (default 256 4096 16384 65536)");
  app.add_option("--iters", iters, "timed messages per connection and size (default 2000)");
  app.add_option("--warmup", warmup, "untimed messages per connection and size first (default 200)");
  app.add_option("--repeat", repeat, "runs, each on fresh connections; the median of each column is kept (default 5)")
      ->check(CLI::Range(1, 1000));
  app.add_flag("--each", each, "also print every run's table");
  app.add_option("--threads", threads, "codec worker threads (default 2)")->check(CLI::Range(1, 64));
  app.add_option("--input", input, "file whose first bytes are sent (default test/data/tensors/grads.bf16)");
  CLI11_PARSE(app, argc, argv);

  std::ifstream f(input, std::ios::binary);
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t max_size = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  if (sizes.empty() || data.size() < max_size) {
    std::fprintf(stderr, "zipnet-latency-ab: %s has %zu bytes, %zu needed\n", input.c_str(), data.size(), max_size);
    return 2;
  }

  transport::Config tc;
  tc.ifname = "=lo";
  std::string err;
  auto tr = transport::make_tcp_transport(tc, &err);
  if (!tr) {
    std::fprintf(stderr, "zipnet-latency-ab: no loopback transport: %s\n", err.c_str());
    return 1;
  }
  pipeline::WorkerPool pool(threads);
  pipeline::Settings on;  // the defaults are the params' defaults: compress, adaptive, 128K threshold
  on.pool = &pool;
  on.pool_threads = threads;
  pipeline::Settings off = on;
  off.compress = false;

  double load[3] = {0, 0, 0};
  if (FILE* la = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
    std::fclose(la);
  }
  std::printf("zipnet-latency-ab: loopback, 2 streams, %d codec threads, %s, %llu timed messages per mode "
              "and size, interleaved, %d runs; load average %.2f %.2f %.2f; all figures in us\n",
              threads, input.c_str(), (unsigned long long)iters, repeat, load[0], load[1], load[2]);
  std::vector<std::vector<Row>> runs(static_cast<size_t>(repeat));
  for (int k = 0; k < repeat; ++k) {
    if (!run_once(*tr, on, off, sizes, warmup, iters, data, &runs[size_t(k)])) return 1;
    if (each) {
      std::printf("run %d\n", k + 1);
      print_header();
      for (size_t s = 0; s < sizes.size(); ++s) print_row(sizes[s], runs[size_t(k)][s]);
    }
  }
  std::printf("median of %d runs (each column on its own)\n", repeat);
  print_header();
  for (size_t s = 0; s < sizes.size(); ++s) {
    auto col = [&](double Row::*field) {
      std::vector<double> v;
      for (const auto& run : runs) v.push_back(run[s].*field);
      return median(v);
    };
    Row m;
    for (double Row::*field : {&Row::on, &Row::off, &Row::off2, &Row::diff, &Row::diff_aa, &Row::paired, &Row::paired_aa, &Row::isend_on,
                               &Row::isend_off})
      m.*field = col(field);
    print_row(sizes[s], m);
  }
  return 0;
}
