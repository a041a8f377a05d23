// AVX2 versions of the hot loops (placeholder until written: none).
#include "cpu/kernels.h"

namespace zipnet::codec::cpu {
const Kernels* avx2_kernels() { return nullptr; }
}  // namespace zipnet::codec::cpu
