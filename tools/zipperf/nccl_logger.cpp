#include "nccl_logger.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace zipperf {
namespace {

constexpr size_t kMaxCaptured = 20000;  // a runaway plugin must not eat the test's memory

std::mutex& log_mutex() {
  static std::mutex m;
  return m;
}
std::vector<LogLine>& log_store() {
  static std::vector<LogLine> v;
  return v;
}

ncclDebugLogLevel level_from_env() {
  const char* e = std::getenv("NCCL_DEBUG");
  if (e == nullptr) return NCCL_LOG_WARN;
  if (strcasecmp(e, "VERSION") == 0) return NCCL_LOG_VERSION;
  if (strcasecmp(e, "WARN") == 0) return NCCL_LOG_WARN;
  if (strcasecmp(e, "INFO") == 0) return NCCL_LOG_INFO;
  if (strcasecmp(e, "TRACE") == 0) return NCCL_LOG_TRACE;
  if (strcasecmp(e, "NONE") == 0) return NCCL_LOG_NONE;
  return NCCL_LOG_WARN;
}

int g_print_level = -1;  // -1: not yet read from NCCL_DEBUG

const char* level_word(ncclDebugLogLevel l) {
  switch (l) {
    case NCCL_LOG_WARN: return "WARN";
    case NCCL_LOG_INFO: return "INFO";
    case NCCL_LOG_TRACE: return "TRACE";
    case NCCL_LOG_VERSION: return "VERSION";
    case NCCL_LOG_ABORT: return "ABORT";
    default: return "?";
  }
}

void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt ? fmt : "(null format)", ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(log_mutex());
  if (g_print_level < 0) g_print_level = level_from_env();
  if ((level == NCCL_LOG_WARN || level == NCCL_LOG_INFO || level == NCCL_LOG_ABORT) &&
      log_store().size() < kMaxCaptured)
    log_store().push_back({level, flags, msg});
  if (static_cast<int>(level) > g_print_level && level != NCCL_LOG_ABORT) return;
  char host[64] = "?";
  gethostname(host, sizeof host - 1);
  if (level == NCCL_LOG_TRACE)
    std::fprintf(stderr, "%s:%d:%ld [0] NCCL TRACE %s:%d %s\n", host, getpid(), syscall(SYS_gettid),
                 file ? file : "?", line, msg);
  else
    std::fprintf(stderr, "%s:%d:%ld [0] NCCL %s %s\n", host, getpid(), syscall(SYS_gettid), level_word(level), msg);
}

}  // namespace

ncclDebugLogger_t nccl_logger() { return &logger; }

void set_print_level(ncclDebugLogLevel level) {
  std::lock_guard<std::mutex> lock(log_mutex());
  g_print_level = static_cast<int>(level);
}

std::vector<LogLine> captured_log() {
  std::lock_guard<std::mutex> lock(log_mutex());
  return log_store();
}

std::vector<std::string> captured_warnings() {
  std::lock_guard<std::mutex> lock(log_mutex());
  std::vector<std::string> out;
  for (const LogLine& l : log_store())
    if (l.level == NCCL_LOG_WARN) out.push_back(l.text);
  return out;
}

void clear_captured_log() {
  std::lock_guard<std::mutex> lock(log_mutex());
  log_store().clear();
}

}  // namespace zipperf
