// The bytes match docs/format.md: field offsets, XXH3 use (checked against xxhash.h directly),
// and frames built by hand from the document decode.
#include <catch2/catch.hpp>

#include <bit>

#include "codec_test_util.h"
#include "freq_table_cases.h"
#include "common/rans.h"
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
  f[4] = 3;
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
  CHECK(f[4] == 3);
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
  // Byte by byte: inserting the array tripped a GCC 12 -Wstringop-overflow false positive.
  for (const auto& pl : planes)
    for (uint8_t b : pl) wp.push_back(b);
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

namespace {

// A RANS block written from format.md §4.2 alone: a bf16 block of n elements (flat, no tail) with
// the given frequency table bytes. `freq` must match the table. Returns the frame.
struct HandRans {
  uint32_t lane0_extra = 0;   // added to global lane 0's start state: the decoder must refuse it
  int w0_delta = 0;           // added to the stored w0 (two streams)
  bool w0_padded = false;     // w0 in one byte more than it needs (a trailing 0x00 group)
};
uint32_t hand_seed_bytes(uint32_t n) {
  const bool seeded = 2 * n <= 2048 || (2 * n) % 2048 == 0;
  return seeded ? std::min<uint32_t>(64 * (n > 8192 ? 2 : 1), n & ~1u) : 0;
}
std::vector<uint8_t> hand_rans_frame(const std::vector<uint16_t>& v, const std::vector<uint8_t>& table,
                                     const uint32_t (&freq)[256], HandRans opt = {}) {
  const uint32_t n = uint32_t(v.size()), L = 1u << 16;
  uint32_t cum[256], c = 0;
  for (int s = 0; s < 256; ++s) {
    cum[s] = c;
    c += freq[s];
  }
  std::vector<uint8_t> res(n), sym(n);
  for (uint32_t i = 0; i < n; ++i) {
    res[i] = uint8_t(((v[i] >> 15) << 7) | (v[i] & 0x7F));
    sym[i] = uint8_t((v[i] >> 7) & 0xFF);
  }
  // Streams: [0, n) alone up to 8192 elements, else [0, h) and [h, n), h = 32 * ceil(n / 64).
  const uint32_t streams = n > 8192 ? 2 : 1, h = streams == 2 ? 32 * ((n + 63) / 64) : n;
  const uint32_t bounds[3] = {0, h, n};
  // Seeds: the last min(64 * streams, n & ~1) residual bytes (none when the block is above 2 KiB
  // and not a multiple of it); global lane g starts at L + bytes 2g, 2g+1 of them.
  const uint32_t seed = hand_seed_bytes(n);
  std::vector<uint32_t> x(32 * streams);
  for (uint32_t g = 0; g < x.size(); ++g)
    x[g] = L + (2 * g < seed ? res[n - seed + 2 * g] | (uint32_t(res[n - seed + 2 * g + 1]) << 8) : 0);
  x[0] += opt.lane0_extra;
  std::vector<uint16_t> words[2];  // each stream's in emission order; its decoder reads them reversed
  for (uint32_t st = 0; st < streams; ++st) {
    for (uint32_t i = bounds[st + 1]; i-- > bounds[st];) {
      uint32_t& s = x[32 * st + (i - bounds[st]) % 32];
      const uint32_t f = freq[sym[i]];
      if (uint64_t(s) >= uint64_t((L >> 11) << 16) * f) {
        words[st].push_back(uint16_t(s));
        s >>= 16;
      }
      s = ((s / f) << 11) + (s % f) + cum[sym[i]];
    }
  }
  std::vector<uint8_t> payload = {3, 0x3};  // RANS, symbol plane + residual plane 0
  payload.insert(payload.end(), res.begin(), res.end() - seed);
  payload.insert(payload.end(), table.begin(), table.end());
  // States: 4-bit length codes floor(log2 x) - 16, two a byte, low nibble first; then each
  // state's bits below its top one, LSB first, zero-padded to a byte.
  auto code = [](uint32_t s) { return uint32_t(std::bit_width(s) - 17); };
  for (uint32_t g = 0; g < x.size(); g += 2) payload.push_back(uint8_t(code(x[g]) | (code(x[g + 1]) << 4)));
  std::vector<bool> bits;
  for (uint32_t s : x)
    for (uint32_t b = 0; b < 16 + code(s); ++b) bits.push_back((s >> b) & 1);
  for (size_t b = 0; b < bits.size(); b += 8) {
    uint8_t byte = 0;
    for (size_t k = 0; k < 8 && b + k < bits.size(); ++k) byte |= uint8_t(bits[b + k] << k);
    payload.push_back(byte);
  }
  if (streams == 2) {  // w0 in LEB128
    uint32_t w0 = uint32_t(int(words[0].size()) + opt.w0_delta);
    while (w0 >= 0x80) {
      payload.push_back(uint8_t(0x80 | (w0 & 0x7F)));
      w0 >>= 7;
    }
    if (opt.w0_padded) {
      payload.push_back(uint8_t(0x80 | w0));
      payload.push_back(0);
    } else {
      payload.push_back(uint8_t(w0));
    }
  }
  for (uint32_t st = 0; st < streams; ++st)
    for (size_t k = words[st].size(); k-- > 0;) {
      payload.push_back(uint8_t(words[st][k]));
      payload.push_back(uint8_t(words[st][k] >> 8));
    }
  auto f = header(1, 2ull * n);
  f.resize(48);
  const uint32_t end = uint32_t(payload.size());
  const uint32_t sum = uint32_t(XXH3_64bits(v.data(), 2ull * n));
  std::memcpy(&f[40], &end, 4);
  std::memcpy(&f[44], &sum, 4);
  f.insert(f.end(), payload.begin(), payload.end());
  finish_frame(f);
  return f;
}

}  // namespace

