// Soak: many connections in one process, driven by one thread the way NCCL's proxy progress thread
// drives them, with mixed message sizes (0 B to 1 MiB, some receives posted larger than the send)
// and mixed contents (real bf16 gradients, which compress, and random bytes, which go raw). Every
// received byte is checked. RSS is sampled over the run and must stay flat after a warm-up.
// The CI suite `soak` runs a short pass; tools/soak.sh runs millions of messages.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <vector>

#include "harness.h"

using namespace rel;

namespace {

// Message sizes cycle through this list (mostly small, as NCCL's LL traffic is; some large).
constexpr size_t kSizes[] = {0,     1,      13,       512,        4096,  65536 + 5, 4096,    100,
                             200000, 8,     131072,   size_t(1) << 20, 3000,  4096 * 3,  524288 + 7, 2048,
                             64,    40000, 1 << 18,  7,          16384, 777,       1024,    96};
constexpr size_t kMaxSize = size_t(1) << 20;
constexpr size_t kNumSizes = sizeof(kSizes) / sizeof(kSizes[0]);

size_t size_of(uint64_t seq) { return kSizes[seq % kNumSizes]; }
Content content_of(uint64_t seq) { return (seq / kNumSizes) % 2 ? Content::random : Content::tensor; }
// Some receives are posted larger than the message, as NCCL does.
size_t posted_of(uint64_t seq) { return size_of(seq) + (seq % 5 == 0 ? 4096 : 0); }

struct Slot {
  std::unique_ptr<uint8_t[]> buf{new uint8_t[kMaxSize + 4096]};
  void* mh = nullptr;
};

struct Flight {
  int slot;
  void* req;
  uint64_t seq;
};

struct Conn {
  void* send_comm = nullptr;
  void* recv_comm = nullptr;
  std::vector<Slot> sslots, rslots;
  std::vector<int> sfree, rfree;
  std::deque<Flight> sends, recvs;
  uint64_t next_send = 0, next_recv = 0, received = 0;
  uint64_t seed = 0;
};

struct Totals {
  uint64_t messages = 0, bytes = 0, corrupted = 0, errors = 0;
  std::string first_error;
};

void fail(Totals& t, const std::string& what) {
  ++t.errors;
  if (t.first_error.empty()) t.first_error = what;
}

// One pass over a connection: post what fits, test the oldest send and the oldest receive.
void progress(zipperf::Plugin& p, Conn& c, uint64_t target, std::vector<uint8_t>& expected, Totals& t) {
  while (!c.sfree.empty() && c.next_send < target) {
    const int s = c.sfree.back();
    const uint64_t seq = c.next_send;
    fill_message(c.sslots[size_t(s)].buf.get(), size_of(seq), content_of(seq), c.seed + seq);
    void* req = nullptr;
    if (p.isend(c.send_comm, c.sslots[size_t(s)].buf.get(), size_of(seq), 0, c.sslots[size_t(s)].mh, &req) != ncclSuccess)
      return fail(t, "isend failed");
    if (!req) break;
    c.sfree.pop_back();
    c.sends.push_back({s, req, c.next_send++});
  }
  while (!c.rfree.empty() && c.next_recv < target) {
    const int s = c.rfree.back();
    const uint64_t seq = c.next_recv;
    void* bufs[1] = {c.rslots[size_t(s)].buf.get()};
    size_t sizes[1] = {posted_of(seq)};
    int tags[1] = {0};
    void* mhs[1] = {c.rslots[size_t(s)].mh};
    void* req = reinterpret_cast<void*>(0x1);
    if (p.irecv(c.recv_comm, 1, bufs, sizes, tags, mhs, &req) != ncclSuccess) return fail(t, "irecv failed");
    if (!req) break;
    c.rfree.pop_back();
    c.recvs.push_back({s, req, c.next_recv++});
  }
  if (!c.sends.empty()) {
    int done = 0, size = -1;
    if (p.test(c.sends.front().req, &done, &size) != ncclSuccess) return fail(t, "test(send) failed");
    if (done) {
      c.sfree.push_back(c.sends.front().slot);
      c.sends.pop_front();
    }
  }
  if (!c.recvs.empty()) {
    int done = 0, size = -1;
    if (p.test(c.recvs.front().req, &done, &size) != ncclSuccess) return fail(t, "test(recv) failed");
    if (done) {
      const Flight f = c.recvs.front();
      c.recvs.pop_front();
      const size_t n = size_of(f.seq);
      fill_message(expected.data(), n, content_of(f.seq), c.seed + f.seq);
      if (size != int(n) || (n && std::memcmp(c.rslots[size_t(f.slot)].buf.get(), expected.data(), n) != 0)) {
        ++t.corrupted;
        fail(t, "message " + std::to_string(f.seq) + " reported done with wrong size or bytes");
      }
      c.rfree.push_back(f.slot);
      ++c.received;
      ++t.messages;
      t.bytes += n;
    }
  }
}

// Sums the numeric fields of the plugin's per-comm stats lines (ZIPNET_STATS_FILE).
nlohmann::json summarize_stats(const std::string& path) {
  std::map<std::string, double> sums;
  size_t lines = 0;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    ++lines;
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.value().is_number()) sums[it.key()] += it.value().get<double>();
  }
  nlohmann::json out = {{"comm_records", lines}};
  for (auto& [k, v] : sums) out["sum_" + k] = v;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zipnet soak: many comms, mixed sizes and contents, every byte checked, RSS sampled"};
  uint64_t messages = 200000;
  double seconds = 0;
  int comms = 16, contexts = 4, inflight = 4, samples = 40;
  double rss_slack_mib = 24, warmup = 0.25;
  bool json = false;
  app.add_option("--messages", messages, "messages to receive in all (across comms)");
  app.add_option("--seconds", seconds, "stop after this long even if fewer messages (0: no limit)");
  app.add_option("--comms", comms, "connections (send+recv comm pairs)");
  app.add_option("--contexts", contexts, "communicators (plugin init contexts) the connections share");
  app.add_option("--inflight", inflight, "requests in flight per comm and direction (NCCL: up to 8)");
  app.add_option("--samples", samples, "RSS samples over the run");
  app.add_option("--rss-slack-mib", rss_slack_mib, "allowed RSS growth after the warm-up");
  app.add_option("--warmup", warmup, "fraction of the run before RSS must be flat");
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);

  set_test_env();
  char stats_path[] = "/tmp/zipnet-soak-stats-XXXXXX";
  const int stats_fd = mkstemp(stats_path);
  if (stats_fd >= 0) close(stats_fd);
  if (!std::getenv("ZIPNET_STATS_FILE")) setenv("ZIPNET_STATS_FILE", stats_path, 1);
  zipperf::set_print_level(NCCL_LOG_WARN);

  std::string error;
  auto plugin = zipperf::Plugin::open(plugin_path(), zipperf::Abi::Auto, &error);
  if (!plugin) {
    std::fprintf(stderr, "soak: cannot open plugin '%s': %s\n", plugin_path().c_str(), error.c_str());
    return 1;
  }
  std::vector<void*> ctxs(size_t(contexts), nullptr);
  for (int i = 0; i < contexts; ++i)
    if (plugin->init(&ctxs[size_t(i)], uint64_t(i + 1), NCCL_NET_TRAFFIC_CLASS_UNDEF, zipperf::nccl_logger()) != ncclSuccess) {
      std::fprintf(stderr, "soak: init failed\n");
      return 1;
    }
  std::vector<Conn> conns(static_cast<size_t>(comms));
  for (int i = 0; i < comms; ++i) {
    Conn& c = conns[size_t(i)];
    c.seed = uint64_t(i) << 40;
    LocalPair pair;
    void* ctx = ctxs[size_t(i % contexts)];
    if (connect_local(*plugin, ctx, ctx, &pair, 30) != ncclSuccess) {
      std::fprintf(stderr, "soak: connection %d failed\n", i);
      return 1;
    }
    c.send_comm = pair.send_comm, c.recv_comm = pair.recv_comm;
    c.sslots.resize(size_t(inflight));
    c.rslots.resize(size_t(inflight));
    for (int k = 0; k < inflight; ++k) {
      if (plugin->reg_mr(c.send_comm, c.sslots[size_t(k)].buf.get(), kMaxSize + 4096, NCCL_PTR_HOST, &c.sslots[size_t(k)].mh) != ncclSuccess ||
          plugin->reg_mr(c.recv_comm, c.rslots[size_t(k)].buf.get(), kMaxSize + 4096, NCCL_PTR_HOST, &c.rslots[size_t(k)].mh) != ncclSuccess) {
        std::fprintf(stderr, "soak: regMr failed\n");
        return 1;
      }
      c.sfree.push_back(k), c.rfree.push_back(k);
    }
  }

  const uint64_t per_conn = (messages + uint64_t(comms) - 1) / uint64_t(comms);
  std::vector<uint8_t> expected(kMaxSize + 4096);
  Totals t;
  std::vector<std::pair<uint64_t, size_t>> rss;  // (messages so far, RSS bytes)
  const uint64_t sample_every = std::max<uint64_t>(1, messages / uint64_t(samples));
  uint64_t next_sample = 0;
  const auto t0 = Clock::now();
  auto last_progress = t0;
  uint64_t last_messages = 0;
  bool stalled = false;
  while (t.messages < per_conn * uint64_t(comms) && t.errors == 0) {
    for (Conn& c : conns) progress(*plugin, c, per_conn, expected, t);
    if (t.messages >= next_sample) {
      rss.push_back({t.messages, rss_bytes()});
      next_sample += sample_every;
    }
    if (t.messages != last_messages) last_messages = t.messages, last_progress = Clock::now();
    if (seconds_since(last_progress) > 30) {
      stalled = true;
      fail(t, "no message completed for 30 s");
    }
    if (seconds > 0 && seconds_since(t0) > seconds) break;
  }
  const double elapsed = seconds_since(t0);
  rss.push_back({t.messages, rss_bytes()});

  for (Conn& c : conns) {
    for (Slot& s : c.sslots) plugin->dereg_mr(c.send_comm, s.mh);
    for (Slot& s : c.rslots) plugin->dereg_mr(c.recv_comm, s.mh);
    plugin->close_send(c.send_comm);
    plugin->close_recv(c.recv_comm);
  }
  for (void* ctx : ctxs) plugin->finalize(ctx);
  plugin.reset();

  // Flat memory: nothing above the RSS at the end of the warm-up, plus slack.
  const size_t warm_index = std::min(rss.size() - 1, size_t(double(rss.size()) * warmup));
  const size_t warm_rss = rss[warm_index].second;
  size_t peak_after = 0;
  for (size_t i = warm_index; i < rss.size(); ++i) peak_after = std::max(peak_after, rss[i].second);
  const double growth_mib = (double(peak_after) - double(warm_rss)) / (1 << 20);
  const bool flat = growth_mib <= rss_slack_mib;

  nlohmann::json out = {{"messages", t.messages},
                        {"bytes", t.bytes},
                        {"seconds", elapsed},
                        {"messages_per_s", double(t.messages) / elapsed},
                        {"comms", comms},
                        {"contexts", contexts},
                        {"corrupted", t.corrupted},
                        {"errors", t.errors},
                        {"first_error", t.first_error},
                        {"stalled", stalled},
                        {"rss_mib_after_warmup", double(warm_rss) / (1 << 20)},
                        {"rss_mib_peak_after_warmup", double(peak_after) / (1 << 20)},
                        {"rss_growth_mib", growth_mib},
                        {"rss_flat", flat}};
  nlohmann::json samples_json = nlohmann::json::array();
  for (auto& [m, r] : rss) samples_json.push_back({m, double(r) / (1 << 20)});
  out["rss_samples_mib"] = samples_json;
  out["plugin_stats"] = summarize_stats(std::getenv("ZIPNET_STATS_FILE"));
  std::remove(stats_path);
  const bool ok = t.errors == 0 && t.corrupted == 0 && flat && t.messages > 0;
  out["ok"] = ok;
  if (json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("soak: %llu messages (%.2f GB) over %d comms in %.1f s (%.0f msg/s); corrupted %llu, errors %llu%s%s\n",
                (unsigned long long)t.messages, double(t.bytes) / 1e9, comms, elapsed, double(t.messages) / elapsed,
                (unsigned long long)t.corrupted, (unsigned long long)t.errors, t.first_error.empty() ? "" : ": ",
                t.first_error.c_str());
    std::printf("soak: RSS %.1f MiB after warm-up, peak %.1f MiB after it (growth %.1f MiB, allowed %.1f): %s\n",
                double(warm_rss) / (1 << 20), double(peak_after) / (1 << 20), growth_mib, rss_slack_mib,
                flat ? "flat" : "GROWING");
    std::printf("soak: RSS samples (messages: MiB):");
    for (auto& [m, r] : rss) std::printf(" %llu:%.1f", (unsigned long long)m, double(r) / (1 << 20));
    std::printf("\nsoak: plugin stats %s\n", out["plugin_stats"].dump().c_str());
  }
  return ok ? 0 : 1;
}
