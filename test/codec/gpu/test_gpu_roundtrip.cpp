// GPU round trips on the CPU tests' vectors; every check goes through check_batch: GPU frames
// byte-identical to the CPU's, and decoded bit for bit both ways, GPU and CPU.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "gpu_test_util.h"

using namespace zipnet::codec;
using namespace zipnet::codec::gputest;

namespace {
Bytes every_u16_pattern() {
  Bytes b(2 * 65536);
  for (uint32_t v = 0; v < 65536; ++v) {
    b[2 * v] = uint8_t(v);
    b[2 * v + 1] = uint8_t(v >> 8);
  }
  return b;
}
Bytes specials_bf16() {
  const uint16_t sp[] = {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x0001, 0x8001, 0x007F,
                         0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x0080, 0x8080};
  Bytes b;
  for (int r = 0; r < 3000; ++r)
    for (uint16_t v : sp) {
      b.push_back(uint8_t(v));
      b.push_back(uint8_t(v >> 8));
    }
  return b;
}
Bytes upcast_fp32(const Bytes& bf16) {
  Bytes out(bf16.size() / 2 * 4);
  for (size_t i = 0; i + 1 < bf16.size(); i += 2) {
    out[2 * i] = 0;
    out[2 * i + 1] = 0;
    out[2 * i + 2] = bf16[i];
    out[2 * i + 3] = bf16[i + 1];
  }
  return out;
}
// NCCL LL lines {d1, flag, d2, flag} and LL128 lines (120 data bytes, u64 flag) around `data`.
Bytes ll_lines(const Bytes& data, uint32_t flag) {
  Bytes out;
  for (size_t i = 0; i + 8 <= data.size(); i += 8) {
    out.insert(out.end(), data.begin() + i, data.begin() + i + 4);
    for (int k = 0; k < 4; ++k) out.push_back(uint8_t(flag >> (8 * k)));
    out.insert(out.end(), data.begin() + i + 4, data.begin() + i + 8);
    for (int k = 0; k < 4; ++k) out.push_back(uint8_t(flag >> (8 * k)));
  }
  return out;
}
Bytes ll128_lines(const Bytes& data, uint64_t flag) {
  Bytes out;
  for (size_t i = 0; i + 120 <= data.size(); i += 120) {
    out.insert(out.end(), data.begin() + i, data.begin() + i + 120);
    for (int k = 0; k < 8; ++k) out.push_back(uint8_t(flag >> (8 * k)));
  }
  return out;
}
}  // namespace

TEST_CASE("GPU: every bf16/fp16 bit pattern and special values", "[patterns]") {
  const Bytes all = every_u16_pattern();
  for (auto dt : {Dtype::bf16, Dtype::fp16, Dtype::fp32, Dtype::opaque}) {
    EncodeOptions o;
    o.dtype = dt;
    INFO("forced dtype " << int(dt));
    REQUIRE(check_batch({all, specials_bf16()}, o) == "");
  }
  REQUIRE(check_batch({all, specials_bf16(), upcast_fp32(specials_bf16())}) == "");
}

TEST_CASE("GPU: every size 0..4097 in one batch", "[sizes]") {
  std::vector<Bytes> msgs;
  const Bytes g = gaussian_bf16(4097, 11), r = random_bytes(4097, 12);
  for (size_t n = 0; n <= 4097; ++n) msgs.emplace_back(g.begin(), g.begin() + n);
  REQUIRE(check_batch(msgs) == "");
  msgs.clear();
  for (size_t n = 0; n <= 4097; n += 7) msgs.emplace_back(r.begin(), r.begin() + n);
  REQUIRE(check_batch(msgs) == "");
}

TEST_CASE("GPU: batches of empty messages only, and empty ones beside others", "[sizes]") {
  // An empty message has no blocks: no block kernel sees it, and the batch may have no blocks at all.
  REQUIRE(check_batch({Bytes(), Bytes()}) == "");
  EncodeOptions forced;
  forced.dtype = Dtype::fp16;
  REQUIRE(check_batch({Bytes(), Bytes()}, forced) == "");
  const std::vector<Bytes> mixed = {Bytes(), gaussian_bf16(100000, 8), Bytes(), Bytes(3, 7), Bytes()};
  REQUIRE(check_batch(mixed) == "");
  REQUIRE(check_batch(mixed, forced) == "");
}

TEST_CASE("GPU: large and odd sizes", "[sizes]") {
  REQUIRE(check_batch({gaussian_bf16((1 << 20) + 13, 3), gaussian_bf16((5 << 20) + 7, 4), random_bytes(32769, 5),
                       gaussian_bf16(16 << 20, 6)}) == "");
}

