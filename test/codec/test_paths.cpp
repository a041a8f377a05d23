// Every SIMD path (portable, AVX2, AVX-512, whichever this CPU has) writes the same bytes and
// decodes the others' frames.
#include <catch2/catch.hpp>

#include <cmath>

#include "codec_test_util.h"
#include "common/detect.h"
#include "cpu/block_codec.h"
#include "cpu/detect_fast.h"
#include "xxhash.h"

using namespace zipnet::codec;
using namespace zipnet::codec::test;

namespace {

struct PathGuard {
  ~PathGuard() { set_cpu_path("auto"); }
};

std::vector<std::vector<uint8_t>> inputs() {
  std::vector<std::vector<uint8_t>> v;
  for (const char* n : {"activations.bf16", "logits.bf16", "activations.fp16", "grads.fp32", "grads-upcast.fp32"}) {
    auto t = read_tensor(n);
    t.resize(std::min<size_t>(t.size(), 300001));
    v.push_back(t);
  }
  v.push_back(gaussian_bf16(100003, 71));
  v.push_back(random_bytes(70000, 72));
  // Wide exponent spread (many symbols: the gather paths) and a single symbol.
  std::mt19937_64 rng(73);
  std::vector<uint8_t> wide(131072);
  for (size_t i = 0; i < wide.size(); i += 2) {
    float f = std::exp(std::normal_distribution<float>(0, 6)(rng));
    uint16_t b = bf16_of(f);
    std::memcpy(&wide[i], &b, 2);
  }
  v.push_back(wide);
  v.push_back(std::vector<uint8_t>(40000, 0x40));
  for (size_t n : {size_t(1), size_t(31), size_t(33), size_t(63), size_t(65), size_t(127), size_t(129)})
    v.push_back(gaussian_bf16(n, 80 + n));
  return v;
}

}  // namespace

TEST_CASE("all SIMD paths produce identical frames and decode each other", "[paths]") {
  PathGuard guard;
  std::vector<std::string> paths;
  for (const char* p : {"portable", "avx2", "avx512"})
    if (set_cpu_path(p)) paths.push_back(p);
  INFO("paths on this CPU: " << paths.size());
  REQUIRE(paths.size() >= 1);
  REQUIRE(set_cpu_path("portable"));
  CHECK(cpu_path() == "portable");
  for (auto& in : inputs()) {
    for (ModeMask m : {kAllModes, ModeMask(mode_bit(Mode::rans)), ModeMask(mode_bit(Mode::window)),
                       ModeMask(mode_bit(Mode::planes))}) {
      for (auto d : {std::optional<Dtype>{}, std::optional<Dtype>{Dtype::fp32}, std::optional<Dtype>{Dtype::opaque},
                     std::optional<Dtype>{Dtype::fp16}}) {
        EncodeOptions o;
        o.modes = m;
        o.dtype = d;
        std::vector<std::vector<uint8_t>> frames;
        for (auto& p : paths) {
          REQUIRE(set_cpu_path(p));
          auto r = roundtrip(in.data(), in.size(), o);
          INFO("path " << p << " size " << in.size() << " modes " << int(m));
          REQUIRE(r.ok);
          frames.push_back(r.bytes);
        }
        for (size_t i = 1; i < frames.size(); ++i) {
          INFO("path " << paths[i] << " vs portable, size " << in.size() << " modes " << int(m));
          REQUIRE(frames[i] == frames[0]);
        }
        // Cross-decode: the portable frame with every path.
        for (auto& p : paths) {
          REQUIRE(set_cpu_path(p));
          std::vector<uint8_t> out(in.size() + 1);
          size_t got = 0;
          REQUIRE(decode(frames[0].data(), frames[0].size(), out.data(), in.size(), &got) == Status::ok);
          REQUIRE(got == in.size());
          REQUIRE(std::memcmp(out.data(), in.data(), in.size()) == 0);
        }
      }
    }
  }
}

