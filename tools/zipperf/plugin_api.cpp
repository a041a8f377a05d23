#include "plugin_api.h"

#include <dlfcn.h>

#include <cstring>

namespace zipperf {

const char* result_name(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    case ncclTimeout: return "ncclTimeout";
    default: return "ncclResult(?)";
  }
}

namespace {

// NCCL uses a v12 table directly, so every mandatory slot must be callable; v11 goes through a shim
// that calls the same slots. Returns the first NULL mandatory slot, or nullptr.
template <class Table>
const char* first_missing(const Table* t) {
  if (t->name == nullptr) return "name";
  if (t->init == nullptr) return "init";
  if (t->devices == nullptr) return "devices";
  if (t->getProperties == nullptr) return "getProperties";
  if (t->listen == nullptr) return "listen";
  if (t->connect == nullptr) return "connect";
  if (t->accept == nullptr) return "accept";
  if (t->regMr == nullptr) return "regMr";
  if (t->deregMr == nullptr) return "deregMr";
  if (t->isend == nullptr) return "isend";
  if (t->irecv == nullptr) return "irecv";
  if (t->iflush == nullptr) return "iflush";
  if (t->test == nullptr) return "test";
  if (t->closeSend == nullptr) return "closeSend";
  if (t->closeRecv == nullptr) return "closeRecv";
  if (t->closeListen == nullptr) return "closeListen";
  if (t->finalize == nullptr) return "finalize";
  return nullptr;
}

template <class P>
void copy_common(const P& p, Properties* out) {
  out->pci_path_null = p.pciPath == nullptr;
  out->name = p.name ? p.name : "";
  out->pci_path = p.pciPath ? p.pciPath : "";
  out->guid = p.guid;
  out->ptr_support = p.ptrSupport;
  out->reg_is_global = p.regIsGlobal;
  out->force_flush = p.forceFlush;
  out->speed = p.speed;
  out->port = p.port;
  out->latency = p.latency;
  out->max_comms = p.maxComms;
  out->max_recvs = p.maxRecvs;
  out->net_device_type = static_cast<int>(p.netDeviceType);
  out->net_device_version = p.netDeviceVersion;
  out->vdev_count = p.vProps.ndevs;
  constexpr int cap = sizeof(p.vProps.devs) / sizeof(p.vProps.devs[0]);
  for (int i = 0; i < cap; ++i) out->vdevs[i] = p.vProps.devs[i];
  out->max_p2p_bytes = p.maxP2pBytes;
  out->max_coll_bytes = p.maxCollBytes;
  out->max_multi_request_size = p.maxMultiRequestSize;
}

}  // namespace

std::unique_ptr<Plugin> Plugin::open(const std::string& path, Abi abi, std::string* error) {
  std::unique_ptr<Plugin> p(new Plugin());
  dlerror();
  p->dl_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (p->dl_ == nullptr) {
    const char* why = dlerror();
    *error = "dlopen(" + path + ") failed: " + (why ? why : "unknown error");
    return nullptr;
  }
  if (abi == Abi::Auto || abi == Abi::V12)
    p->v12_ = static_cast<const ncclNet_v12_t*>(dlsym(p->dl_, ZIPNET_NCCL_NET_SYMBOL_V12));
  if (p->v12_ == nullptr && (abi == Abi::Auto || abi == Abi::V11))
    p->v11_ = static_cast<const ncclNet_v11_t*>(dlsym(p->dl_, ZIPNET_NCCL_NET_SYMBOL_V11));
  if (p->v12_ == nullptr && p->v11_ == nullptr) {
    *error = path + " exports no " +
             (abi == Abi::V11   ? std::string(ZIPNET_NCCL_NET_SYMBOL_V11)
              : abi == Abi::V12 ? std::string(ZIPNET_NCCL_NET_SYMBOL_V12)
                                : std::string(ZIPNET_NCCL_NET_SYMBOL_V12 " or " ZIPNET_NCCL_NET_SYMBOL_V11));
    return nullptr;  // the destructor dlcloses
  }
  const char* missing = p->v12_ ? first_missing(p->v12_) : first_missing(p->v11_);
  if (missing != nullptr) {
    *error = std::string(p->v12_ ? ZIPNET_NCCL_NET_SYMBOL_V12 : ZIPNET_NCCL_NET_SYMBOL_V11) +
             " has a NULL mandatory entry: " + missing;
    return nullptr;
  }
  return p;
}

Plugin::~Plugin() {
  if (dl_ != nullptr) dlclose(dl_);
}

