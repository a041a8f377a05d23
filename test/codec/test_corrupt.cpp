// Truncated and corrupted frames: decode returns an error and never writes outside the output
// (guard bytes on both sides). CI also runs this under ASan+UBSan.
#include <catch2/catch.hpp>

#include "codec_test_util.h"
#include "xxhash.h"

using namespace zipnet::codec;
using namespace zipnet::codec::test;

namespace {

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0x5A;

// Decodes into a buffer of exactly `cap` bytes between guards; fails the test if a guard changed.
Status guarded_decode(const std::vector<uint8_t>& frame, size_t size, size_t cap) {
  std::vector<uint8_t> out(cap + 2 * kGuard, kGuardByte);
  // A heap copy of exactly `size` bytes so that ASan catches any read past the frame.
  std::vector<uint8_t> in(frame.begin(), frame.begin() + size);
  size_t got = 0;
  Status st = decode(in.empty() ? nullptr : in.data(), size, out.data() + kGuard, cap, &got);
  for (size_t i = 0; i < kGuard; ++i) {
    REQUIRE(out[i] == kGuardByte);
    REQUIRE(out[kGuard + cap + i] == kGuardByte);
  }
  return st;
}

std::vector<uint8_t> frame_of(const std::vector<uint8_t>& data, const EncodeOptions& o = {}) {
  auto r = roundtrip(data.data(), data.size(), o);
  REQUIRE(r.ok);
  return r.bytes;
}

}  // namespace

TEST_CASE("truncated frames at every length fail cleanly", "[corrupt]") {
  auto data = gaussian_bf16(5000, 91);
  for (Mode m : {Mode::raw, Mode::planes, Mode::window, Mode::rans}) {
    EncodeOptions o;
    o.modes = mode_bit(m);
    o.block_log2 = 12;  // two blocks
    auto f = frame_of(data, o);
    for (size_t len = 0; len < f.size(); ++len) {
      INFO("mode " << int(m) << " length " << len << " of " << f.size());
      REQUIRE(guarded_decode(f, len, data.size()) != Status::ok);
    }
    auto longer = f;
    longer.push_back(0);
    CHECK(guarded_decode(longer, longer.size(), data.size()) == Status::bad_header);
    CHECK(guarded_decode(f, f.size(), data.size()) == Status::ok);
    CHECK(guarded_decode(f, f.size(), data.size() - 1) == Status::dst_too_small);
  }
}

TEST_CASE("every byte of small frames flipped fails cleanly", "[corrupt]") {
  auto g = gaussian_bf16(3001, 92);
  auto up = read_tensor("grads-upcast.fp32");
  up.resize(4096);
  std::vector<std::vector<uint8_t>> frames;
  for (Mode m : {Mode::raw, Mode::planes, Mode::window, Mode::rans}) {
    EncodeOptions o;
    o.modes = mode_bit(m);
    frames.push_back(frame_of(g, o));
    o.dtype = Dtype::fp32;
    frames.push_back(frame_of(up, o));
  }
  for (size_t fi = 0; fi < frames.size(); ++fi) {
    const size_t orig = fi % 2 ? up.size() : g.size();
    auto f = frames[fi];
    for (size_t i = 0; i < f.size(); ++i) {
      for (uint8_t flip : {uint8_t(0xFF), uint8_t(1u << (i % 8))}) {
        f[i] ^= flip;
        INFO("frame " << fi << " byte " << i << " xor " << int(flip));
        REQUIRE(guarded_decode(f, f.size(), orig) != Status::ok);
        f[i] ^= flip;
      }
    }
  }
}

TEST_CASE("random corruption of big frames fails cleanly", "[corrupt]") {
  std::mt19937_64 rng(93);
  auto g = gaussian_bf16(3 << 20, 94);
  auto rnd = random_bytes(1 << 20, 95);
  for (auto* data : {&g, &rnd}) {
    auto f = frame_of(*data);
    for (int k = 0; k < 60; ++k) {
      auto c = f;
      size_t pos = rng() % c.size();
      int nbytes = 1 + int(rng() % 8);
      for (int b = 0; b < nbytes && pos + size_t(b) < c.size(); ++b) c[pos + size_t(b)] ^= uint8_t(1 + rng() % 255);
      INFO("corruption at " << pos);
      REQUIRE(guarded_decode(c, c.size(), data->size()) != Status::ok);
    }
  }
}

TEST_CASE("frames of another version, bad magic, bad fields", "[corrupt]") {
  auto g = gaussian_bf16(10000, 96);
  auto f = frame_of(g);
  auto fix_header = [](std::vector<uint8_t>& fr) {
    uint32_t h = uint32_t(XXH3_64bits(fr.data(), 36));
    std::memcpy(&fr[36], &h, 4);
  };
  // Version 1 (no lane seeds), version 2 (one rANS stream, byte-sized states) and a future one.
  for (uint8_t other : {uint8_t(1), uint8_t(2), uint8_t(4)}) {
    INFO("version " << int(other));
    auto old = f;
    old[4] = other;
    CHECK(guarded_decode(old, old.size(), g.size()) == Status::bad_version);
    fix_header(old);
    CHECK(guarded_decode(old, old.size(), g.size()) == Status::bad_version);
    FrameInfo info;
    CHECK(read_header(old.data(), old.size(), &info) == Status::bad_version);
  }
  auto m = f;
  m[0] = 'X';
  CHECK(guarded_decode(m, m.size(), g.size()) == Status::bad_magic);
  for (auto [off, val] : {std::pair<int, int>{5, 4}, {6, 3}, {7, 11}, {7, 21}}) {
    auto b = f;
    b[size_t(off)] = uint8_t(val);
    fix_header(b);
    INFO("offset " << off << " value " << val);
    CHECK(guarded_decode(b, b.size(), g.size()) == Status::bad_header);
  }
  // A consistent header that lies about the original size.
  auto s = f;
  uint64_t big = g.size() + 16;
  std::memcpy(&s[8], &big, 8);
  fix_header(s);
  CHECK(guarded_decode(s, s.size(), g.size()) == Status::dst_too_small);
  CHECK(guarded_decode(s, s.size(), g.size() + 16) != Status::ok);
  // Table entry changed with the table checksum fixed: the block checks must catch it.
  auto t = f;
  t[44] ^= 0x55;  // block 0 checksum
  uint32_t th = uint32_t(XXH3_64bits(&t[40], 8));
  std::memcpy(&t[32], &th, 4);
  fix_header(t);
  CHECK(guarded_decode(t, t.size(), g.size()) == Status::checksum_mismatch);
}
