// The bytes match docs/format.md: field offsets, XXH3 use (checked against xxhash.h directly),
// and frames built by hand from the document decode.
#include <catch2/catch.hpp>

#include "codec_test_util.h"
#include "cpu/xxh3_variants.h"
#include "xxhash.h"

using namespace zipnet::codec;
using namespace zipnet::codec::test;

namespace {

template <class T>
T at(const std::vector<uint8_t>& b, size_t off) {
  T v;
  std::memcpy(&v, &b[off], sizeof(T));
  return v;
}

void finish_frame(std::vector<uint8_t>& f) {
  const uint64_t orig = at<uint64_t>(f, 8);
  const size_t nblk = (orig + (size_t(1) << f[7]) - 1) >> f[7];
  uint64_t size = f.size();
  std::memcpy(&f[16], &size, 8);
  uint32_t th = uint32_t(XXH3_64bits(&f[40], 8 * nblk));
  std::memcpy(&f[32], &th, 4);
  uint32_t hh = uint32_t(XXH3_64bits(f.data(), 36));
  std::memcpy(&f[36], &hh, 4);
}

std::vector<uint8_t> header(uint8_t dtype, uint64_t orig) {
  std::vector<uint8_t> f(40, 0);
  uint32_t magic = 0x544E505A;
  std::memcpy(&f[0], &magic, 4);
  f[4] = 1;
  f[5] = dtype;
  f[6] = 0;
  f[7] = 15;
  std::memcpy(&f[8], &orig, 8);
  return f;
}

}  // namespace

TEST_CASE("header fields and checksums are where format.md says", "[format]") {
  auto g = gaussian_bf16(100000, 101);
  auto r = roundtrip(g.data(), g.size());
  REQUIRE(r.ok);
  auto& f = r.bytes;
  CHECK(std::string(reinterpret_cast<const char*>(f.data()), 4) == "ZPNT");
  CHECK(f[4] == 1);
  CHECK(f[5] == 1);  // bf16
  CHECK(f[6] == 0);
  CHECK(f[7] == 15);
  CHECK(at<uint64_t>(f, 8) == g.size());
  CHECK(at<uint64_t>(f, 16) == f.size());
  CHECK(at<uint64_t>(f, 24) == 0);
  const size_t nblk = (g.size() + 32767) / 32768;
  CHECK(at<uint32_t>(f, 32) == uint32_t(XXH3_64bits(&f[40], 8 * nblk)));
  CHECK(at<uint32_t>(f, 36) == uint32_t(XXH3_64bits(f.data(), 36)));
  uint32_t prev = 0;
  for (size_t i = 0; i < nblk; ++i) {
    size_t off = i * 32768, len = std::min<size_t>(32768, g.size() - off);
    CHECK(at<uint32_t>(f, 40 + 8 * i + 4) == uint32_t(XXH3_64bits(&g[off], len)));
    uint32_t end = at<uint32_t>(f, 40 + 8 * i);
    CHECK(end > prev);
    prev = end;
  }
  CHECK(40 + 8 * nblk + prev == f.size());
}

TEST_CASE("the XXH3 builds for each SIMD level agree with xxhash.h", "[format]") {
  auto d = random_bytes(70000, 102);
  for (size_t n = 0; n < 2100; n += (n < 260 ? 1 : 37)) {
    for (size_t off : {size_t(0), size_t(3)}) {
      uint64_t want = XXH3_64bits(d.data() + off, n);
      REQUIRE(zipnet::codec::cpu::xxh3_default(d.data() + off, n) == want);
      if (__builtin_cpu_supports("avx2")) REQUIRE(zipnet::codec::cpu::xxh3_avx2(d.data() + off, n) == want);
      if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
        REQUIRE(zipnet::codec::cpu::xxh3_avx512(d.data() + off, n) == want);
    }
  }
  CHECK(XXH3_64bits(d.data(), 65536) == zipnet::codec::cpu::xxh3_default(d.data(), 65536));
}

TEST_CASE("frames written by hand from format.md decode", "[format]") {
  // RAW: one block, mode 0 then the bytes.
  std::string msg = "hello, zipnet";
  auto f = header(0, msg.size());
  uint32_t end = 1 + uint32_t(msg.size());
  uint32_t sum = uint32_t(XXH3_64bits(msg.data(), msg.size()));
  f.resize(48);
  std::memcpy(&f[40], &end, 4);
  std::memcpy(&f[44], &sum, 4);
  f.push_back(0);
  f.insert(f.end(), msg.begin(), msg.end());
  finish_frame(f);
  std::vector<uint8_t> out(msg.size());
  size_t got = 0;
  REQUIRE(decode(f.data(), f.size(), out.data(), out.size(), &got) == Status::ok);
  CHECK(std::string(out.begin(), out.end()) == msg);

  // PLANES, bf16, 3 elements + 1 tail byte: residual plane, tail, symbols.
  const uint16_t v[3] = {0x3F80, 0xBFC1, 0x0000};  // 1.0, -1.5078125, 0
  std::vector<uint8_t> data(7);
  std::memcpy(data.data(), v, 6);
  data[6] = 0xEE;
  auto p = header(1, data.size());
  std::vector<uint8_t> payload = {1, 0x3};
  for (uint16_t e : v) payload.push_back(uint8_t(((e >> 15) << 7) | (e & 0x7F)));
  payload.push_back(0xEE);
  for (uint16_t e : v) payload.push_back(uint8_t((e >> 7) & 0xFF));
  p.resize(48);
  end = uint32_t(payload.size());
  sum = uint32_t(XXH3_64bits(data.data(), data.size()));
  std::memcpy(&p[40], &end, 4);
  std::memcpy(&p[44], &sum, 4);
  p.insert(p.end(), payload.begin(), payload.end());
  finish_frame(p);
  std::vector<uint8_t> out2(data.size());
  REQUIRE(decode(p.data(), p.size(), out2.data(), out2.size(), &got) == Status::ok);
  CHECK(out2 == data);

  // WINDOW, opaque, 10 symbols, base 100: codes for 100..106, two escapes.
  std::vector<uint8_t> sy = {100, 101, 106, 7, 103, 103, 200, 100, 102, 104};
  auto w = header(0, sy.size());
  std::vector<uint8_t> wp = {2, 1, 100};
  uint8_t planes[3][2] = {};
  std::vector<uint8_t> esc;
  for (size_t i = 0; i < sy.size(); ++i) {
    unsigned c = (sy[i] >= 100 && sy[i] <= 106) ? sy[i] - 100 + 1 : 0;
    if (!c) esc.push_back(sy[i]);
    for (int k = 0; k < 3; ++k)
      if (c >> k & 1) planes[k][i / 8] |= uint8_t(1u << (i % 8));
  }
  for (auto& pl : planes) wp.insert(wp.end(), pl, pl + 2);
  wp.insert(wp.end(), esc.begin(), esc.end());
  w.resize(48);
  end = uint32_t(wp.size());
  sum = uint32_t(XXH3_64bits(sy.data(), sy.size()));
  std::memcpy(&w[40], &end, 4);
  std::memcpy(&w[44], &sum, 4);
  w.insert(w.end(), wp.begin(), wp.end());
  finish_frame(w);
  std::vector<uint8_t> out3(sy.size());
  REQUIRE(decode(w.data(), w.size(), out3.data(), out3.size(), &got) == Status::ok);
  CHECK(out3 == sy);
}
