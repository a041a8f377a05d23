// rans_lanes: what more rANS lanes per block would cost in ratio (a study for a future wire
// format; docs/benchmarks.md, "Fifth session").
//
// The GPU codec's speed on small batches is bound by one block's recurrence: n / lanes dependent
// steps. More lanes shorten it, but every lane ends with a final state to store. This codes every
// 32 KiB block of each bf16 file as format 2 does (11-bit frequencies by common::quantize_freqs,
// L = 2^16, 16-bit words, every lane seeded with 16 data bits, 3- or 4-byte final states, one
// short-state bit per lane) for several lane counts, and prints the symbol section's size
// (words + states + mask - seeds) over the blocks' order-0 exponent entropy. The frequency table
// is left out: it is the same for every lane count.
//
// Usage: rans_lanes FILE.bf16...
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/rans.h"

using namespace zipnet::codec::common;

namespace {

constexpr size_t kBlockElems = 16384;  // 32 KiB of bf16
constexpr uint32_t kShortState = 1u << 24;  // format 2 stored states below this in 3 bytes

// The file's bf16 values; false if it cannot be read.
bool read_bf16(const char* path, std::vector<uint16_t>* out) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const auto bytes = static_cast<size_t>(in.tellg());
  std::vector<uint16_t> v(bytes / 2);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 2));
  *out = std::move(v);
  return bool(in);
}

// Section bytes over entropy bytes, minus one, over every whole block of `raw`.
double overhead(const std::vector<uint16_t>& raw, unsigned lanes, std::mt19937& rng) {
  double section = 0, entropy = 0;
  std::vector<uint8_t> sym(kBlockElems);
  std::vector<uint32_t> x(lanes);
  for (size_t b = 0; b < raw.size() / kBlockElems; ++b) {
    uint32_t hist[256] = {}, freq[256], cum[256];
    for (size_t i = 0; i < kBlockElems; ++i) ++hist[sym[i] = (raw[b * kBlockElems + i] >> 7) & 0xFF];
    quantize_freqs(hist, kBlockElems, freq);
    cumulative(freq, cum);
    for (uint32_t c : hist)
      if (c) entropy -= c * std::log2(double(c) / kBlockElems) / 8;
    for (auto& xi : x) xi = kRansL + (rng() & 0xFFFF);  // seeds: 16 incompressible bits
    uint64_t words = 0;
    for (size_t i = kBlockElems; i-- > 0;) {  // element i is lane i % lanes, coded last to first
      uint32_t& xi = x[i % lanes];
      const uint32_t f = freq[sym[i]];
      if ((xi >> kRenormShift) >= f) ++words, xi >>= 16;
      xi = ((xi / f) << kProbBits) + xi % f + cum[sym[i]];
    }
    uint64_t state_bytes = 0;
    for (uint32_t xi : x) state_bytes += xi < kShortState ? 3 : 4;
    section += 2.0 * words + state_bytes + lanes / 8.0 - 2.0 * lanes;
  }
  return entropy > 0 ? section / entropy - 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: rans_lanes FILE.bf16...\n");
    return 2;
  }
  std::mt19937 rng(1);
  for (int a = 1; a < argc; ++a) {
    std::vector<uint16_t> raw;
    if (!read_bf16(argv[a], &raw)) {
      std::fprintf(stderr, "rans_lanes: cannot read %s\n", argv[a]);
      return 1;
    }
    const std::string name = argv[a];
    std::printf("%-22s", name.substr(name.rfind('/') + 1).c_str());
    for (unsigned lanes : {32u, 64u, 128u, 256u}) std::printf("  %3u lanes: +%.2f%%", lanes, 100 * overhead(raw, lanes, rng));
    std::printf("\n");
  }
  return 0;
}
