#include "plugin/log.h"

#include <atomic>

namespace zipnet::log {
namespace {
// Constant-initialised: no global constructor runs at dlopen.
std::atomic<ncclDebugLogger_t> g_logger{nullptr};
}  // namespace

void set_logger(ncclDebugLogger_t l) { g_logger.store(l, std::memory_order_release); }
ncclDebugLogger_t logger() { return g_logger.load(std::memory_order_acquire); }

}  // namespace zipnet::log
