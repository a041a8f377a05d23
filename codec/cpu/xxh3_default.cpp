// XXH3 at the build's baseline vector level.
#include "cpu/xxh3_variants.h"
#include "xxhash.h"

namespace zipnet::codec::cpu {
uint64_t xxh3_default(const void* p, size_t n) { return XXH3_64bits(p, n); }
}  // namespace zipnet::codec::cpu
