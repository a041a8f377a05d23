// Helpers shared by the codec tests: data generators, a round trip that checks bytes, guard bytes
// around decode output, and the shipped tensors.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "zipnet/codec.h"

namespace zipnet::codec::test {

inline uint16_t bf16_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t(u >> 16);
}

inline std::vector<uint8_t> gaussian_bf16(size_t bytes, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  std::vector<uint8_t> out(bytes);
  for (size_t i = 0; i + 1 < bytes; i += 2) {
    uint16_t v = bf16_of(nd(rng));
    std::memcpy(&out[i], &v, 2);
  }
  if (bytes % 2) out[bytes - 1] = uint8_t(rng());
  return out;
}

inline std::vector<uint8_t> random_bytes(size_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(bytes);
  for (auto& b : out) b = uint8_t(rng() >> 56);
  return out;
}

inline std::vector<uint8_t> read_tensor(const std::string& name) {
  std::ifstream f(std::string(ZIPNET_TEST_DATA_DIR) + "/tensors/" + name, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

struct RoundTrip {
  bool ok = false;
  Status enc = Status::ok, dec = Status::ok;
  size_t original = 0, frame = 0;
  std::vector<uint8_t> bytes;  // the frame
  EncodeStats stats;
  double ratio() const { return frame ? double(original) / double(frame) : 0; }
};

// Encodes and decodes; checks the output bit for bit and that no guard byte around it changed.
// src_offset/dst_offset shift the buffers off alignment.
inline RoundTrip roundtrip(const uint8_t* src, size_t n, const EncodeOptions& opts = {}, size_t src_offset = 0,
                           size_t dst_offset = 0) {
  RoundTrip r;
  r.original = n;
  std::vector<uint8_t> in(n + src_offset + 1);
  if (n) std::memcpy(in.data() + src_offset, src, n);
  std::vector<uint8_t> frame(max_frame_size(n, opts.block_log2) + 64);
  r.enc = encode(in.data() + src_offset, n, frame.data() + dst_offset, frame.size() - dst_offset, &r.frame,
                 opts, &r.stats);
  if (r.enc != Status::ok) return r;
  r.bytes.assign(frame.begin() + dst_offset, frame.begin() + dst_offset + r.frame);
  const size_t guard = 64;
  std::vector<uint8_t> out(n + 2 * guard + dst_offset, 0xA5);
  size_t got = 0;
  r.dec = decode(frame.data() + dst_offset, r.frame, out.data() + guard + dst_offset, n, &got);
  if (r.dec != Status::ok || got != n) return r;
  if (n && std::memcmp(out.data() + guard + dst_offset, src, n) != 0) return r;
  for (size_t i = 0; i < guard + dst_offset; ++i)
    if (out[i] != 0xA5) return r;
  for (size_t i = guard + dst_offset + n; i < out.size(); ++i)
    if (out[i] != 0xA5) return r;
  r.ok = true;
  return r;
}

}  // namespace zipnet::codec::test
