// Logging goes only through NCCL's logger, with NCCL subsystem flags and the "NET/zipnet" prefix.
// Before init (or in unit tests without a logger) messages are dropped, except that tests may
// install their own logger with set_logger().
#pragma once

#include "plugin/nccl/net_abi.h"

namespace zipnet::log {

void set_logger(ncclDebugLogger_t logger);
ncclDebugLogger_t logger();

}  // namespace zipnet::log

#define ZN_LOG(level, flags, fmt, ...)                                                       \
  do {                                                                                       \
    ncclDebugLogger_t zn_logger_ = ::zipnet::log::logger();                                  \
    if (zn_logger_) zn_logger_(level, flags, __FILE__, __LINE__, "NET/zipnet : " fmt,        \
                               ##__VA_ARGS__);                                               \
  } while (0)

#define ZN_WARN(flags, fmt, ...) ZN_LOG(NCCL_LOG_WARN, flags, fmt, ##__VA_ARGS__)
#define ZN_INFO(flags, fmt, ...) ZN_LOG(NCCL_LOG_INFO, flags, fmt, ##__VA_ARGS__)
#define ZN_TRACE(flags, fmt, ...) ZN_LOG(NCCL_LOG_TRACE, flags, fmt, ##__VA_ARGS__)
