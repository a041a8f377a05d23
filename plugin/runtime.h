// Process-wide state: params, the transport and the codec worker pool. Created by the first
// init, shared (refcounted) by every ctx, listen comm and connection, and torn down (worker
// threads joined) when the last reference goes, so NCCL can dlclose the plugin and load it again.
// Nothing here runs at load time: no global constructors, no atexit, no detached threads.
#pragma once

#include <memory>

#include "plugin/nccl/net_abi.h"
#include "plugin/params.h"
#include "plugin/pipeline/settings.h"
#include "plugin/pipeline/worker_pool.h"
#include "transport/transport.h"

namespace zipnet {

struct Runtime {
  params::Params params;
  std::unique_ptr<transport::Transport> transport;
  std::unique_ptr<pipeline::WorkerPool> pool;
  pipeline::Settings settings;
  int abi_version = 0;
};

// First call builds the runtime (reads ZIPNET_*, finds interfaces, starts workers, logs the
// banner); every successful call adds a reference. On failure nothing is kept.
ncclResult_t runtime_acquire(int abi_version, Runtime** out);
// Adds a reference to the live runtime; nullptr if there is none (init was never called).
Runtime* runtime_ref();
void runtime_release();

// Device name with static storage (NCCL may keep the pointer from getProperties).
const char* runtime_device_name(int dev);

}  // namespace zipnet
