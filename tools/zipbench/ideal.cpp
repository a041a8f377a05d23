#include "ideal.h"

#include <cmath>

#include "common/elements.h"

namespace zipbench {
namespace {

using namespace zipnet::codec::common;

// Returns the entropy of the chunk's symbols in bits; *raw_bits gets the residual + tail bits.
double chunk_bits(const uint8_t* p, size_t n, unsigned d, double* raw_bits) {
  const unsigned es = element_size(d), planes = residual_planes(d);
  const size_t count = n / es;
  uint64_t hist[256] = {};
  uint32_t res_or = 0;
  for (size_t i = 0; i < count; ++i) {
    uint32_t v = load_element(es, p + i * es);
    ++hist[symbol_of(d, v)];
    res_or |= residual_of(d, v);
  }
  double bits = 0;
  for (uint64_t c : hist)
    if (c) bits -= double(c) * std::log2(double(c) / double(count));
  unsigned nz = 0;
  for (unsigned j = 0; j < planes; ++j) nz += ((res_or >> (8 * j)) & 0xFF) != 0;
  *raw_bits = 8.0 * (double(nz) * double(count) + double(n % es));
  return bits;
}

}  // namespace

double ideal_ratio(const uint8_t* data, size_t n, zipnet::codec::Dtype dtype, size_t chunk) {
  double bits = 0;
  for (size_t off = 0; off < n; off += chunk) {
    size_t len = n - off < chunk ? n - off : chunk;
    double raw = 0;
    bits += chunk_bits(data + off, len, unsigned(dtype), &raw) + raw;
  }
  return bits > 0 ? 8.0 * double(n) / bits : 0.0;
}

double symbol_entropy_bytes(const uint8_t* data, size_t n, zipnet::codec::Dtype dtype, size_t block) {
  double bits = 0;
  for (size_t off = 0; off < n; off += block) {
    size_t len = n - off < block ? n - off : block;
    double raw = 0;
    bits += chunk_bits(data + off, len, unsigned(dtype), &raw);
  }
  return bits / 8.0;
}

}  // namespace zipbench