TEST_CASE("a RANS frame written by hand from format.md decodes: streams, seeds, zero runs, implied last frequency",
          "[format]") {
  // Symbols 120 (f 1000, two-byte entry), 121 absent (0x00), 122 (f 40), 123..124 absent (a run
  // of 2), 125 (implied: 2048 - 1040 = 1008).
  uint32_t freq[256] = {};
  freq[120] = 1000;
  freq[122] = 40;
  freq[125] = 1008;
  const std::vector<uint8_t> table = {120, 5, uint8_t(0x80 | (1000 & 0x7F)), uint8_t(1000 >> 7), 0x00, 40, 0x80, 0x00};
  // One stream up to 8192 elements, two above (8193: stream 1 one element shorter; 16384: a 32 KiB
  // block of bf16).
  for (uint32_t n : {1u, 2u, 33u, 64u, 65u, 100u, 1000u, 8192u, 8193u, 9001u, 16384u}) {
    INFO("n " << n);
    std::vector<uint16_t> v(n);
    uint32_t r = 12345 + n;
    for (auto& e : v) {
      r = r * 1103515245u + 12345u;
      const uint32_t pick = (r >> 16) % 2048;
      const uint32_t s = pick < 1000 ? 120 : pick < 1040 ? 122 : 125;
      e = uint16_t(((r >> 8) & 0x8000) | (s << 7) | ((r >> 3) & 0x7F));
    }
    auto f = hand_rans_frame(v, table, freq);
    std::vector<uint16_t> out(n);
    size_t got = 0;
    REQUIRE(decode(f.data(), f.size(), out.data(), 2ull * n, &got) == Status::ok);
    CHECK(got == 2ull * n);
    CHECK(out == v);
    // The decoder must end every seeded lane in [L, 2L) and every other at L: an encoder that
    // started lane 0 at 2L + its seed (or L + 1 when unseeded) made a corrupt block.
    const uint32_t streams = n > 8192 ? 2 : 1, seed = hand_seed_bytes(n);
    auto bad = hand_rans_frame(v, table, freq, {.lane0_extra = seed ? 1u << 16 : 1u});
    CHECK(decode(bad.data(), bad.size(), out.data(), 2ull * n, &got) == Status::corrupt_block);
    if (streams == 2) {
      // w0 must count stream 0's words exactly, and have one encoding.
      for (int delta : {-1, 1}) {
        auto w0 = hand_rans_frame(v, table, freq, {.w0_delta = delta});
        CHECK(decode(w0.data(), w0.size(), out.data(), 2ull * n, &got) == Status::corrupt_block);
      }
      auto padded = hand_rans_frame(v, table, freq, {.w0_padded = true});
      CHECK(decode(padded.data(), padded.size(), out.data(), 2ull * n, &got) == Status::corrupt_block);
    }
    // A set padding bit after the states' bits is refused (one encoding only).
    const size_t area = 48 + 2 + (n - seed) + table.size();
    uint32_t bits = 0;
    for (uint32_t g = 0; g < 32 * streams; ++g) bits += 16 + ((f[area + g / 2] >> (4 * (g % 2))) & 0xF);
    if (bits % 8) {
      auto pad = f;
      pad[area + 16 * streams + bits / 8] |= 0x80;
      finish_frame(pad);
      CHECK(decode(pad.data(), pad.size(), out.data(), 2ull * n, &got) == Status::corrupt_block);
    }
  }
  // Table errors: a run reaching hi, listed frequencies reaching M.
  std::vector<uint16_t> v(100, uint16_t(120 << 7));
  for (const auto& t : {std::vector<uint8_t>{120, 5, 0x80 | (1000 & 0x7F), 1000 >> 7, 0x00, 40, 0x81, 0x00},
                        std::vector<uint8_t>{120, 1, 0x80, 16}}) {
    auto f = hand_rans_frame(v, t, freq);
    std::vector<uint16_t> out(v.size());
    size_t got = 0;
    CHECK(decode(f.data(), f.size(), out.data(), 2 * v.size(), &got) == Status::corrupt_block);
  }
}

