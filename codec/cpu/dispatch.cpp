// Picks the SIMD path once, from what this CPU supports; set_cpu_path() overrides it (tests, zipbench).
#include <atomic>
#include <string_view>

#include "cpu/kernels.h"
#include "zipnet/codec.h"

namespace zipnet::codec {
namespace cpu {
namespace {

const Kernels* best_kernels() {
  if (const Kernels* k = avx512_kernels()) return k;
  if (const Kernels* k = avx2_kernels()) return k;
  return &portable_kernels();
}

std::atomic<const Kernels*>& active() {
  static std::atomic<const Kernels*> a{best_kernels()};
  return a;
}

}  // namespace

const Kernels& active_kernels() { return *active().load(std::memory_order_relaxed); }

}  // namespace cpu

std::string_view cpu_path() { return cpu::active_kernels().name; }

uint64_t checksum64(const void* p, size_t n) { return cpu::active_kernels().xxh3(p, n); }

bool set_cpu_path(std::string_view name) {
  const cpu::Kernels* k = nullptr;
  if (name == "portable") k = &cpu::portable_kernels();
  else if (name == "avx2") k = cpu::avx2_kernels();
  else if (name == "avx512") k = cpu::avx512_kernels();
  else if (name == "best" || name == "auto") k = cpu::best_kernels();
  if (!k) return false;
  cpu::active().store(k, std::memory_order_relaxed);
  return true;
}

}  // namespace zipnet::codec
