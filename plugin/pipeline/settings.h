// What a comm needs to know from the params, copied once when it is created.
#pragma once

#include <cstdint>
#include <string>

#include "plugin/params.h"

namespace zipnet::pipeline {

class WorkerPool;

struct Settings {
  bool compress = true;
  params::Dtype dtype = params::Dtype::auto_detect;
  uint8_t modes = 0xF;
  uint64_t min_compress_bytes = 128u << 10;
  uint32_t subchunk_bytes = 128u << 10;
  bool adaptive = true;
  std::string stats_file;
  int timeout_s = 30;   // ZIPNET_TIMEOUT: bounds waits on a peer
  uint32_t faults = 0;  // params::Fault bits (test only)
  WorkerPool* pool = nullptr;
  int pool_threads = 1;
};

}  // namespace zipnet::pipeline
