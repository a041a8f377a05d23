// The shipped tensors (test/data/tensors), in 512 KiB messages like NCCL's: exact, with loose
// ratio floors so that a regression in the coder fails here (targets live in zipbench).
#include <catch2/catch.hpp>

#include "codec_test_util.h"

using namespace zipnet::codec;
using namespace zipnet::codec::test;

namespace {

double ratio_in_messages(const std::vector<uint8_t>& data, size_t chunk, const EncodeOptions& o = {}) {
  size_t in = 0, out = 0;
  for (size_t off = 0; off < data.size(); off += chunk) {
    size_t n = std::min(chunk, data.size() - off);
    auto r = roundtrip(data.data() + off, n, o);
    REQUIRE(r.ok);
    in += n;
    out += r.frame;
  }
  return double(in) / double(out);
}

}  // namespace

TEST_CASE("real bf16 tensors", "[tensors]") {
  double sum = 0;
  int count = 0;
  for (const char* name : {"activations.bf16", "adam-exp-avg.bf16", "grads.bf16", "logits.bf16",
                           "moe-dispatch.bf16", "weights.bf16"}) {
    auto data = read_tensor(name);
    REQUIRE(data.size() == 2u << 20);
    double r = ratio_in_messages(data, 512 << 10);
    INFO(name << " ratio " << r);
    CHECK(r > 1.4);
    sum += r;
    ++count;
  }
  CHECK(sum / count > 1.48);
}

TEST_CASE("real fp16 and fp32 tensors", "[tensors]") {
  auto fp16 = read_tensor("activations.fp16");
  auto up = read_tensor("grads-upcast.fp32");
  auto g32 = read_tensor("grads.fp32");
  REQUIRE(fp16.size() == 2u << 20);
  REQUIRE(up.size() == 2u << 20);
  REQUIRE(g32.size() == 2u << 20);
  CHECK(ratio_in_messages(fp16, 512 << 10) > 1.15);
  CHECK(ratio_in_messages(up, 512 << 10) > 2.5);
  CHECK(ratio_in_messages(g32, 512 << 10) > 1.17);
}

TEST_CASE("real tensors in odd message sizes and forced modes", "[tensors]") {
  auto data = read_tensor("weights.bf16");
  REQUIRE(!data.empty());
  // Odd message sizes cut elements across frames (every other frame starts mid-element), which
  // costs ratio but must stay exact.
  CHECK(ratio_in_messages(data, 65536 + 3) > 1.3);
  for (Mode m : {Mode::planes, Mode::window, Mode::rans}) {
    EncodeOptions o;
    o.modes = mode_bit(m);
    ratio_in_messages(data, 300000, o);
  }
}
