#include "plugin/runtime.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

#include "plugin/log.h"
#include "plugin/pipeline/codec_seam.h"

#ifndef ZIPNET_VERSION
#define ZIPNET_VERSION "unknown"
#endif
#ifndef ZIPNET_GIT_SHA
#define ZIPNET_GIT_SHA "unknown"
#endif

namespace zipnet {
namespace {

// Constant-initialised: nothing runs at dlopen or at exit.
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
Runtime* g_runtime = nullptr;
int g_refs = 0;
constexpr int kMaxNames = 8;
char g_names[kMaxNames][64];

struct Lock {
  Lock() { pthread_mutex_lock(&g_mu); }
  ~Lock() { pthread_mutex_unlock(&g_mu); }
};

int auto_threads() {
  unsigned hw = std::thread::hardware_concurrency();
  return std::clamp(int(hw / 2), 2, 8);  // at least 2, so encoding overlaps even on small hosts
}

void log_banner(const Runtime& rt) {
  const params::Params& p = rt.params;
  std::string devs;
  for (int d = 0; d < rt.transport->device_count(); ++d) {
    const transport::DeviceInfo& di = rt.transport->device(d);
    devs += (d ? ", " : "") + std::to_string(d) + ":" + di.name + "/" + di.address + "/" +
            std::to_string(di.speed_mbps) + "Mbps";
  }
  std::string non_default;
  for (const std::string& s : p.non_default) non_default += (non_default.empty() ? "" : " ") + s;
  ZN_INFO(NCCL_INIT | NCCL_NET,
          "zipnet %s (git %s), net ABI v%d, transport %s [%s], %d streams/conn, codec %s "
          "(cpu %s, dtype %s, modes %s, %d threads, min %s, sub-chunk %s, adaptive %d), ptr host; "
          "non-default: %s",
          ZIPNET_VERSION, ZIPNET_GIT_SHA, rt.abi_version, rt.transport->name(), devs.c_str(),
          int(p.STREAMS), !p.COMPRESS ? "off" : pipeline::codec_seam::available() ? "on" : "unavailable",
          pipeline::codec_seam::cpu_path(), params::DtypeT::show(p.DTYPE).c_str(),
          params::ModeMaskT::show(p.CODEC_MODE).c_str(), rt.settings.pool_threads,
          params::BytesT::show(p.MIN_COMPRESS_BYTES).c_str(),
          params::SubchunkT::show(p.SUBCHUNK_BYTES).c_str(), int(p.ADAPTIVE),
          non_default.empty() ? "none" : non_default.c_str());
  if (p.FAULT_INJECT)
    ZN_WARN(NCCL_INIT, "TEST-ONLY fault injection is on: ZIPNET_FAULT_INJECT=%s",
            params::FaultsT::show(p.FAULT_INJECT).c_str());
}

ncclResult_t build(int abi_version, std::unique_ptr<Runtime>* out) {
  auto rt = std::make_unique<Runtime>();
  rt->abi_version = abi_version;
  std::string err;
  if (!params::load(rt->params, err)) {
    ZN_WARN(NCCL_INIT | NCCL_ENV, "invalid zipnet settings, plugin disabled: %s", err.c_str());
    return ncclInvalidUsage;
  }
  const params::Params& p = rt->params;
  if (!p.ENABLE) {
    ZN_INFO(NCCL_INIT | NCCL_ENV, "disabled by ZIPNET_ENABLE=0; NCCL falls back to its own transports");
    return ncclInvalidUsage;
  }
  transport::Config tc;
  tc.streams = int(p.STREAMS);
  tc.timeout_s = int(p.TIMEOUT);
  tc.port_lo = p.PORT_RANGE.lo;
  tc.port_hi = p.PORT_RANGE.hi;
  tc.ifname = p.SOCKET_IFNAME;
  tc.subchunk_bytes = uint32_t(p.SUBCHUNK_BYTES);
  tc.fault_wrong_version = p.FAULT_INJECT & params::kFaultWrongVersion;
  rt->transport = transport::make_tcp_transport(tc, &err);
  if (!rt->transport) {
    ZN_WARN(NCCL_INIT | NCCL_NET, "no usable network device, plugin disabled: %s", err.c_str());
    return ncclSystemError;
  }
  pipeline::Settings& s = rt->settings;
  s.compress = p.COMPRESS;
  s.dtype = p.DTYPE;
  s.modes = p.CODEC_MODE;
  s.min_compress_bytes = p.MIN_COMPRESS_BYTES;
  s.subchunk_bytes = uint32_t(p.SUBCHUNK_BYTES);
  s.adaptive = p.ADAPTIVE;
  s.stats_file = p.STATS_FILE;
  s.timeout_s = int(p.TIMEOUT);
  s.faults = p.FAULT_INJECT;
  s.pool_threads = p.THREADS ? int(p.THREADS) : auto_threads();
  rt->pool = std::make_unique<pipeline::WorkerPool>(s.pool_threads);
  s.pool = rt->pool.get();
  for (int d = 0; d < kMaxNames; ++d)
    std::snprintf(g_names[d], sizeof g_names[d], "%s",
                  d < rt->transport->device_count() ? rt->transport->device(d).name.c_str() : "");
  log_banner(*rt);
  *out = std::move(rt);
  return ncclSuccess;
}

}  // namespace

ncclResult_t runtime_acquire(int abi_version, Runtime** out) {
  Lock lk;
  if (!g_runtime) {
    std::unique_ptr<Runtime> rt;
    ncclResult_t r = build(abi_version, &rt);
    if (r != ncclSuccess) return r;
    g_runtime = rt.release();
  }
  ++g_refs;
  *out = g_runtime;
  return ncclSuccess;
}

Runtime* runtime_ref() {
  Lock lk;
  if (!g_runtime) return nullptr;
  ++g_refs;
  return g_runtime;
}

void runtime_release() {
  Runtime* dead = nullptr;
  {
    Lock lk;
    if (g_refs > 0 && --g_refs == 0) std::swap(dead, g_runtime);
  }
  delete dead;  // joins the worker threads, outside the lock
}

const char* runtime_device_name(int dev) {
  return dev >= 0 && dev < kMaxNames ? g_names[dev] : "";
}

}  // namespace zipnet
