// Corrupted and truncated frames: the GPU decoder reports an error (the same status as the CPU
// decoder) and never writes outside the output.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "kernels.h"

using namespace zipnet::codec;
using namespace zipnet::codec::gputest;

namespace {
Status cpu_status(const Bytes& f, size_t cap) {
  Bytes out(cap + 1);
  size_t got = 0;
  return decode(f.data(), f.size(), out.data(), cap, &got);
}
}  // namespace

TEST_CASE("GPU: truncated and corrupted frames give the CPU's error", "[corrupt]") {
  EncodeOptions rans_only, window_only, planes_only;
  rans_only.modes = mode_bit(Mode::rans);
  window_only.modes = mode_bit(Mode::window);
  planes_only.modes = mode_bit(Mode::planes);
  const Bytes g = gaussian_bf16(100000, 5);
  std::vector<Bytes> good = {cpu_encode(g), cpu_encode(g, rans_only), cpu_encode(g, window_only),
                             cpu_encode(g, planes_only), cpu_encode(random_bytes(40000, 6)),
                             cpu_encode(read_tensor("grads-upcast.fp32"))};
  std::vector<size_t> caps = {g.size(), g.size(), g.size(), g.size(), 40000, 2u << 20};
  std::mt19937_64 rng(42);
  std::vector<Bytes> bad;
  std::vector<size_t> bad_caps;
  std::vector<Status> want;
  for (size_t k = 0; k < good.size(); ++k) {
    const Bytes& f = good[k];
    auto add = [&](Bytes b, size_t cap) {
      Status st = cpu_status(b, cap);
      if (st == Status::ok) return;  // a flip that still decodes (e.g. in the output-size slack) is not a case
      bad.push_back(std::move(b));
      bad_caps.push_back(cap);
      want.push_back(st);
    };
    for (size_t cut : {size_t(0), size_t(1), size_t(39), size_t(40), size_t(47), f.size() / 3, f.size() - 1})
      add(Bytes(f.begin(), f.begin() + cut), caps[k]);
    add(f, caps[k] - 1);  // output too small
    for (int i = 0; i < 120; ++i) {
      Bytes b = f;
      const size_t at = i < 40 ? rng() % 40 + 0 : i < 60 ? 40 + rng() % (f.size() > 80 ? 40 : 1) : rng() % f.size();
      b[at] ^= uint8_t(1u << (rng() % 8));
      add(std::move(b), caps[k]);
    }
  }
  // All cases in one batch, which has more frames than the fused checks take (validate_kernel
  // checks them), then in batches of 256, whose block decoders check their frames themselves.
  REQUIRE(bad.size() > cuda::detail::kFusedMaxFrames);
  auto check = [&](size_t from, size_t to) {
    const std::vector<Bytes> part(bad.begin() + from, bad.begin() + to);
    const std::vector<size_t> part_caps(bad_caps.begin() + from, bad_caps.begin() + to);
    auto d = gpu_decode(part, part_caps, 1);
    for (size_t i = 0; i < part.size(); ++i) {
      INFO("case " << from + i << " of a batch of " << part.size() << ", frame " << part[i].size()
                   << " bytes, CPU says " << to_string(want[from + i]));
      CHECK(d[i].status == want[from + i]);
      CHECK(d[i].guards_ok);
    }
  };
  check(0, bad.size());
  for (size_t from = 0; from < bad.size(); from += 256) check(from, std::min(bad.size(), from + 256));
}

TEST_CASE("GPU: random garbage frames", "[corrupt]") {
  std::vector<Bytes> bad;
  std::vector<size_t> caps;
  for (int i = 0; i < 200; ++i) {
    Bytes b = random_bytes(size_t(i) * 37, uint64_t(i));
    if (i % 2 && b.size() >= 4) {  // with a valid magic
      b[0] = 0x5A; b[1] = 0x50; b[2] = 0x4E; b[3] = 0x54;
    }
    bad.push_back(b);
    caps.push_back(4096);
  }
  auto d = gpu_decode(bad, caps);
  for (size_t i = 0; i < bad.size(); ++i) {
    CHECK(d[i].status != Status::ok);
    CHECK(d[i].guards_ok);
  }
}
