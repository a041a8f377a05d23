// The only file that knows NCCL's ABI versions: thin adapters from ncclNet_v12_t / ncclNet_v11_t
// onto the version-neutral API (plugin/api.h). Only the two structs are exported (see
// plugin/exports.map); the layouts differ only in init's ABI tag and the properties struct.
#include "plugin/api.h"

namespace {

using namespace zipnet;

// One fill for both property layouts; v12 adds railId/planeId and has room for 8 vdevs.
template <class Props>
ncclResult_t fill_properties(int dev, Props* out) {
  if (!out) return ncclInvalidArgument;
  api::DeviceProps p;
  ncclResult_t r = api::get_properties(dev, &p);
  if (r != ncclSuccess) return r;
  *out = Props{};
  out->name = const_cast<char*>(p.name);
  out->pciPath = const_cast<char*>(p.pci_path);
  out->guid = p.guid;
  out->ptrSupport = p.ptr_support;
  out->regIsGlobal = p.reg_is_global;
  out->forceFlush = p.force_flush;
  out->speed = p.speed_mbps;
  out->port = p.port;
  out->latency = p.latency_us;
  out->maxComms = p.max_comms;
  out->maxRecvs = p.max_recvs;
  out->netDeviceType = NCCL_NET_DEVICE_HOST;
  out->netDeviceVersion = 0;
  out->vProps.ndevs = 1;
  out->vProps.devs[0] = p.vdev;
  out->maxP2pBytes = p.max_p2p_bytes;
  out->maxCollBytes = p.max_coll_bytes;
  out->maxMultiRequestSize = p.max_multi_request_size;
  if constexpr (requires { out->railId; }) {
    out->railId = -1;
    out->planeId = -1;
  }
  return ncclSuccess;
}

ncclResult_t init_v11(void** ctx, uint64_t comm_id, ncclNetCommConfig_v11_t* config,
                      ncclDebugLogger_t logger, ncclProfilerCallback_t) {
  return api::init(ctx, comm_id, config, logger, 11);
}
ncclResult_t init_v12(void** ctx, uint64_t comm_id, ncclNetCommConfig_v12_t* config,
                      ncclDebugLogger_t logger, ncclProfilerCallback_t) {
  return api::init(ctx, comm_id, config, logger, 12);
}
ncclResult_t props_v11(int dev, ncclNetProperties_v11_t* props) { return fill_properties(dev, props); }
ncclResult_t props_v12(int dev, ncclNetProperties_v12_t* props) { return fill_properties(dev, props); }
ncclResult_t set_attr(void* ctx, ncclNetAttr_v11_t* attr) { return api::set_net_attr(ctx, attr); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) ncclNet_v12_t ncclNetPlugin_v12 = {
    "zipnet",        init_v12,       api::devices,    props_v12,        api::listen,
    api::connect,    api::accept,    api::reg_mr,     api::reg_mr_dmabuf, api::dereg_mr,
    api::isend,      api::irecv,     api::iflush,     api::test,        api::close_send,
    api::close_recv, api::close_listen,
    nullptr,  // getDeviceMr: no device offload
    nullptr,  // irecvConsumed: no device offload
    nullptr,  // makeVDevice: no NIC fusion
    api::finalize,   set_attr,
};

__attribute__((visibility("default"))) ncclNet_v11_t ncclNetPlugin_v11 = {
    "zipnet",        init_v11,       api::devices,    props_v11,        api::listen,
    api::connect,    api::accept,    api::reg_mr,     api::reg_mr_dmabuf, api::dereg_mr,
    api::isend,      api::irecv,     api::iflush,     api::test,        api::close_send,
    api::close_recv, api::close_listen,
    nullptr,  // getDeviceMr
    nullptr,  // irecvConsumed
    nullptr,  // makeVDevice
    api::finalize,   set_attr,
};

}  // extern "C"