TEST_CASE("lane seeds are used only in blocks of at most, or a multiple of, 2 KiB", "[format]") {
  // One block of each size, RANS forced: where the table starts shows how many residual bytes the
  // payload left out to the seeds.
  auto g = gaussian_bf16(6154, 131);  // 6154 bytes: above 2048 and not a multiple of it
  for (size_t bytes : {size_t(2048), size_t(4096), size_t(6154), size_t(1000)}) {
    INFO("bytes " << bytes);
    EncodeOptions o;
    o.modes = mode_bit(Mode::rans);
    o.dtype = Dtype::bf16;
    std::vector<uint8_t> f(max_frame_size(bytes));
    size_t fsize = 0;
    REQUIRE(encode(g.data(), bytes, f.data(), f.size(), &fsize, o) == Status::ok);
    REQUIRE(f[48] == 3);  // RANS
    const uint32_t n = uint32_t(bytes / 2);
    const bool seeded = bytes <= 2048 || bytes % 2048 == 0;
    const uint32_t seed = seeded ? std::min<uint32_t>(64, n & ~1u) : 0;
    // The table starts right after mode, mask and the stored residual bytes: its lo byte is the
    // lowest symbol present, and states follow it.
    const uint8_t lo = f[48 + 2 + n - seed];
    uint8_t min_sym = 255;
    for (uint32_t i = 0; i < n; ++i) min_sym = std::min<uint8_t>(min_sym, uint8_t((at<uint16_t>(g, 2 * i) >> 7) & 0xFF));
    CHECK(lo == min_sym);
    std::vector<uint8_t> out(bytes);
    size_t got = 0;
    REQUIRE(decode(f.data(), fsize, out.data(), bytes, &got) == Status::ok);
    CHECK(std::memcmp(out.data(), g.data(), bytes) == 0);
  }
}

TEST_CASE("frequency tables: the serial writer, the per-symbol (GPU) writer and the parser agree",
          "[format]") {
  using namespace zipnet::codec::common;
  uint32_t r = 7;
  auto next = [&] { return r = r * 1103515245u + 12345u, r >> 8; };
  for (int trial = 0; trial < 3000; ++trial) {
    uint32_t freq[256];
    zipnet::codec::test::random_freqs(next, trial % 7 == 0, freq);
    int tlo, thi;
    symbol_range(freq, &tlo, &thi);
    std::vector<uint8_t> serial(600), parallel(600);
    const uint32_t n = write_freq_table(freq, serial.data());
    REQUIRE(n == freq_table_size(freq));
    uint32_t k = 2;
    parallel[0] = uint8_t(tlo);
    parallel[1] = uint8_t(thi - tlo);
    for (int s = 0; s < 256; ++s) {
      const uint32_t b = table_entry_bytes(freq, s, tlo, thi);
      if (b) write_table_entry(freq, s, thi, parallel.data() + k);
      k += b;
    }
    REQUIRE(k == n);
    REQUIRE(std::equal(serial.begin(), serial.begin() + n, parallel.begin()));
    uint32_t back[256], consumed = 0;
    REQUIRE(parse_freq_table(serial.data(), n, back, &consumed));
    CHECK(consumed == n);
    CHECK(std::equal(back, back + 256, freq));
    if (n > 2) CHECK_FALSE(parse_freq_table(serial.data(), n - 1, back, &consumed));  // truncated
  }
}

