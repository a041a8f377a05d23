// zipperf: drives a NCCL net plugin exactly as NCCL's proxy does, between two processes, checks
// every byte, and reports throughput with compression against the same plugin with
// ZIPNET_COMPRESS=0 in the same run (as ib_write_bw does for verbs). See tools/zipperf/README.md.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver.h"
#include "netns.h"
#include "stats_file.h"

using namespace zipperf;

namespace {

std::optional<size_t> parse_size(std::string s) {
  // 4096, 64K, 64KiB, 4M, 1G (binary units)
  size_t mult = 1;
  while (!s.empty() && (s.back() == 'B' || s.back() == 'b' || s.back() == 'i')) s.pop_back();
  if (!s.empty()) {
    switch (s.back()) {
      case 'K': case 'k': mult = 1ull << 10; s.pop_back(); break;
      case 'M': case 'm': mult = 1ull << 20; s.pop_back(); break;
      case 'G': case 'g': mult = 1ull << 30; s.pop_back(); break;
      default: break;
    }
  }
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoull(s) * mult;
}

std::string human_bytes(double b) {
  if (b >= 1 << 30) return fmt::format("{:.1f} GiB", b / (1 << 30));
  if (b >= 1 << 20) return fmt::format("{:.1f} MiB", b / (1 << 20));
  if (b >= 1 << 10) return fmt::format("{:.1f} KiB", b / (1 << 10));
  return fmt::format("{:.0f} B", b);
}

struct Measured {
  RunReport report;
  std::optional<double> wire_ratio;  // original / wire bytes, from the plugin's stats file
  long long veth_tx = -1;
};

// One run with compression on or off. The plugin appends its per-comm stats to a file we name.
Measured measure(RunConfig cfg, bool compress, const Payload& payload, const NetnsPair* ns) {
  Measured m;
  const std::string stats = fmt::format("/tmp/zipperf-stats-{}-{}.jsonl", getpid(), compress ? "c" : "r");
  std::remove(stats.c_str());
  cfg.env.push_back({"ZIPNET_COMPRESS", compress ? "1" : "0"});
  cfg.env.push_back({"ZIPNET_STATS_FILE", stats});
  long long tx0 = ns ? ns->sender_tx_bytes() : -1;
  m.report = run_pair(cfg, payload);
  long long tx1 = ns ? ns->sender_tx_bytes() : -1;
  if (tx0 >= 0 && tx1 >= tx0) m.veth_tx = tx1 - tx0;
  m.wire_ratio = send_ratio_from_stats_file(stats);
  std::remove(stats.c_str());
  return m;
}

void print_side_warnings(const RunReport& r) {
  for (const std::string& w : r.receiver.warnings) fmt::print(stderr, "  receiver WARN: {}\n", w);
  for (const std::string& w : r.sender.warnings) fmt::print(stderr, "  sender WARN: {}\n", w);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zipperf: drive a NCCL net plugin like NCCL's proxy, verify every byte, compare compressed vs raw"};
  std::string plugin = default_plugin_path(argv[0]);
  std::string size_text = "4M", netns_rate, shape_text = "flat", random_text = "32M";
  std::vector<std::string> inputs, env_pairs;
  std::vector<std::string> lat_sizes_text{"256", "4K", "16K", "64K"};
  uint64_t iters = 0, warmup = 0;
  int inflight = 8, abi_num = 0, repeat = 1, conns = 1;
  double timeout = 120;
  bool json = false, latency = false, no_raw = false, no_verify = false;
  app.add_option("--plugin", plugin, "the plugin .so (default: the one built next to zipperf)");
  app.add_option("--abi", abi_num, "force ncclNetPlugin_v11 or _v12 (default: v12, else v11)")->check(CLI::IsMember({0, 11, 12}));
  app.add_option("--size", size_text, "bytes per message (4096, 64K, 4M...)");
  app.add_option("--iters", iters, "timed messages (default: 256 MiB worth, at least 64; latency: 2000)");
  app.add_option("--warmup", warmup, "messages before the timed ones (default: 16; latency: 200)");
  app.add_option("--inflight", inflight, "messages in flight per connection (NCCL: 8)")->check(CLI::Range(1, 32));
  app.add_option("--conns", conns, "connections between the two ends, like NCCL's channels to one peer; each moves "
                 "--iters messages (bandwidth runs only)")->check(CLI::Range(1, 32));
  app.add_option("--input", inputs, "tensor files whose bytes are cycled into the messages (default: random bytes)");
  app.add_option("--random-pool", random_text, "bytes of random data messages are cut from, when no --input");
  app.add_option("--shape", shape_text, "flat (Simple), LL or LL128 lines with in-line flags")->check(CLI::IsMember({"flat", "LL", "LL128"}));
  app.add_option("--netns", netns_rate, "run the ends in two network namespaces over a veth pair shaped to RATE (e.g. 10gbit)");
  app.add_flag("--latency", latency, "median one-way latency per message size, one message at a time");
  app.add_option("--latency-sizes", lat_sizes_text, "message sizes for --latency");
  app.add_option("--env", env_pairs, "NAME=VALUE set in both processes before the plugin loads (repeatable)");
  app.add_option("--repeat", repeat, "runs of each of compressed/raw (alternating); the median is reported")->check(CLI::Range(1, 20));
  app.add_flag("--no-raw", no_raw, "skip the ZIPNET_COMPRESS=0 run");
  app.add_flag("--no-verify", no_verify, "do not compare received bytes (measures the driver's own cost)");
  app.add_option("--timeout", timeout, "seconds one run may take before it counts as hung");
  app.add_flag("--json", json, "print one JSON object instead of the table");
  CLI11_PARSE(app, argc, argv);

  RunConfig cfg;
  cfg.plugin_path = plugin;
  cfg.abi = abi_num == 11 ? Abi::V11 : abi_num == 12 ? Abi::V12 : Abi::Auto;
  cfg.timeout_s = timeout;
  cfg.spec.inflight = inflight;
  cfg.spec.verify = !no_verify;
  if (latency && conns != 1) {
    fmt::print(stderr, "zipperf: --latency measures one connection; drop --conns\n");
    return 2;
  }
  cfg.conns = conns;
  cfg.spec.shape = shape_text == "LL" ? Shape::LL : shape_text == "LL128" ? Shape::LL128 : Shape::Flat;
  for (const std::string& kv : env_pairs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) {
      fmt::print(stderr, "zipperf: --env wants NAME=VALUE, got '{}'\n", kv);
      return 2;
    }
    cfg.env.push_back({kv.substr(0, eq), kv.substr(eq + 1)});
  }

