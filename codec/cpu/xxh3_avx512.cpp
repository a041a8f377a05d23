// XXH3 with xxhash.h's AVX512 code: every function in xxhash.h (all static with XXH_INLINE_ALL)
// is compiled for AVX512 here; callers check the CPU first (dispatch). The standard headers
// xxhash.h uses are included before the target pragma so that nothing outside xxhash.h changes.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 warns about _mm512_undefined_*() inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <assert.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <immintrin.h>

#include "cpu/xxh3_variants.h"

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2")
#endif
#undef XXH_VECTOR
#define XXH_VECTOR XXH_AVX512
#include "xxhash.h"
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
namespace zipnet::codec::cpu {
uint64_t xxh3_avx512(const void* p, size_t n) { return XXH3_64bits(p, n); }
}  // namespace zipnet::codec::cpu
#else
namespace zipnet::codec::cpu {
uint64_t xxh3_avx512(const void* p, size_t n) { return xxh3_default(p, n); }
}  // namespace zipnet::codec::cpu
#endif