TEST_CASE("skipping rANS when it provably loses never changes a frame", "[paths]") {
  struct Restore {
    ~Restore() { zipnet::codec::cpu::set_rans_skip_for_testing(true); }
  } restore;
  auto v = inputs();
  // Near the break-even point: symbols spread over k values for several k, at several sizes.
  std::mt19937_64 rng(74);
  for (unsigned k : {2u, 16u, 60u, 120u, 180u, 230u, 256u}) {
    for (size_t n : {size_t(700), size_t(5000), size_t(32768)}) {
      std::vector<uint8_t> d(n);
      for (auto& b : d) b = uint8_t(rng() % k);
      v.push_back(d);
    }
  }
  for (auto& in : v) {
    for (auto d : {std::optional<Dtype>{}, std::optional<Dtype>{Dtype::opaque}, std::optional<Dtype>{Dtype::bf16}}) {
      EncodeOptions o;
      o.dtype = d;
      for (ModeMask m : {kAllModes, ModeMask(mode_bit(Mode::rans))}) {
        o.modes = m;
        zipnet::codec::cpu::set_rans_skip_for_testing(true);
        auto a = roundtrip(in.data(), in.size(), o);
        zipnet::codec::cpu::set_rans_skip_for_testing(false);
        auto b = roundtrip(in.data(), in.size(), o);
        REQUIRE(a.ok);
        REQUIRE(b.ok);
        INFO("size " << in.size() << " modes " << int(m));
        REQUIRE(a.bytes == b.bytes);
      }
    }
  }
}

TEST_CASE("the CPU encoder's dtype detector returns what common::detect_dtype returns", "[paths]") {
  // cpu::detect_dtype_fast recomputes format §6's rule faster; it must agree on every sample.
  std::vector<std::vector<uint8_t>> v = inputs();
  for (const char* n : {"weights.bf16", "grads.bf16", "grads-upcast.fp32"}) v.push_back(read_tensor(n));
  std::mt19937_64 rng(75);
  for (unsigned k : {1u, 3u, 40u, 256u}) {
    std::vector<uint8_t> d(4096);
    for (size_t i = 0; i < d.size(); ++i) d[i] = i % 2 ? uint8_t(0x3C + rng() % k) : uint8_t(rng() % k);
    v.push_back(d);
  }
  unsigned seen = 0, checked = 0;
  for (auto& in : v) {
    for (size_t off = 0; off < in.size(); off += 4093) {
      for (uint32_t len : {4096u, 4095u, 4094u, 1001u, 3u, 2u, 1u, 0u}) {
        const uint32_t l = uint32_t(std::min<size_t>(len, in.size() - off));
        const unsigned want = zipnet::codec::common::detect_dtype(in.data() + off, l);
        INFO("offset " << off << " length " << l);
        REQUIRE(zipnet::codec::cpu::detect_dtype_fast(in.data() + off, l) == want);
        seen |= 1u << want;
        ++checked;
      }
    }
  }
  INFO("samples " << checked);
  CHECK(seen == 0xF);  // every dtype was the answer somewhere
}

TEST_CASE("checksum64 is XXH3-64 on every SIMD path, at every length and alignment", "[paths]") {
  PathGuard guard;
  const std::vector<uint8_t> bytes = random_bytes(300000, 91);
  std::vector<std::pair<size_t, size_t>> cases;  // (offset, length): short, mid and long inputs
  for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(16), size_t(17), size_t(128), size_t(129), size_t(240),
                   size_t(241), size_t(1023), size_t(1024), size_t(4097), size_t(131072), size_t(299990)})
    for (size_t off : {size_t(0), size_t(1), size_t(7)}) cases.emplace_back(off, n);
  std::vector<uint64_t> reference;  // xxhash.h itself
  for (auto [off, n] : cases) reference.push_back(XXH3_64bits(bytes.data() + off, n));
  for (const char* path : {"portable", "avx2", "avx512"}) {
    if (!set_cpu_path(path)) continue;
    for (size_t i = 0; i < cases.size(); ++i) {
      INFO(path << " offset " << cases[i].first << " length " << cases[i].second);
      CHECK(checksum64(bytes.data() + cases[i].first, cases[i].second) == reference[i]);
    }
  }
}
