#include "plugin/api.h"

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "plugin/log.h"
#include "plugin/open_comms.h"
#include "plugin/pipeline/recv_comm.h"
#include "plugin/pipeline/send_comm.h"
#include "plugin/runtime.h"

namespace zipnet::api {
namespace {

using pipeline::CommBase;
using pipeline::RecvComm;
using pipeline::Request;
using pipeline::SendComm;

struct Ctx {
  static constexpr uint32_t kMagic = 0x5A435458;
  uint32_t magic = kMagic;
  uint64_t comm_id = 0;
  int traffic_class = NCCL_NET_TRAFFIC_CLASS_UNDEF;
};

struct ListenComm {
  static constexpr uint32_t kMagic = 0x5A4C5354;
  uint32_t magic = kMagic;
  const Ctx* ctx = nullptr;  // accepted comms belong to the listen comm's context
  int dev = 0;
  std::unique_ptr<transport::Listener> listener;
};

struct MemHandle {
  static constexpr uint32_t kMagic = 0x5A4D5248;
  uint32_t magic = kMagic;
  uintptr_t base = 0;
  size_t size = 0;
  int type = 0;
};

// Connect progress lives in NCCL's handle buffer (NCCL passes the same writable buffer on every
// retry): transport bytes first, then a marker and a pointer to our state.
struct ConnectState {
  std::unique_ptr<transport::Connector> connector;
};
constexpr size_t kStashMarkerAt = 112, kStashPtrAt = 120;
constexpr uint64_t kStashMarker = 0x45544154534E435AULL;  // "ZCNSTATE"
static_assert(transport::kHandleBytes <= kStashMarkerAt && kStashPtrAt + 8 <= NCCL_NET_HANDLE_MAXSIZE);

ConnectState* stash_get(const void* handle) {
  uint64_t marker;
  std::memcpy(&marker, static_cast<const char*>(handle) + kStashMarkerAt, 8);
  if (marker != kStashMarker) return nullptr;
  ConnectState* st;
  std::memcpy(&st, static_cast<const char*>(handle) + kStashPtrAt, sizeof st);
  return st;
}
void stash_set(void* handle, ConnectState* st) {
  uint64_t marker = st ? kStashMarker : 0;
  std::memcpy(static_cast<char*>(handle) + kStashMarkerAt, &marker, 8);
  std::memcpy(static_cast<char*>(handle) + kStashPtrAt, &st, sizeof st);
}

template <class F>
ncclResult_t guarded(const char* fn, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    ZN_WARN(NCCL_NET | NCCL_ALLOC, "%s: out of memory", fn);
    return ncclSystemError;
  } catch (const std::exception& e) {
    ZN_WARN(NCCL_NET, "%s: %s", fn, e.what());
    return ncclInternalError;
  } catch (...) {
    ZN_WARN(NCCL_NET, "%s: unknown exception", fn);
    return ncclInternalError;
  }
}

#define ZN_CHECK_ARG(cond, code, ...)       \
  do {                                      \
    if (!(cond)) {                          \
      ZN_WARN(NCCL_NET, __VA_ARGS__);       \
      return code;                          \
    }                                       \
  } while (0)

Ctx* as_ctx(void* p) {
  auto* c = static_cast<Ctx*>(p);
  return c && c->magic == Ctx::kMagic ? c : nullptr;
}
CommBase* as_comm(void* p) {
  auto* c = static_cast<CommBase*>(p);
  return c && (c->magic() == CommBase::kSendMagic || c->magic() == CommBase::kRecvMagic) ? c : nullptr;
}
SendComm* as_send(void* p) {
  CommBase* c = as_comm(p);
  return c && c->magic() == CommBase::kSendMagic ? static_cast<SendComm*>(c) : nullptr;
}
RecvComm* as_recv(void* p) {
  CommBase* c = as_comm(p);
  return c && c->magic() == CommBase::kRecvMagic ? static_cast<RecvComm*>(c) : nullptr;
}
MemHandle* as_mr(void* p) {
  auto* m = static_cast<MemHandle*>(p);
  return m && m->magic == MemHandle::kMagic ? m : nullptr;
}

// Holds a runtime reference for the lifetime of a comm.
Runtime* live_runtime(const char* fn) {
  Runtime* rt = runtime_ref();
  if (!rt) ZN_WARN(NCCL_NET, "%s called before init", fn);
  return rt;
}

bool in_region(const MemHandle* mr, const void* data, size_t size) {
  auto p = reinterpret_cast<uintptr_t>(data);
  return p >= mr->base && size <= mr->size && p - mr->base <= mr->size - size;
}

ncclResult_t failure_code(const std::string& err, ncclResult_t otherwise) {
  return err.find("wire version") != std::string::npos ? ncclInvalidUsage : otherwise;
}

// Each closes one kind of object and drops the runtime reference it held (open_comms closers).
void destroy_send(void* p) {
  delete static_cast<SendComm*>(p);
  runtime_release();
}
void destroy_recv(void* p) {
  delete static_cast<RecvComm*>(p);
  runtime_release();
}
void destroy_listen(void* p) {
  auto* lc = static_cast<ListenComm*>(p);
  lc->magic = 0;
  delete lc;
  runtime_release();
}

// Records a new comm under its context before NCCL gets it. If that fails (out of memory), the
// comm is closed again and the call fails as if creating it had.
bool record_open(const void* ctx, void* obj, open_comms::Closer close, const char* fn) {
  try {
    open_comms::add(ctx, obj, close);
    return true;
  } catch (const std::bad_alloc&) {
    close(obj);
    ZN_WARN(NCCL_NET | NCCL_ALLOC, "%s: out of memory", fn);
    return false;
  }
}

}  // namespace