TEST_CASE("final states: the length-coded area round-trips, is exact in size and has one encoding", "[format]") {
  using namespace zipnet::codec::common;
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 4000; ++trial) {
    const unsigned lanes = trial % 2 ? 64 : 32;
    uint32_t x[64];
    for (unsigned l = 0; l < lanes; ++l) {
      // Every length code, its extremes included: [2^(16+k), 2^(17+k)).
      const unsigned k = unsigned(rng() % 16), lo_bits = 16 + k;
      const uint32_t low = uint32_t(rng()) & ((1u << lo_bits) - 1u);
      x[l] = (1u << lo_bits) | (trial % 7 == 0 ? 0u : trial % 7 == 1 ? (1u << lo_bits) - 1u : low);
    }
    std::vector<uint8_t> area(state_area_bytes(x, lanes) + 8, 0xAA);
    const uint32_t n = write_states(x, lanes, area.data());
    REQUIRE(n == state_area_bytes(x, lanes));
    uint32_t bits = 0;
    for (unsigned l = 0; l < lanes; ++l) bits += uint32_t(std::bit_width(x[l])) - 1;
    REQUIRE(n == lanes / 2 + (bits + 7) / 8);  // the codes, then the bits below each top bit
    uint32_t back[64], used = 0;
    REQUIRE(read_states(area.data(), n, lanes, back, &used));
    CHECK(used == n);
    CHECK(std::equal(x, x + lanes, back));
    CHECK_FALSE(read_states(area.data(), n - 1, lanes, back, &used));  // truncated
    if (bits % 8) {  // a set padding bit is refused
      area[n - 1] |= uint8_t(0x80);
      CHECK_FALSE(read_states(area.data(), n, lanes, back, &used));
    }
  }
}

TEST_CASE("w0's LEB128: every count round-trips, and only the shortest form is read", "[format]") {
  using namespace zipnet::codec::common;
  for (uint32_t v : {0u, 1u, 127u, 128u, 300u, 16383u, 16384u, 524288u, (1u << 21) - 1}) {
    uint8_t b[4] = {};
    const uint32_t n = write_varint(v, b);
    REQUIRE(n == varint_bytes(v));
    uint32_t back = 0, used = 0;
    REQUIRE(read_varint(b, n, &back, &used));
    CHECK(back == v);
    CHECK(used == n);
    CHECK_FALSE(read_varint(b, n - 1, &back, &used));  // truncated
  }
  uint32_t v = 0, used = 0;
  const uint8_t padded[] = {0x85, 0x00}, four[] = {0x80, 0x80, 0x80, 0x01};
  CHECK_FALSE(read_varint(padded, 2, &v, &used));  // 5 in two bytes
  CHECK_FALSE(read_varint(four, 4, &v, &used));    // longer than 3 bytes
}

TEST_CASE("the GPU encoder's division by a multiply-high is exact for every frequency", "[format]") {
  using namespace zipnet::codec::common;
  std::mt19937_64 rng(7);
  uint64_t checked = 0, wrong = 0;
  for (uint32_t f = 1; f <= kProbScale; ++f) {  // f = 1 too: the encoder does not special-case it
    const RansDivisor d = rans_divisor(f);
    std::vector<uint32_t> xs = {0, 1, f - 1, f, f + 1, 0xFFFFFFFFu, 0xFFFFFFFFu - f, (0xFFFFFFFFu / f) * f,
                                (0xFFFFFFFFu / f) * f - 1, kRansL, (f << kRenormShift) - 1};
    for (int k = 0; k < 2000; ++k) xs.push_back(uint32_t(rng()));
    for (uint32_t q = 1; q < 64; ++q) xs.push_back(q * f - 1), xs.push_back(q * f);
    for (uint32_t x : xs) {
      wrong += rans_divide(x, d) != x / f;
      ++checked;
    }
  }
  INFO(checked << " quotients checked");
  CHECK(wrong == 0);
}
