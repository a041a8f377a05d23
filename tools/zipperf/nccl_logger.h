// The logger callback zipperf hands to the plugin's init, standing in for NCCL's.
//
// It prints lines in NCCL's format ("host:pid:tid [0] NCCL WARN ...") to stderr at or below the
// level named by NCCL_DEBUG (VERSION, WARN, INFO, TRACE; default WARN), and keeps every WARN and INFO
// line in memory so tests can assert on what the plugin said.
#pragma once

#include <string>
#include <vector>

#include "net_abi.h"

namespace zipperf {

struct LogLine {
  ncclDebugLogLevel level;
  unsigned long flags;
  std::string text;  // the formatted message, without NCCL's prefix
};

ncclDebugLogger_t nccl_logger();
// Overrides NCCL_DEBUG for printing (NCCL_LOG_NONE silences the terminal; capture goes on).
void set_print_level(ncclDebugLogLevel level);
std::vector<LogLine> captured_log();
std::vector<std::string> captured_warnings();
void clear_captured_log();

}  // namespace zipperf