ncclResult_t init(void** ctx, uint64_t comm_id, const ncclNetCommConfig_v11_t* config,
                  ncclDebugLogger_t logger, int abi_version) {
  if (logger) log::set_logger(logger);
  return guarded("init", [&] {
    ZN_CHECK_ARG(ctx, ncclInvalidArgument, "init: ctx is NULL");
    *ctx = nullptr;
    Runtime* rt = nullptr;
    ncclResult_t r = runtime_acquire(abi_version, &rt);
    if (r != ncclSuccess) return r;
    auto c = std::make_unique<Ctx>();
    c->comm_id = comm_id;
    if (config) c->traffic_class = config->trafficClass;
    *ctx = c.release();
    return ncclSuccess;
  });
}

ncclResult_t finalize(void* ctx) {
  return guarded("finalize", [&] {
    Ctx* c = as_ctx(ctx);
    ZN_CHECK_ARG(c, ncclInternalError, "finalize: not a zipnet context");
    // NCCL is done with the context, so whatever it left open under it is abandoned: close it now,
    // while the library is still loaded (see plugin/open_comms.h).
    auto left = open_comms::take(c);
    if (!left.empty())
      ZN_INFO(NCCL_NET | NCCL_INIT, "finalize: closing %zu comms NCCL left open", left.size());
    for (auto& [obj, close] : left) close(obj);
    c->magic = 0;
    delete c;
    runtime_release();
    return ncclSuccess;
  });
}

ncclResult_t devices(int* ndev) {
  return guarded("devices", [&] {
    ZN_CHECK_ARG(ndev, ncclInvalidArgument, "devices: ndev is NULL");
    Runtime* rt = live_runtime("devices");
    if (!rt) return ncclInternalError;
    *ndev = rt->transport->device_count();
    runtime_release();
    return ncclSuccess;
  });
}

