#include "plugin/pipeline/ordered_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace zipnet::pipeline {

// no-tree-loop-distribute-patterns: keep GCC from turning the loop back into a memcpy call.
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void ordered_copy(void* dst_v,
                                                                                 const void* src_v,
                                                                                 size_t n) {
  auto* dst = static_cast<uint8_t*>(dst_v);
  auto* src = static_cast<const uint8_t*>(src_v);
  size_t i = 0;
#if defined(__SSE2__)
  for (; i + 64 <= n; i += 64) {  // 16-byte ordinary stores, ascending
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
#endif
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    std::memcpy(&v, src + i, 8);  // fixed-size memcpy compiles to one load and one store
    std::memcpy(dst + i, &v, 8);
  }
  for (; i < n; ++i) dst[i] = src[i];
}

}  // namespace zipnet::pipeline
