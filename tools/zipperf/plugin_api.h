// A dlopen'ed NCCL net plugin seen through one version-neutral interface.
//
// The driver talks to ncclNet_v11_t and ncclNet_v12_t through this class so the same engine code
// exercises both ABIs. Only getProperties differs in layout between the two; every other call is
// forwarded unchanged, so what the plugin sees is exactly what NCCL would pass.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "net_abi.h"

namespace zipperf {

// Which exported table to use: Auto takes v12 and falls back to v11, as NCCL 2.30+ does.
enum class Abi { Auto, V11, V12 };

// ncclNetProperties_v11_t/v12_t flattened; v12-only fields stay -1 under v11.
struct Properties {
  std::string name;
  std::string pci_path;  // empty when the plugin reports NULL (a virtual device)
  bool pci_path_null = true;
  uint64_t guid = 0;
  int ptr_support = 0;
  int reg_is_global = 0;
  int force_flush = 0;
  int speed = 0;
  int port = 0;
  float latency = 0;
  int max_comms = 0;
  int max_recvs = 0;
  int net_device_type = -1;
  int net_device_version = -1;
  int vdev_count = 0;
  int vdevs[NCCL_NET_MAX_DEVS_PER_NIC_V12] = {};
  size_t max_p2p_bytes = 0;
  size_t max_coll_bytes = 0;
  int max_multi_request_size = 0;
  int rail_id = -1;   // v12 only
  int plane_id = -1;  // v12 only
};

const char* result_name(ncclResult_t r);

class Plugin {
 public:
  // dlopen(path) with RTLD_NOW|RTLD_LOCAL and look up the table. On failure returns nullptr and
  // explains why in *error (dlerror text, or which symbol is missing).
  static std::unique_ptr<Plugin> open(const std::string& path, Abi abi, std::string* error);
  ~Plugin();  // dlclose
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  int abi_version() const { return v12_ ? 12 : 11; }
  const char* name() const;
  void* dl_handle() const { return dl_; }
  // Raw tables, for tests that check pointer slots (e.g. mandatory entries are non-NULL).
  const ncclNet_v11_t* v11() const { return v11_; }
  const ncclNet_v12_t* v12() const { return v12_; }

  ncclResult_t init(void** ctx, uint64_t comm_id, int traffic_class, ncclDebugLogger_t logger);
  ncclResult_t devices(int* ndev);
  ncclResult_t get_properties(int dev, Properties* out);
  ncclResult_t listen(void* ctx, int dev, void* handle, void** listen_comm);
  ncclResult_t connect(void* ctx, int dev, void* handle, void** send_comm, void** send_dev_comm);
  ncclResult_t accept(void* listen_comm, void** recv_comm, void** recv_dev_comm);
  ncclResult_t reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t dereg_mr(void* comm, void* mhandle);
  ncclResult_t isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void** request);
  ncclResult_t irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                     void** request);
  ncclResult_t iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t test(void* request, int* done, int* sizes);
  ncclResult_t close_send(void* comm);
  ncclResult_t close_recv(void* comm);
  ncclResult_t close_listen(void* comm);
  ncclResult_t finalize(void* ctx);
  // All hints undefined except proto (a bitmask), the way NCCL announces a protocol change.
  ncclResult_t set_net_attr(void* ctx, uint32_t proto_mask);
  bool has_set_net_attr() const;

 private:
  Plugin() = default;
  void* dl_ = nullptr;
  const ncclNet_v11_t* v11_ = nullptr;  // exactly one of the two is set
  const ncclNet_v12_t* v12_ = nullptr;
};

}  // namespace zipperf