ncclResult_t get_properties(int dev, DeviceProps* props) {
  return guarded("getProperties", [&] {
    ZN_CHECK_ARG(props, ncclInvalidArgument, "getProperties: props is NULL");
    Runtime* rt = live_runtime("getProperties");
    if (!rt) return ncclInternalError;
    int n = rt->transport->device_count();
    int speed = dev >= 0 && dev < n ? rt->transport->device(dev).speed_mbps : 0;
    runtime_release();
    ZN_CHECK_ARG(dev >= 0 && dev < n, ncclInvalidArgument, "getProperties: device %d out of range 0..%d", dev, n - 1);
    *props = DeviceProps{};
    props->name = runtime_device_name(dev);
    props->guid = uint64_t(dev);
    props->speed_mbps = speed;
    props->vdev = dev;
    return ncclSuccess;
  });
}

ncclResult_t set_net_attr(void* ctx, const ncclNetAttr_v11_t* attr) {
  return guarded("setNetAttr", [&] {
    ZN_CHECK_ARG(as_ctx(ctx), ncclInternalError, "setNetAttr: not a zipnet context");
    if (attr)
      ZN_TRACE(NCCL_NET, "setNetAttr op 0x%x algo 0x%x proto 0x%x (hints only)", attr->op, attr->algo, attr->proto);
    return ncclSuccess;
  });
}

ncclResult_t listen(void* ctx, int dev, void* handle, void** listen_comm) {
  return guarded("listen", [&] {
    ZN_CHECK_ARG(as_ctx(ctx) && handle && listen_comm, ncclInternalError, "listen: bad arguments");
    *listen_comm = nullptr;
    Runtime* rt = live_runtime("listen");
    if (!rt) return ncclInternalError;
    if (dev < 0 || dev >= rt->transport->device_count()) {
      runtime_release();
      ZN_WARN(NCCL_NET, "listen: device %d out of range", dev);
      return ncclInvalidArgument;
    }
    std::memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
    std::string err;
    auto lc = std::make_unique<ListenComm>();
    lc->ctx = as_ctx(ctx);
    lc->dev = dev;
    lc->listener = rt->transport->listen(dev, handle, &err);
    if (!lc->listener) {
      runtime_release();
      ZN_WARN(NCCL_NET, "listen: %s", err.c_str());
      return ncclSystemError;
    }
    const Ctx* owner = lc->ctx;
    ListenComm* opened = lc.release();  // keeps the runtime reference until closeListen
    if (!record_open(owner, opened, destroy_listen, "listen")) return ncclSystemError;
    *listen_comm = opened;
    return ncclSuccess;
  });
}

ncclResult_t connect(void* ctx, int dev, void* handle, void** send_comm,
                     ncclNetDeviceHandle_v11_t** send_dev_comm) {
  return guarded("connect", [&] {
    ZN_CHECK_ARG(as_ctx(ctx) && handle && send_comm, ncclInternalError, "connect: bad arguments");
    *send_comm = nullptr;
    if (send_dev_comm) *send_dev_comm = nullptr;  // no device offload
    Runtime* rt = live_runtime("connect");
    if (!rt) return ncclInternalError;
    ConnectState* st = stash_get(handle);
    std::string err;
    if (!st) {
      ZN_CHECK_ARG(dev >= 0 && dev < rt->transport->device_count(), (runtime_release(), ncclInvalidArgument),
                   "connect: device %d out of range", dev);
      auto fresh = std::make_unique<ConnectState>();
      fresh->connector = rt->transport->connect(dev, handle, &err);
      if (!fresh->connector) {
        runtime_release();
        ZN_WARN(NCCL_NET | NCCL_INIT, "connect: %s", err.c_str());
        return failure_code(err, ncclSystemError);
      }
      st = fresh.release();
      stash_set(handle, st);
    }
    std::unique_ptr<transport::Link> link;
    transport::Poll p = st->connector->poll_connect(&link, &err);
    if (p == transport::Poll::pending) {
      runtime_release();
      return ncclSuccess;
    }
    stash_set(handle, nullptr);
    delete st;
    if (p == transport::Poll::failed) {
      runtime_release();
      ZN_WARN(NCCL_NET | NCCL_INIT, "connect: %s", err.c_str());
      return failure_code(err, ncclSystemError);
    }
    std::unique_ptr<SendComm> comm = SendComm::create(std::move(link), rt->settings, &err);
    if (!comm) {
      runtime_release();
      ZN_WARN(NCCL_NET | NCCL_ALLOC, "connect: %s", err.c_str());
      return ncclSystemError;
    }
    ZN_INFO(NCCL_NET, "connected to %s", comm->peer().c_str());
    SendComm* opened = comm.release();  // keeps the runtime reference until closeSend
    if (!record_open(ctx, opened, destroy_send, "connect")) return ncclSystemError;
    *send_comm = opened;
    return ncclSuccess;
  });
}

