// Version-neutral plugin API. The ABI adapters (plugin/abi/) forward every ncclNet_vN entry
// here. Each function validates its arguments, catches every exception, logs through NCCL and
// maps failures to ncclResult_t: SystemError for OS/network failures, RemoteError when the peer
// died or sent bad data, InvalidUsage for configuration/size mismatches, InvalidArgument for bad
// arguments, InternalError for misuse of the API.
#pragma once

#include <cstddef>
#include <cstdint>

#include "plugin/nccl/net_abi.h"

namespace zipnet::api {

// One fill for every properties layout (the adapters copy it into v11/v12 structs).
struct DeviceProps {
  const char* name = nullptr;
  const char* pci_path = nullptr;
  uint64_t guid = 0;
  int ptr_support = NCCL_PTR_HOST;
  int reg_is_global = 0;
  int force_flush = 0;
  int speed_mbps = 10000;
  int port = 0;
  float latency_us = 0;
  int max_comms = 65536;
  int max_recvs = 1;
  int vdev = 0;  // vProps = {1, {vdev}}
  size_t max_p2p_bytes = NCCL_MAX_NET_SIZE_BYTES;
  size_t max_coll_bytes = NCCL_MAX_COLLNET_SIZE_BYTES;
  int max_multi_request_size = 1;
};

ncclResult_t init(void** ctx, uint64_t comm_id, const ncclNetCommConfig_v11_t* config,
                  ncclDebugLogger_t logger, int abi_version);
ncclResult_t devices(int* ndev);
ncclResult_t get_properties(int dev, DeviceProps* props);
ncclResult_t listen(void* ctx, int dev, void* handle, void** listen_comm);
ncclResult_t connect(void* ctx, int dev, void* handle, void** send_comm,
                     ncclNetDeviceHandle_v11_t** send_dev_comm);
ncclResult_t accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v11_t** recv_dev_comm);
ncclResult_t reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t reg_mr_dmabuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                           void** mhandle);
ncclResult_t dereg_mr(void* comm, void* mhandle);
ncclResult_t isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                   void** request);
ncclResult_t irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                   void** phandles, void** request);
ncclResult_t iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
ncclResult_t test(void* request, int* done, int* sizes);
ncclResult_t close_send(void* send_comm);
ncclResult_t close_recv(void* recv_comm);
ncclResult_t close_listen(void* listen_comm);
ncclResult_t finalize(void* ctx);
ncclResult_t set_net_attr(void* ctx, const ncclNetAttr_v11_t* attr);

}  // namespace zipnet::api
