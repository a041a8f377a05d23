// Random rANS frequency tables for the table tests (test_format.cpp on the CPU,
// gpu/test_gpu_freq_table.cpp against the GPU's warp parser).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/rans.h"

namespace zipnet::codec::test {

// freq[256] (zeroed here) summing to M over a random support [lo, lo + span): runs of absent
// symbols of every length (up to 254, past kMaxZeroRun), frequencies on both sides of 0x80, and
// single-symbol tables. only_ends: only the support's two ends are present. next(): a random
// unsigned value of at least 16 bits.
template <class Next>
void random_freqs(Next&& next, bool only_ends, uint32_t* freq) {
  using common::kProbScale;
  std::fill(freq, freq + 256, 0u);
  const int lo = int(next() % 200), span = 1 + int(next() % (256 - lo));
  const int density = 1 + int(next() % 4);
  std::vector<int> used = {lo, lo + span - 1};  // the same symbol twice when span is 1
  for (int s = lo + 1; s < lo + span - 1; ++s)
    if (next() % 8 < unsigned(density) && !only_ends) used.push_back(s);
  uint32_t left = kProbScale;
  for (size_t k = 0; k < used.size(); ++k) {
    const uint32_t rest = uint32_t(used.size() - k - 1);
    uint32_t f = k + 1 == used.size() ? left : 1 + uint32_t(next() % std::max<uint32_t>(1, (left - rest) / 2));
    if (f > left - rest) f = left - rest;
    freq[used[k]] += f;
    left -= f;
  }
}

}  // namespace zipnet::codec::test