const char* Plugin::name() const { return v12_ ? v12_->name : v11_->name; }

// Every slot but getProperties has the same signature in both tables.
#define ZIPPERF_CALL(fn, ...) (v12_ ? v12_->fn(__VA_ARGS__) : v11_->fn(__VA_ARGS__))

ncclResult_t Plugin::init(void** ctx, uint64_t comm_id, int traffic_class, ncclDebugLogger_t logger) {
  ncclNetCommConfig_v12_t config{traffic_class};
  return ZIPPERF_CALL(init, ctx, comm_id, &config, logger, nullptr);
}
ncclResult_t Plugin::devices(int* ndev) { return ZIPPERF_CALL(devices, ndev); }

ncclResult_t Plugin::get_properties(int dev, Properties* out) {
  *out = Properties{};
  if (v12_) {
    ncclNetProperties_v12_t p;
    std::memset(&p, 0xCD, sizeof p);  // garbage in: a field the plugin forgets shows up
    ncclResult_t r = v12_->getProperties(dev, &p);
    if (r == ncclSuccess) {
      copy_common(p, out);
      out->rail_id = p.railId;
      out->plane_id = p.planeId;
    }
    return r;
  }
  ncclNetProperties_v11_t p;
  std::memset(&p, 0xCD, sizeof p);
  ncclResult_t r = v11_->getProperties(dev, &p);
  if (r == ncclSuccess) copy_common(p, out);
  return r;
}

ncclResult_t Plugin::listen(void* ctx, int dev, void* handle, void** listen_comm) {
  return ZIPPERF_CALL(listen, ctx, dev, handle, listen_comm);
}
ncclResult_t Plugin::connect(void* ctx, int dev, void* handle, void** send_comm, void** send_dev_comm) {
  return ZIPPERF_CALL(connect, ctx, dev, handle, send_comm,
                      reinterpret_cast<ncclNetDeviceHandle_v12_t**>(send_dev_comm));
}
ncclResult_t Plugin::accept(void* listen_comm, void** recv_comm, void** recv_dev_comm) {
  return ZIPPERF_CALL(accept, listen_comm, recv_comm,
                      reinterpret_cast<ncclNetDeviceHandle_v12_t**>(recv_dev_comm));
}
ncclResult_t Plugin::reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  return ZIPPERF_CALL(regMr, comm, data, size, type, mhandle);
}
ncclResult_t Plugin::dereg_mr(void* comm, void* mhandle) { return ZIPPERF_CALL(deregMr, comm, mhandle); }
ncclResult_t Plugin::isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void** request) {
  return ZIPPERF_CALL(isend, send_comm, data, size, tag, mhandle, nullptr, request);
}
ncclResult_t Plugin::irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                           void** request) {
  void* phandles[NCCL_NET_MAX_REQUESTS] = {};
  return ZIPPERF_CALL(irecv, recv_comm, n, data, sizes, tags, mhandles, phandles, request);
}
ncclResult_t Plugin::iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) {
  return ZIPPERF_CALL(iflush, recv_comm, n, data, sizes, mhandles, request);
}
ncclResult_t Plugin::test(void* request, int* done, int* sizes) { return ZIPPERF_CALL(test, request, done, sizes); }
ncclResult_t Plugin::close_send(void* comm) { return ZIPPERF_CALL(closeSend, comm); }
ncclResult_t Plugin::close_recv(void* comm) { return ZIPPERF_CALL(closeRecv, comm); }
ncclResult_t Plugin::close_listen(void* comm) { return ZIPPERF_CALL(closeListen, comm); }
ncclResult_t Plugin::finalize(void* ctx) { return ZIPPERF_CALL(finalize, ctx); }

bool Plugin::has_set_net_attr() const { return v12_ ? v12_->setNetAttr != nullptr : v11_->setNetAttr != nullptr; }

ncclResult_t Plugin::set_net_attr(void* ctx, uint32_t proto_mask) {
  ncclNetAttr_v12_t attr;
  attr.sendCommAttr = {NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF};
  attr.recvCommAttr = attr.sendCommAttr;
  attr.op = static_cast<uint32_t>(NCCL_NET_ATTR_UNDEF);
  attr.algo = static_cast<uint32_t>(NCCL_NET_ATTR_UNDEF);
  attr.proto = proto_mask;
  if (!has_set_net_attr()) return ncclSuccess;  // optional: NCCL skips a NULL slot
  return ZIPPERF_CALL(setNetAttr, ctx, &attr);
}

#undef ZIPPERF_CALL

}  // namespace zipperf
