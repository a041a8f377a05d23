// Each mode forced through the mode mask, each dtype forced, and the mode choice.
#include <catch2/catch.hpp>

#include "codec_test_util.h"

using namespace zipnet::codec;
using namespace zipnet::codec::test;

TEST_CASE("each mode alone round-trips and is used where it can be", "[modes]") {
  auto g = gaussian_bf16(300001, 21);
  std::vector<uint8_t> up(262144);  // fp32 upcast from bf16: two zero byte planes
  for (size_t i = 0; i + 1 < g.size() / 2 && 4 * i + 3 < up.size(); ++i) {
    up[4 * i + 2] = g[2 * i];
    up[4 * i + 3] = g[2 * i + 1];
  }
  for (Mode m : {Mode::raw, Mode::planes, Mode::window, Mode::rans}) {
    for (auto d : {Dtype::opaque, Dtype::bf16, Dtype::fp16, Dtype::fp32}) {
      EncodeOptions o;
      o.modes = mode_bit(m);
      o.dtype = d;
      INFO("mode " << int(m) << " dtype " << int(d));
      auto r = roundtrip(g.data(), g.size(), o);
      REQUIRE(r.ok);
      auto r2 = roundtrip(up.data(), up.size(), o);
      REQUIRE(r2.ok);
      // Only RAW and the allowed mode may appear.
      for (int k = 1; k < 4; ++k)
        if (k != int(m)) CHECK(r.stats.blocks_by_mode[k] + r2.stats.blocks_by_mode[k] == 0);
    }
  }
  // The modes that should win on this data do win when allowed alone.
  EncodeOptions o;
  o.dtype = Dtype::bf16;
  o.modes = mode_bit(Mode::window);
  auto w = roundtrip(g.data(), g.size(), o);
  CHECK(w.stats.blocks_by_mode[2] > 0);
  CHECK(w.ratio() > 1.35);
  o.modes = mode_bit(Mode::rans);
  auto a = roundtrip(g.data(), g.size(), o);
  CHECK(a.stats.blocks_by_mode[3] > 0);
  CHECK(a.ratio() > w.ratio());
  o.dtype = Dtype::fp32;
  o.modes = mode_bit(Mode::planes);
  auto p = roundtrip(up.data(), up.size(), o);
  CHECK(p.stats.blocks_by_mode[1] > 0);
  CHECK(p.ratio() > 1.9);  // two of four byte planes dropped
  o.modes = kAllModes;
  auto all = roundtrip(up.data(), up.size(), o);
  CHECK(all.ratio() > 2.5);
}

TEST_CASE("the smallest mode wins and nothing grows past raw + headers", "[modes]") {
  auto g = gaussian_bf16(1 << 20, 22);
  size_t best_single = SIZE_MAX;
  for (Mode m : {Mode::raw, Mode::planes, Mode::window, Mode::rans}) {
    EncodeOptions o;
    o.modes = mode_bit(m);
    auto r = roundtrip(g.data(), g.size(), o);
    REQUIRE(r.ok);
    best_single = std::min(best_single, r.frame);
    CHECK(r.frame <= max_frame_size(g.size()));
  }
  auto all = roundtrip(g.data(), g.size());
  REQUIRE(all.ok);
  CHECK(all.frame <= best_single);
}

TEST_CASE("dtype detection", "[modes]") {
  auto check = [](const std::vector<uint8_t>& d, Dtype want) {
    auto r = roundtrip(d.data(), d.size());
    REQUIRE(r.ok);
    FrameInfo info;
    REQUIRE(read_header(r.bytes.data(), r.bytes.size(), &info) == Status::ok);
    CHECK(info.dtype == want);
  };
  check(gaussian_bf16(1 << 18, 23), Dtype::bf16);
  check(random_bytes(1 << 18, 24), Dtype::opaque);
  check(read_tensor("grads.fp32"), Dtype::fp32);
  check(read_tensor("grads-upcast.fp32"), Dtype::fp32);
  check(read_tensor("weights.bf16"), Dtype::bf16);
}