  std::string err;
  Payload payload;
  if (!inputs.empty()) {
    payload = Payload::from_files(inputs, &err);
  } else {
    auto pool = parse_size(random_text);
    if (!pool) err = "bad --random-pool " + random_text;
    else payload = Payload::random(*pool, 0x5eed);
  }
  if (!err.empty()) {
    fmt::print(stderr, "zipperf: {}\n", err);
    return 2;
  }

  std::unique_ptr<NetnsPair> ns;
  std::string link = "loopback";
  if (!netns_rate.empty()) {
    if (std::string why = NetnsPair::unavailable_reason(); !why.empty()) {
      fmt::print(stderr, "zipperf: --netns is not possible here: {}\n", why);
      return 77;
    }
    ns = NetnsPair::create(netns_rate, &err);
    if (!ns) {
      fmt::print(stderr, "zipperf: could not build the namespaces: {}\n", err);
      return 1;
    }
    cfg.netns_sender = ns->sender_ns();
    cfg.netns_receiver = ns->receiver_ns();
    cfg.env.push_back({"ZIPNET_SOCKET_IFNAME", std::string("=") + NetnsPair::ifname()});
    link = fmt::format("netns veth {} ({} -> {})", netns_rate, ns->sender_ip(), ns->receiver_ip());
  }

  nlohmann::json out;
  out["plugin"] = plugin;
  out["link"] = link;
  out["data"] = payload.description();
  out["shape"] = shape_name(cfg.spec.shape);
  out["inflight"] = inflight;
  out["conns"] = conns;
  bool all_ok = true;

