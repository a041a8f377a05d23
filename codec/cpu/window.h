// Format §4.1: the 3-bit exponent window section (base, 3 code bit planes, escapes).
#pragma once

#include <cstdint>

namespace zipnet::codec::cpu {

// Writes the section for n symbols; returns its size (1 + 3*ceil(n/8) + escapes).
uint32_t window_encode(const uint8_t* sym, uint32_t n, uint32_t base, uint8_t* out);
// Decodes a section of exactly `size` bytes into n symbols; false if it is malformed.
bool window_decode(const uint8_t* in, uint32_t size, uint32_t n, uint8_t* sym);

}  // namespace zipnet::codec::cpu
