// The decoders' warp-parallel frequency-table parser against common::parse_freq_table: the same
// verdict, consumed bytes and frequencies on valid tables, on every truncation of some, on single
// bit flips and byte changes, and on random bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "common/rans.h"
#include "freq_table_cases.h"

bool device_parse_freq_tables(const std::vector<uint8_t>& buf, const std::vector<uint32_t>& offs,
                              const std::vector<uint32_t>& avails, std::vector<uint32_t>* out);

namespace {
using namespace zipnet::codec::common;

// A valid table, as test_format.cpp's table tests make them.
std::vector<uint8_t> random_table(std::mt19937_64& rng) {
  uint32_t freq[256];
  zipnet::codec::test::random_freqs(rng, false, freq);
  std::vector<uint8_t> t(600);
  t.resize(write_freq_table(freq, t.data()));
  return t;
}
}  // namespace

TEST_CASE("GPU: the warp frequency-table parser agrees with the serial one", "[corrupt]") {
  std::mt19937_64 rng(11);
  std::vector<uint8_t> buf;
  std::vector<uint32_t> offs, avails;
  auto add = [&](const std::vector<uint8_t>& t, uint32_t avail) {
    offs.push_back(uint32_t(buf.size()));
    avails.push_back(avail);
    buf.insert(buf.end(), t.begin(), t.end());
    buf.resize(buf.size() + 8, 0xEE);  // bytes past avail that the parser must not take
  };
  uint32_t valid = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    std::vector<uint8_t> t = random_table(rng);
    const uint32_t n = uint32_t(t.size());
    add(t, n);
    add(t, n + 8);  // with the bytes after it counted as available
    ++valid;
    if (trial % 50 == 0)
      for (uint32_t cut = 0; cut < n; ++cut) add(t, cut);  // every truncation
    else
      add(t, uint32_t(rng() % (n + 1)));
    for (int m = 0; m < 4; ++m) {  // a bit flip, then a byte changed to anything
      std::vector<uint8_t> b = t;
      const size_t at = rng() % n;
      if (m < 2) b[at] ^= uint8_t(1u << (rng() % 8));
      else b[at] = uint8_t(rng());
      add(b, n);
    }
  }
  for (int trial = 0; trial < 1000; ++trial) {  // random bytes, some with a plausible range
    std::vector<uint8_t> b(1 + rng() % 520);
    for (auto& x : b) x = uint8_t(rng());
    if (trial % 2 && b.size() > 1) b[1] = uint8_t(b[1] % (256 - b[0]));
    if (trial % 4 == 1) std::replace_if(b.begin() + std::min<size_t>(2, b.size()), b.end(), [](uint8_t x) { return x >= 0x80 && x % 3; }, uint8_t(0));
    add(b, uint32_t(b.size()));
  }
  std::vector<uint32_t> out;
  REQUIRE(device_parse_freq_tables(buf, offs, avails, &out));
  uint32_t accepted = 0, rejected = 0;
  for (size_t i = 0; i < offs.size(); ++i) {
    uint32_t freq[256] = {}, consumed = 0;
    const bool ok = parse_freq_table(buf.data() + offs[i], avails[i], freq, &consumed);
    const uint32_t* g = out.data() + i * 258;
    INFO("table " << i << " of " << avails[i] << " bytes");
    REQUIRE(bool(g[0]) == ok);
    if (!ok) {
      ++rejected;
      continue;
    }
    ++accepted;
    REQUIRE(g[1] == consumed);
    REQUIRE(std::equal(freq, freq + 256, g + 2));
  }
  CHECK(accepted >= 2 * valid);  // every valid table, alone and with bytes after it
  CHECK(rejected > 1000);
}