TEST_CASE("GPU: each mode forced, each dtype forced", "[modes]") {
  const Bytes g = gaussian_bf16(200000, 21), r = random_bytes(70001, 22), z(50000, 0);
  Bytes text;
  for (int i = 0; i < 3000; ++i) {
    const char* s = "the quick brown fox jumps over the lazy dog 0123456789 ";
    text.insert(text.end(), s, s + std::strlen(s));
  }
  const std::vector<Bytes> msgs = {g, r, z, text, upcast_fp32(g)};
  const ModeMask masks[] = {mode_bit(Mode::raw), mode_bit(Mode::planes), mode_bit(Mode::window), mode_bit(Mode::rans),
                            ModeMask(mode_bit(Mode::window) | mode_bit(Mode::rans)), kAllModes};
  for (ModeMask m : masks) {
    EncodeOptions o;
    o.modes = m;
    INFO("modes " << int(m));
    REQUIRE(check_batch(msgs, o) == "");
    for (auto dt : {Dtype::opaque, Dtype::bf16, Dtype::fp16, Dtype::fp32}) {
      o.dtype = dt;
      INFO("dtype " << int(dt));
      REQUIRE(check_batch(msgs, o) == "");
    }
  }
}

TEST_CASE("GPU: rANS tables with runs of absent symbols of every kind", "[modes]") {
  // Opaque bytes from a few symbols, with runs of absent symbols between them of 1, 2, 128, 129
  // (one whole entry), 130 (an entry and a single), 131 (an entry and a pair) and 254.
  const std::vector<std::vector<int>> supports = {{0, 2, 5, 134, 255}, {0, 129, 255}, {1, 131},      {0, 132},
                                                  {0, 255},            {3, 4, 6, 137, 140, 250}, {100}, {0, 1, 2, 3}};
  std::vector<Bytes> msgs;
  uint32_t r = 99;
  for (const auto& sup : supports) {
    Bytes b(40000);
    for (auto& v : b) {
      r = r * 1103515245u + 12345u;
      const uint32_t k = (r >> 8) % 16;  // skewed: the first symbol most often
      v = uint8_t(sup[k < 8 ? 0 : (r >> 20) % sup.size()]);
    }
    msgs.push_back(b);
  }
  EncodeOptions o;
  o.dtype = Dtype::opaque;
  o.modes = mode_bit(Mode::rans);
  REQUIRE(check_batch(msgs, o) == "");
  o.modes = kAllModes;
  REQUIRE(check_batch(msgs, o) == "");
}

TEST_CASE("GPU: other block sizes", "[modes]") {
  for (unsigned log2 : {12u, 13u, 14u, 16u, 20u}) {  // 14: 16 KiB, the small-batch option (docs/benchmarks.md)
    EncodeOptions o;
    o.block_log2 = log2;
    INFO("block_log2 " << log2);
    REQUIRE(check_batch({gaussian_bf16((3 << 20) + 5, log2), random_bytes(100000, log2), Bytes(7, 1)}, o) == "");
  }
}

TEST_CASE("GPU: rANS blocks of one and two streams around the split", "[modes]") {
  // A block codes two streams above 8192 symbols (format §4.2): one message per size, each one
  // block, so every last block is that size. Sizes just below, at and above the split (16386
  // bytes: stream 1 one step shorter), odd lengths (a tail byte, a part step), a seeded 2 KiB
  // multiple, fp32 blocks of 64 KiB (16384 elements, three planes) and opaque bytes (one plane
  // less: no seeds).
  const std::vector<size_t> sizes = {16382, 16384, 16386, 16388, 16447, 18432, 20001, 32766, 32767, 32768};
  std::vector<Bytes> msgs;
  for (size_t n : sizes) msgs.push_back(gaussian_bf16(n, n));
  EncodeOptions o;
  o.modes = ModeMask(mode_bit(Mode::raw) | mode_bit(Mode::rans));
  REQUIRE(check_batch(msgs, o) == "");
  o.modes = kAllModes;
  REQUIRE(check_batch(msgs, o) == "");
  o.block_log2 = 16;
  o.dtype = Dtype::fp32;
  REQUIRE(check_batch({upcast_fp32(gaussian_bf16(32768, 7)), upcast_fp32(gaussian_bf16(32770, 8)),
                       upcast_fp32(gaussian_bf16(20000, 9))},
                      o) == "");
  o.dtype = Dtype::opaque;
  o.block_log2 = 15;
  REQUIRE(check_batch({random_bytes(9000, 10), Bytes(8193, 3), gaussian_bf16(32768, 11)}, o) == "");
}

