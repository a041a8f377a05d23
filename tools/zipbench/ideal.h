// Order-0 yardsticks zipbench prints beside the codec's figures.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zipnet/codec.h"

namespace zipbench {

// Ideal ratio of an order-0 exponent coder: per `chunk` bytes, the symbols (format §2) cost their
// order-0 entropy, the residual planes are raw (all-zero planes dropped, like the codec does), the
// tail is raw. Opaque data: order-0 byte entropy.
double ideal_ratio(const uint8_t* data, size_t n, zipnet::codec::Dtype dtype, size_t chunk = 64 << 10);

// Order-0 entropy, in bytes, of the symbols of each `block` bytes, summed (for comparing the rANS
// symbol sections against).
double symbol_entropy_bytes(const uint8_t* data, size_t n, zipnet::codec::Dtype dtype, size_t block);

}  // namespace zipbench
