// Suite `netns`: the two ends in two network namespaces joined by a veth pair shaped to 10gbit,
// the plugin bound to that veth (ZIPNET_SOCKET_IFNAME), real bf16 tensors and random bytes,
// compressed and raw. Checks every byte, that the bytes really crossed the veth, and that the
// namespaces are gone afterwards. Exits 77 (meson: SKIP) with the reason where namespaces or tc
// cannot be used (not root, no iproute2).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "driver.h"
#include "netns.h"

using namespace zipperf;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  failures += !ok;
}

bool netns_exists(const std::string& name) {
  std::string cmd = "ip netns list | grep -qw -- '" + name + "'";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace

int main() {
  if (std::string why = NetnsPair::unavailable_reason(); !why.empty()) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  std::string err;
  Payload tensors = Payload::from_files({std::string(ZIPPERF_TENSOR_DIR) + "/weights.bf16",
                                         std::string(ZIPPERF_TENSOR_DIR) + "/grads.bf16",
                                         std::string(ZIPPERF_TENSOR_DIR) + "/activations.bf16"}, &err);
  if (!err.empty()) {
    std::printf("FAIL: %s\n", err.c_str());
    return 1;
  }
  Payload random = Payload::random(8 << 20, 7);
  std::string ns_s, ns_r;
  {
    auto ns = NetnsPair::create("10gbit", &err);
    check(ns != nullptr, "create two namespaces and a 10gbit veth pair: " + err);
    if (!ns) return 1;
    ns_s = ns->sender_ns();
    ns_r = ns->receiver_ns();
    for (const Payload* data : {&tensors, &random})
      for (bool compress : {true, false}) {
        RunConfig cfg;
        cfg.plugin_path = ZIPNET_PLUGIN_PATH;
        cfg.netns_sender = ns->sender_ns();
        cfg.netns_receiver = ns->receiver_ns();
        cfg.env = {{"ZIPNET_SOCKET_IFNAME", std::string("=") + NetnsPair::ifname()},
                   {"ZIPNET_COMPRESS", compress ? "1" : "0"},
                   {"ZIPNET_TIMEOUT", "10"}};
        cfg.spec.sizes = {1 << 20};
        cfg.iters = 96;
        cfg.timeout_s = 40;
        const long long tx0 = ns->sender_tx_bytes();
        RunReport r = run_pair(cfg, *data);
        const long long tx1 = ns->sender_tx_bytes();
        const std::string what = data->description() + (compress ? ", compressed" : ", ZIPNET_COMPRESS=0");
        for (const std::string& w : r.receiver.warnings) std::printf("     receiver WARN: %s\n", w.c_str());
        for (const std::string& w : r.sender.warnings) std::printf("     sender WARN: %s\n", w.c_str());
        check(r.ok, what + ": run through the namespaces " + (r.ok ? "" : r.error));
        check(r.bytes_verified() == 96ull << 20, what + ": every byte verified");
        // The payload must really have crossed the veth (compressed: at least a third of it).
        check(tx0 >= 0 && tx1 - tx0 >= (compress ? (32ll << 20) : (96ll << 20)),
              what + ": bytes on the veth " + std::to_string(tx1 - tx0));
        std::printf("     %.2f Gbit/s\n", r.gbps());
      }
  }
  check(!netns_exists(ns_s) && !netns_exists(ns_r), "both namespaces removed afterwards");
  // A failing run must not leak namespaces either.
  {
    auto ns = NetnsPair::create("1gbit", &err);
    check(ns != nullptr, "second pair: " + err);
    if (ns) {
      ns_s = ns->sender_ns();
      RunConfig cfg;
      cfg.plugin_path = "/nonexistent/libnccl-net-zipnet.so";
      cfg.netns_sender = ns->sender_ns();
      cfg.netns_receiver = ns->receiver_ns();
      cfg.timeout_s = 5;
      check(!run_pair(cfg, random).ok, "a run with a missing plugin fails");
    }
  }
  check(!netns_exists(ns_s), "namespaces removed after a failed run");
  std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
