// Batches that mix sizes, dtypes and alignments; CPU-encoded frames of every block size decoded on
// the GPU.
#include <catch2/catch.hpp>

#include <vector>

#include "gpu_test_util.h"
#include "kernels.h"

using namespace zipnet::codec;
using namespace zipnet::codec::gputest;

TEST_CASE("GPU: unaligned inputs, frames and outputs", "[cross]") {
  const std::vector<Bytes> msgs = {gaussian_bf16(100003, 1), random_bytes(4099, 2), gaussian_bf16(65536, 3)};
  for (size_t s : {1u, 2u, 3u, 7u})
    for (size_t d : {0u, 1u, 6u}) {
      INFO("src +" << s << " dst +" << d);
      REQUIRE(check_batch(msgs, {}, s, d) == "");
    }
}

TEST_CASE("GPU decodes CPU frames of every block size", "[cross]") {
  const Bytes g = gaussian_bf16((2 << 20) + 3, 9);
  for (unsigned log2 = 12; log2 <= 20; ++log2) {
    EncodeOptions o;
    o.block_log2 = log2;
    const Bytes f = cpu_encode(g, o);
    REQUIRE(!f.empty());
    auto d = gpu_decode({f}, {g.size()}, 3);
    INFO("block_log2 " << log2);
    REQUIRE(d[0].status == Status::ok);
    REQUIRE(d[0].guards_ok);
    REQUIRE(d[0].out == g);
  }
}

TEST_CASE("GPU: one batch mixing sizes and dtypes", "[batch]") {
  std::vector<Bytes> msgs;
  const size_t sizes[] = {0, 1, 2, 3, 17, 4096, 32767, 32768, 32769, 65536 + 2, 512 << 10, (1 << 20) + 3};
  uint64_t seed = 100;
  for (size_t n : sizes) {
    msgs.push_back(gaussian_bf16(n, seed++));
    msgs.push_back(random_bytes(n, seed++));
  }
  const Bytes t = read_tensor("grads-upcast.fp32"), h = read_tensor("activations.fp16");
  msgs.emplace_back(t.begin(), t.begin() + (300 << 10) + 4);
  msgs.emplace_back(h.begin(), h.begin() + (200 << 10) + 1);
  REQUIRE(check_batch(msgs) == "");
}

TEST_CASE("GPU: a batch with bad frames fails only those items", "[batch]") {
  const std::vector<Bytes> msgs = {gaussian_bf16(70000, 1), gaussian_bf16(300000, 2), random_bytes(5000, 3)};
  EncodeResult r = gpu_encode(msgs);
  REQUIRE(r.status == Status::ok);
  std::vector<Bytes> frames = r.frames;
  frames[1][frames[1].size() / 2] ^= 0x40;  // a payload byte of a middle block
  Status batch = Status::ok;
  auto d = gpu_decode(frames, {msgs[0].size(), msgs[1].size(), msgs[2].size()}, 0, &batch);
  CHECK(batch != Status::ok);
  CHECK(d[0].status == Status::ok);
  CHECK(d[0].out == msgs[0]);
  CHECK(d[1].status != Status::ok);
  CHECK(d[2].status == Status::ok);
  CHECK(d[2].out == msgs[2]);
  for (auto& x : d) CHECK(x.guards_ok);
}

// Batches of up to kFusedMaxFrames frames check their frames inside the block decoders, larger ones
// run validate_kernel first: a batch on each side of the limit, each with a bad table, a bad header
// and a bad payload among good frames (gpu_decode runs both ways on each and they must agree).
TEST_CASE("GPU: batches at the fused frame checks' limit, with bad frames", "[batch]") {
  for (const size_t n : {size_t(cuda::detail::kFusedMaxFrames), size_t(cuda::detail::kFusedMaxFrames) + 1}) {
    std::vector<Bytes> msgs;
    for (size_t i = 0; i < n; ++i) msgs.push_back(i % 3 ? gaussian_bf16(200 + 37 * i, i) : random_bytes(64 + i, i));
    EncodeResult r = gpu_encode(msgs);
    REQUIRE(r.status == Status::ok);
    std::vector<Bytes> frames = r.frames;
    frames[1][40] ^= 0x01;                                    // the first table entry: bad_table
    frames[n / 2][5] ^= 0x01;                                 // the dtype: bad_header (its checksum)
    frames[n - 2][frames[n - 2].size() - 1] ^= 0x40;          // the last payload byte
    std::vector<size_t> caps;
    for (const Bytes& m : msgs) caps.push_back(m.size());
    auto d = gpu_decode(frames, caps);
    for (size_t i = 0; i < n; ++i) {
      Bytes out(caps[i] + 1);
      size_t got = 0;
      const Status want = decode(frames[i].data(), frames[i].size(), out.data(), caps[i], &got);
      INFO("batch of " << n << ", frame " << i << ", CPU says " << to_string(want));
      CHECK(d[i].status == want);
      CHECK(d[i].guards_ok);
      if (want == Status::ok) CHECK(d[i].out == msgs[i]);
    }
    CHECK(d[1].status == Status::bad_table);
    CHECK(d[n / 2].status == Status::bad_header);
    CHECK(d[n - 2].status != Status::ok);
  }
}

// Blocks up to 32 KiB go to the group decoder, larger ones to the warp decoder, in the same batch.
TEST_CASE("GPU: one decode batch mixing block sizes, with a bad block of each kind", "[batch]") {
  std::vector<Bytes> msgs, frames;
  std::vector<size_t> caps;
  uint64_t seed = 300;
  for (unsigned log2 : {15u, 16u, 12u, 20u, 15u, 17u}) {
    EncodeOptions o;
    o.block_log2 = log2;
    msgs.push_back(gaussian_bf16((1 << 20) + 6 * log2, seed++));
    frames.push_back(cpu_encode(msgs.back(), o));
    REQUIRE(!frames.back().empty());
    caps.push_back(msgs.back().size());
  }
  auto d = gpu_decode(frames, caps, 1);
  for (size_t i = 0; i < msgs.size(); ++i) {
    INFO("item " << i);
    REQUIRE(d[i].status == Status::ok);
    REQUIRE(d[i].guards_ok);
    REQUIRE(d[i].out == msgs[i]);
  }
  frames[0][frames[0].size() - 1000] ^= 0x08;  // last block of a 32 KiB-block frame
  frames[1][frames[1].size() / 2] ^= 0x40;     // a middle block of a 64 KiB-block frame
  Status batch = Status::ok;
  d = gpu_decode(frames, caps, 0, &batch);
  CHECK(batch != Status::ok);
  CHECK(d[0].status != Status::ok);
  CHECK(d[1].status != Status::ok);
  for (size_t i = 2; i < msgs.size(); ++i) {
    INFO("item " << i);
    CHECK(d[i].status == Status::ok);
    CHECK(d[i].out == msgs[i]);
  }
  for (auto& x : d) CHECK(x.guards_ok);
}
