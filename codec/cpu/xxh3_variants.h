// XXH3-64 compiled for each SIMD level (xxhash.h picks its vector code at compile time, so each
// level lives in its own translation unit with its own target pragma). Same result everywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zipnet::codec::cpu {

uint64_t xxh3_default(const void* p, size_t n);  // the build's baseline (SSE2 on x86-64)
uint64_t xxh3_avx2(const void* p, size_t n);     // call only when the CPU has AVX2
uint64_t xxh3_avx512(const void* p, size_t n);   // call only when the CPU has AVX-512 F/BW

}  // namespace zipnet::codec::cpu
