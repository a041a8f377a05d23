// Every size from 0 to 4097, large sizes, other block sizes, and unaligned buffers.
#include <catch2/catch.hpp>

#include "codec_test_util.h"

using namespace zipnet::codec;
using namespace zipnet::codec::test;

TEST_CASE("every size 0..4097 round-trips (detected dtype and each forced dtype)", "[sizes]") {
  auto g = gaussian_bf16(4097, 11);
  auto rnd = random_bytes(4097, 12);
  for (size_t n = 0; n <= 4097; ++n) {
    INFO("size " << n);
    REQUIRE(roundtrip(g.data(), n).ok);
    EncodeOptions o;
    o.dtype = Dtype(n % 4);
    REQUIRE(roundtrip(n % 3 ? g.data() : rnd.data(), n, o).ok);
  }
}

TEST_CASE("large sizes and every block size", "[sizes]") {
  auto g = gaussian_bf16((8 << 20) + 3, 13);
  for (size_t n : {size_t(1) << 20, (size_t(1) << 20) + 1, size_t(3) << 20, g.size()}) {
    INFO("size " << n);
    auto r = roundtrip(g.data(), n);
    REQUIRE(r.ok);
    CHECK(r.ratio() > 1.4);
  }
  for (unsigned log2 = 12; log2 <= 20; ++log2) {
    EncodeOptions o;
    o.block_log2 = log2;
    INFO("block_log2 " << log2);
    auto r = roundtrip(g.data(), (size_t(2) << 20) + 5, o);
    REQUIRE(r.ok);
    FrameInfo info;
    REQUIRE(read_header(r.bytes.data(), r.bytes.size(), &info) == Status::ok);
    CHECK(info.block_log2 == log2);
    CHECK(info.nblocks == ((size_t(2) << 20) + 5 + (size_t(1) << log2) - 1) >> log2);
  }
}

TEST_CASE("bad options are refused", "[sizes]") {
  std::vector<uint8_t> in(100), out(max_frame_size(100) + 100);
  size_t fs = 1;
  EncodeOptions o;
  o.block_log2 = 11;
  CHECK(encode(in.data(), in.size(), out.data(), out.size(), &fs, o) == Status::bad_options);
  o.block_log2 = 21;
  CHECK(encode(in.data(), in.size(), out.data(), out.size(), &fs, o) == Status::bad_options);
  CHECK(encode(in.data(), in.size(), out.data(), max_frame_size(100) - 1, &fs) == Status::dst_too_small);
}

TEST_CASE("unaligned source and destination pointers", "[unaligned]") {
  auto g = gaussian_bf16(200003, 14);
  auto rnd = random_bytes(70001, 15);
  for (size_t so = 0; so < 8; ++so) {
    for (size_t dof : {size_t(0), size_t(1), size_t(3), size_t(5), size_t(7)}) {
      INFO("src offset " << so << " dst offset " << dof);
      REQUIRE(roundtrip(g.data(), g.size(), {}, so, dof).ok);
      REQUIRE(roundtrip(rnd.data(), rnd.size(), {}, so, dof).ok);
      EncodeOptions o;
      o.dtype = Dtype::fp32;
      REQUIRE(roundtrip(g.data() + 1, 100001, o, so, dof).ok);
    }
  }
}

TEST_CASE("random bytes stay within raw plus headers", "[sizes]") {
  for (size_t n : {size_t(1), size_t(1000), size_t(32768), size_t(1) << 20}) {
    auto rnd = random_bytes(n, 16 + n);
    auto r = roundtrip(rnd.data(), n);
    REQUIRE(r.ok);
    CHECK(r.frame <= max_frame_size(n));
    if (n >= 32768) CHECK(r.ratio() >= 0.995);
  }
}