ncclResult_t accept(void* listen_comm, void** recv_comm, ncclNetDeviceHandle_v11_t** recv_dev_comm) {
  return guarded("accept", [&] {
    auto* lc = static_cast<ListenComm*>(listen_comm);
    ZN_CHECK_ARG(lc && lc->magic == ListenComm::kMagic && recv_comm, ncclInternalError, "accept: bad arguments");
    *recv_comm = nullptr;
    if (recv_dev_comm) *recv_dev_comm = nullptr;
    std::unique_ptr<transport::Link> link;
    std::string err;
    transport::Poll p = lc->listener->poll_accept(&link, &err);
    if (p == transport::Poll::pending) return ncclSuccess;
    if (p == transport::Poll::failed) {
      ZN_WARN(NCCL_NET | NCCL_INIT, "accept: %s", err.c_str());
      return failure_code(err, ncclRemoteError);
    }
    Runtime* rt = live_runtime("accept");
    if (!rt) return ncclInternalError;
    std::unique_ptr<RecvComm> comm = RecvComm::create(std::move(link), rt->settings, &err);
    if (!comm) {
      runtime_release();
      ZN_WARN(NCCL_NET | NCCL_ALLOC, "accept: %s", err.c_str());
      return ncclSystemError;
    }
    ZN_INFO(NCCL_NET, "accepted connection from %s", comm->peer().c_str());
    RecvComm* opened = comm.release();  // keeps the runtime reference until closeRecv
    if (!record_open(lc->ctx, opened, destroy_recv, "accept")) return ncclSystemError;
    *recv_comm = opened;
    return ncclSuccess;
  });
}

ncclResult_t reg_mr(void* comm, void* data, size_t size, int type, void** mhandle) {
  return guarded("regMr", [&] {
    ZN_CHECK_ARG(as_comm(comm) && mhandle, ncclInternalError, "regMr: bad arguments");
    *mhandle = nullptr;
    ZN_CHECK_ARG(type == NCCL_PTR_HOST, ncclInvalidArgument,
                 "regMr: memory type %d not supported; zipnet advertises host memory only (ZIPNET_PTR=host)", type);
    ZN_CHECK_ARG(data || size == 0, ncclInvalidArgument, "regMr: NULL buffer of %zu bytes", size);
    Runtime* rt = live_runtime("regMr");
    if (!rt) return ncclInternalError;
    bool fault = rt->settings.faults & params::kFaultRegMrFail;
    runtime_release();
    ZN_CHECK_ARG(!fault, ncclSystemError, "regMr: registration of %zu bytes failed (fault injected: regmr_fail)", size);
    auto mr = std::make_unique<MemHandle>();
    mr->base = reinterpret_cast<uintptr_t>(data);
    mr->size = size;
    mr->type = type;
    *mhandle = mr.release();
    return ncclSuccess;
  });
}

ncclResult_t reg_mr_dmabuf(void*, void*, size_t, int, uint64_t, int, void** mhandle) {
  if (mhandle) *mhandle = nullptr;
  ZN_WARN(NCCL_NET, "regMrDmaBuf: zipnet does not advertise DMA-BUF");
  return ncclInvalidUsage;
}

