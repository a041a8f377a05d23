// The dtype rule of format §6 (common::detect_dtype) as the CPU encoder runs it per frame: the
// same integers, computed faster (one pass for the 16-bit splits, log2_q16 from a table of the
// same function's values). Must return exactly what common::detect_dtype returns.
#pragma once

#include <cstdint>

namespace zipnet::codec::cpu {

unsigned detect_dtype_fast(const uint8_t* sample, uint32_t len);

}  // namespace zipnet::codec::cpu