TEST_CASE("GPU: NCCL LL and LL128 lines", "[layouts]") {
  const Bytes g = gaussian_bf16(120 * 8 * 300, 31);  // a multiple of 8 and of 120
  const Bytes ll = ll_lines(g, 0x1234567u), ll128 = ll128_lines(g, 0xABCDEF0123ull);
  Bytes ll_broken = ll, ll128_broken = ll128;
  ll_broken[ll_broken.size() - 4] ^= 1;          // one flag differs: flat
  ll128_broken[128 * 77 + 121] ^= 0x10;
  const Bytes ll_zero = ll_lines(g, 0);           // flag 0: flat
  const Bytes ll_small = ll_lines(Bytes(g.begin(), g.begin() + 8), 5);  // one line: flat
  const Bytes ll_two = ll_lines(Bytes(g.begin(), g.begin() + 16), 5);   // two lines: LL
  // Broken only past block 0 (32 KiB blocks): the first line of block 1, a line deep in block 2.
  Bytes ll_late = ll, ll128_late = ll128;
  ll_late[32768 + 12] ^= 0x40;
  ll128_late[2 * 32768 + 128 * 100 + 127] ^= 0x01;
  std::vector<Bytes> msgs = {ll, ll128, ll_broken, ll128_broken, ll_zero, ll_small, ll_two, ll_late, ll128_late,
                             ll_lines(upcast_fp32(Bytes(g.begin(), g.begin() + 40000)), 9),
                             ll128_lines(random_bytes(120 * 1000, 3), 77)};
  REQUIRE(check_batch(msgs) == "");
  EncodeOptions flat;
  flat.detect_layout = false;
  REQUIRE(check_batch(msgs, flat) == "");
  EncodeOptions forced;  // no detection: every block's lines are checked alike
  forced.dtype = Dtype::bf16;
  REQUIRE(check_batch(msgs, forced) == "");
  for (size_t s : {3u, 4u}) {  // flags read a byte at a time, and as words at 4-byte alignment
    INFO("src +" << s);
    REQUIRE(check_batch(msgs, {}, s) == "");
  }
  // LL frames compress (flags removed).
  EncodeResult r = gpu_encode({ll, ll128});
  REQUIRE(r.status == Status::ok);
  CHECK(r.frames[0][6] == 1);
  CHECK(r.frames[1][6] == 2);
  EncodeResult late = gpu_encode({ll_late, ll128_late});
  REQUIRE(late.status == Status::ok);
  CHECK(late.frames[0][6] == 0);  // flat
  CHECK(late.frames[1][6] == 0);
  CHECK(double(ll.size()) / double(r.frames[0].size()) > 2.5);
  CHECK(double(ll128.size()) / double(r.frames[1].size()) > 1.4);
}

TEST_CASE("GPU: both encoders with one SM: many blocks per group, waits across groups", "[batch][layouts]") {
  // One CTA of fused_encode_kernel: its two groups take every block in turn by ticket, so a block's
  // wait for the sizes of its message's earlier blocks often spans the other group's work.
  const Bytes g = gaussian_bf16(120 * 8 * 300, 41), t = read_tensor("grads-upcast.fp32");
  Bytes ll_late = ll_lines(g, 0x77u);
  ll_late[32768 + 12] ^= 0x40;  // LL lines broken in block 1 only: flat, found by the other blocks
  const std::vector<Bytes> msgs = {gaussian_bf16(512 << 10, 1), Bytes{}, random_bytes(70000, 2), gaussian_bf16(1, 3),
                                   ll_lines(g, 0x1234u), ll_late, Bytes(t.begin(), t.begin() + (300 << 10) + 2),
                                   gaussian_bf16((100 << 10) + 3, 4)};
  for (const int sms : {1, 2}) {
    INFO(sms << " SMs");
    EncodeResult r = gpu_encode(msgs, {}, 0, 0, sms);
    REQUIRE(r.status == Status::ok);
    for (size_t i = 0; i < msgs.size(); ++i) {
      INFO("message " << i);
      CHECK(r.frames[i] == cpu_encode(msgs[i]));
    }
  }
}

TEST_CASE("GPU: the shipped tensors in 512 KiB messages", "[tensors]") {
  std::vector<Bytes> msgs;
  for (const auto& name : tensor_names()) {
    const Bytes t = read_tensor(name);
    REQUIRE(t.size() == 2u << 20);
    for (size_t off = 0; off < t.size(); off += 512 << 10) msgs.emplace_back(t.begin() + off, t.begin() + off + (512 << 10));
  }
  REQUIRE(check_batch(msgs) == "");
  // Unaligned buffers, and the whole tensors as single messages.
  REQUIRE(check_batch(msgs, {}, 3, 5) == "");
  std::vector<Bytes> whole;
  for (const auto& name : tensor_names()) whole.push_back(read_tensor(name));
  REQUIRE(check_batch(whole) == "");
}