ncclResult_t dereg_mr(void* comm, void* mhandle) {
  return guarded("deregMr", [&] {
    // Like free(NULL): a failed regMr leaves a NULL handle, and NCCL's cleanup after that failure
    // deregisters it (seen under NCCL 2.28 with ZIPNET_FAULT_INJECT=regmr_fail).
    if (!mhandle) return ncclSuccess;
    MemHandle* mr = as_mr(mhandle);
    ZN_CHECK_ARG(as_comm(comm) && mr, ncclInternalError, "deregMr: bad arguments");
    mr->magic = 0;
    delete mr;
    return ncclSuccess;
  });
}

ncclResult_t isend(void* send_comm, void* data, size_t size, int, void* mhandle, void*, void** request) {
  return guarded("isend", [&] {
    SendComm* c = as_send(send_comm);
    ZN_CHECK_ARG(c && request, ncclInternalError, "isend: bad arguments");
    *request = nullptr;
    ZN_CHECK_ARG(data || size == 0, ncclInvalidArgument, "isend: NULL buffer of %zu bytes", size);
    MemHandle* mr = as_mr(mhandle);
    ZN_CHECK_ARG(!mhandle || (mr && in_region(mr, data, size)), ncclInvalidArgument,
                 "isend: buffer %p+%zu is not inside its registered region", data, size);
    return c->isend(data, size, request);
  });
}

ncclResult_t irecv(void* recv_comm, int n, void** data, size_t* sizes, int*, void** mhandles, void**,
                   void** request) {
  return guarded("irecv", [&] {
    RecvComm* c = as_recv(recv_comm);
    ZN_CHECK_ARG(c && request, ncclInternalError, "irecv: bad arguments");
    *request = nullptr;  // always written: NCCL may have preset it to 0x1
    ZN_CHECK_ARG(n == 1 && data && sizes, ncclInternalError, "irecv: n=%d (zipnet advertises maxRecvs=1)", n);
    ZN_CHECK_ARG(data[0] || sizes[0] == 0, ncclInvalidArgument, "irecv: NULL buffer of %zu bytes", sizes[0]);
    MemHandle* mr = mhandles ? as_mr(mhandles[0]) : nullptr;
    ZN_CHECK_ARG(!mhandles || !mhandles[0] || (mr && in_region(mr, data[0], sizes[0])), ncclInvalidArgument,
                 "irecv: buffer %p+%zu is not inside its registered region", data[0], sizes[0]);
    return c->irecv(n, data, sizes, request);
  });
}

ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  if (request) *request = nullptr;  // host memory: nothing to flush
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  return guarded("test", [&] {
    auto* r = static_cast<Request*>(request);
    ZN_CHECK_ARG(r && done && r->magic == Request::kMagic && r->in_use, ncclInternalError,
                 "test: not a live zipnet request");
    return r->comm->test(r, done, sizes);
  });
}

ncclResult_t close_send(void* send_comm) {
  return guarded("closeSend", [&] {
    ZN_CHECK_ARG(open_comms::remove(send_comm, destroy_send), ncclInternalError,
                 "closeSend: not an open zipnet send comm");
    destroy_send(send_comm);
    return ncclSuccess;
  });
}

ncclResult_t close_recv(void* recv_comm) {
  return guarded("closeRecv", [&] {
    ZN_CHECK_ARG(open_comms::remove(recv_comm, destroy_recv), ncclInternalError,
                 "closeRecv: not an open zipnet recv comm");
    destroy_recv(recv_comm);
    return ncclSuccess;
  });
}

ncclResult_t close_listen(void* listen_comm) {
  return guarded("closeListen", [&] {
    ZN_CHECK_ARG(open_comms::remove(listen_comm, destroy_listen), ncclInternalError,
                 "closeListen: not an open zipnet listen comm");
    destroy_listen(listen_comm);
    return ncclSuccess;
  });
}

}  // namespace zipnet::api
