#include "plugin/open_comms.h"

#include <pthread.h>

#include <unordered_map>

namespace zipnet::open_comms {
namespace {

struct Entry {
  const void* ctx;
  Closer close;
};
// Allocated on first use and freed when it empties, so no global constructor or destructor runs
// at dlopen/dlclose and a load/unload cycle leaves no heap behind.
pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
std::unordered_map<void*, Entry>* g_open = nullptr;

struct Lock {
  Lock() { pthread_mutex_lock(&g_mu); }
  ~Lock() { pthread_mutex_unlock(&g_mu); }
};

void free_if_empty() {
  if (g_open && g_open->empty()) {
    delete g_open;
    g_open = nullptr;
  }
}

}  // namespace

void add(const void* ctx, void* obj, Closer close) {
  Lock lk;
  if (!g_open) g_open = new std::unordered_map<void*, Entry>();
  (*g_open)[obj] = Entry{ctx, close};
}

bool remove(void* obj, Closer close) {
  Lock lk;
  if (!g_open) return false;
  auto it = g_open->find(obj);
  if (it == g_open->end() || it->second.close != close) return false;
  g_open->erase(it);
  free_if_empty();
  return true;
}

std::vector<std::pair<void*, Closer>> take(const void* ctx) {
  std::vector<std::pair<void*, Closer>> out;
  Lock lk;
  if (!g_open) return out;
  for (auto it = g_open->begin(); it != g_open->end();) {
    if (it->second.ctx == ctx) {
      out.emplace_back(it->first, it->second.close);
      it = g_open->erase(it);
    } else {
      ++it;
    }
  }
  free_if_empty();
  return out;
}

}  // namespace zipnet::open_comms