  if (latency) {
    cfg.mode = Mode::Latency;
    cfg.spec.inflight = 1;
    cfg.iters = iters ? iters : 2000;
    cfg.warmup = warmup ? warmup : 200;
    out["messages"] = cfg.iters;
    nlohmann::json rows = nlohmann::json::array();
    uint64_t verified = 0;
    if (!json)
      fmt::print("zipperf latency: {}, {}, median one-way time of {} messages, one in flight{}\n{:>10} {:>16} {:>16} {:>10}\n",
                 link, payload.description(), cfg.iters,
                 repeat > 1 ? fmt::format(" (median of {} alternating runs)", repeat) : "", "bytes", "compressed (us)", "raw (us)", "added (us)");
    for (const std::string& t : lat_sizes_text) {
      auto sz = parse_size(t);
      if (!sz) {
        fmt::print(stderr, "zipperf: bad size '{}'\n", t);
        return 2;
      }
      cfg.spec.sizes = {whole_lines(cfg.spec.shape, *sz)};
      // Compressed and raw runs alternate; each gives a median, and the median of those is kept,
      // so a burst of load on a shared machine hits both sides alike.
      std::vector<double> med_c, med_r;
      for (int rep = 0; rep < repeat; ++rep) {
        Measured c = measure(cfg, true, payload, ns.get());
        Measured r = measure(cfg, false, payload, ns.get());
        for (const Measured* m : {&c, &r})
          if (!m->report.ok) {
            fmt::print(stderr, "zipperf: {} run of {} B failed: {}\n", m == &c ? "compressed" : "raw", *sz, m->report.error);
            print_side_warnings(m->report);
            all_ok = false;
          }
        verified += c.report.bytes_verified() + r.report.bytes_verified();
        med_c.push_back(c.report.median_latency_us());
        med_r.push_back(r.report.median_latency_us());
      }
      std::sort(med_c.begin(), med_c.end());
      std::sort(med_r.begin(), med_r.end());
      double mc = med_c[med_c.size() / 2], mr = med_r[med_r.size() / 2];
      rows.push_back({{"bytes", cfg.spec.sizes[0]}, {"median_us_compressed", mc}, {"median_us_raw", mr}, {"added_us", mc - mr}});
      if (!json) fmt::print("{:>10} {:>16.2f} {:>16.2f} {:>10.2f}\n", cfg.spec.sizes[0], mc, mr, mc - mr);
    }
    out["latency"] = rows;
    out["bytes_verified"] = verified;
  } else {
    auto sz = parse_size(size_text);
    if (!sz) {
      fmt::print(stderr, "zipperf: bad --size '{}'\n", size_text);
      return 2;
    }
    cfg.spec.sizes = {whole_lines(cfg.spec.shape, *sz)};
    const size_t msg = std::max<size_t>(cfg.spec.sizes[0], 1);
    cfg.iters = iters ? iters : std::max<uint64_t>(64, (256ull << 20) / msg);
    cfg.warmup = warmup ? warmup : 16;
    out["message_bytes"] = cfg.spec.sizes[0];
    out["messages"] = cfg.iters;
    out["warmup"] = cfg.warmup;
    std::vector<Measured> comp, raw;
    for (int i = 0; i < repeat; ++i) {
      comp.push_back(measure(cfg, true, payload, ns.get()));
      if (!no_raw) raw.push_back(measure(cfg, false, payload, ns.get()));
    }
    auto median_of = [](std::vector<Measured>& v) -> const Measured* {
      if (v.empty()) return nullptr;
      std::sort(v.begin(), v.end(), [](const Measured& a, const Measured& b) { return a.report.gbps() < b.report.gbps(); });
      return &v[v.size() / 2];
    };
    uint64_t verified = 0;
    for (auto* set : {&comp, &raw})
      for (const Measured& m : *set) {
        verified += m.report.bytes_verified();
        if (!m.report.ok) {
          fmt::print(stderr, "zipperf: {} run failed: {}\n", set == &comp ? "compressed" : "raw", m.report.error);
          print_side_warnings(m.report);
          all_ok = false;
        }
      }
    const Measured* c = median_of(comp);
    const Measured* r = median_of(raw);
    out["abi"] = c->report.receiver.abi;
    out["plugin_name"] = c->report.receiver.plugin_name;
    out["gbps_compressed"] = c->report.gbps();
    out["seconds_compressed"] = c->report.receiver.seconds;
    out["gbps_raw"] = r ? nlohmann::json(r->report.gbps()) : nlohmann::json(nullptr);
    out["speedup"] = r && r->report.gbps() > 0 ? nlohmann::json(c->report.gbps() / r->report.gbps()) : nlohmann::json(nullptr);
    out["bytes_verified"] = verified;
    std::optional<double> ratio = c->wire_ratio;
    std::string ratio_source = "plugin stats file";
    if (!ratio && c->veth_tx > 0 && r && r->veth_tx > 0) {
      ratio = static_cast<double>(r->veth_tx) / static_cast<double>(c->veth_tx);
      ratio_source = "veth tx bytes, raw run / compressed run";
    }
    out["ratio"] = ratio ? nlohmann::json(*ratio) : nlohmann::json(nullptr);
    out["ratio_source"] = ratio ? nlohmann::json(ratio_source) : nlohmann::json(nullptr);
    out["repeat"] = repeat;
    if (!json) {
      fmt::print("zipperf: {} (ncclNetPlugin_v{}, \"{}\"), {}\n", plugin, c->report.receiver.abi,
                 c->report.receiver.plugin_name, link);
      fmt::print("data: {} ({} pool), {}{} x {} messages (+{} warm-up), {} in flight, {} lines{}\n", payload.description(),
                 human_bytes(static_cast<double>(payload.pool_bytes())),
                 conns > 1 ? fmt::format("{} connections x ", conns) : "", cfg.iters,
                 human_bytes(static_cast<double>(msg)), cfg.warmup, inflight, shape_name(cfg.spec.shape),
                 repeat > 1 ? fmt::format(", median of {} runs", repeat) : "");
      fmt::print("{:<22} {:>9} {:>8} {:>9} {:>11}\n", "", "Gbit/s", "GB/s", "seconds", "verified");
      auto row = [&](const char* name, const Measured* m) {
        fmt::print("{:<22} {:>9.2f} {:>8.3f} {:>9.3f} {:>11}\n", name, m->report.gbps(), m->report.gbps() / 8,
                   m->report.receiver.seconds, human_bytes(static_cast<double>(m->report.bytes_verified())));
      };
      row("compressed", c);
      if (r) row("raw (ZIPNET_COMPRESS=0)", r);
      fmt::print("speedup {}   compression ratio {}\n",
                 r && r->report.gbps() > 0 ? fmt::format("{:.3f}x", c->report.gbps() / r->report.gbps()) : "n/a",
                 ratio ? fmt::format("{:.3f}x ({})", *ratio, ratio_source) : "n/a (no stats file from the plugin)");
    }
  }
  out["ok"] = all_ok;
  if (json) fmt::print("{}\n", out.dump(2));
  return all_ok ? 0 : 1;
}
