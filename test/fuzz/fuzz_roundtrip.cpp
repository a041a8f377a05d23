// libFuzzer target: encode arbitrary bytes with fuzzed options, decode, require bit-exact output.
// Input layout: [opts: 3 bytes][payload]. The option bytes pick the dtype (or detection), the mode
// mask, layout detection, block_log2, source/destination misalignment, and optionally reshape the
// payload into NCCL LL or LL128 lines with one flag so the layout paths (docs/format.md §3) run too.
// Every SIMD path (cpu_paths.h) must produce the same frame and decode it bit-exactly.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu_paths.h"
#include "fuzz_check.h"
#include "zipnet/codec.h"

namespace codec = zipnet::codec;

namespace {

struct Plan {
  codec::EncodeOptions opts;
  unsigned src_misalign = 0, dst_misalign = 0;
  int shape = 0;  // 0 as is, 1 LL lines, 2 LL128 lines
};

Plan read_plan(const uint8_t* b) {
  Plan p;
  const unsigned d = b[0] & 7;
  if (d < 4) p.opts.dtype = codec::Dtype(d);
  p.opts.modes = codec::ModeMask(((b[0] >> 3) & 0xF) | codec::mode_bit(codec::Mode::raw));
  p.opts.detect_layout = (b[0] >> 7) != 0;
  p.opts.block_log2 = 12 + (b[1] & 0xF) % 9;
  p.shape = (b[1] >> 4) % 3;
  p.src_misalign = b[2] & 0xF;
  p.dst_misalign = b[2] >> 4;
  return p;
}

// Interleaves the payload with a constant non-zero flag the way NCCL's LL/LL128 protocols do.
std::vector<uint8_t> shape_lines(const uint8_t* data, size_t n, int shape) {
  if (shape == 0 || n < 8) return std::vector<uint8_t>(data, data + n);
  uint64_t flag = 0;
  std::memcpy(&flag, data, 8);
  flag |= 1;  // never zero
  data += 8, n -= 8;
  std::vector<uint8_t> out;
  if (shape == 1) {
    const uint32_t f = uint32_t(flag);
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint8_t line[16];
      std::memcpy(line, data + i, 4);
      std::memcpy(line + 4, &f, 4);
      std::memcpy(line + 8, data + i + 4, 4);
      std::memcpy(line + 12, &f, 4);
      out.insert(out.end(), line, line + 16);
    }
  } else {
    for (size_t i = 0; i + 120 <= n; i += 120) {
      out.insert(out.end(), data + i, data + i + 120);
      const auto* fp = reinterpret_cast<const uint8_t*>(&flag);
      out.insert(out.end(), fp, fp + 8);
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const Plan plan = read_plan(data);
  const std::vector<uint8_t> input = shape_lines(data + 3, size - 3, plan.shape);
  const size_t n = input.size();

  // Misaligned copies of the input and of the frame, each in a heap block of exactly its size.
  std::unique_ptr<uint8_t[]> src(new uint8_t[n + plan.src_misalign]);
  if (n) std::memcpy(src.get() + plan.src_misalign, input.data(), n);
  const size_t cap = codec::max_frame_size(n, plan.opts.block_log2);
  std::unique_ptr<uint8_t[]> frame_buf(new uint8_t[cap + plan.dst_misalign]);
  uint8_t* frame = frame_buf.get() + plan.dst_misalign;

  size_t frame_size = 0;
  codec::EncodeStats stats;
  FUZZ_CHECK(codec::encode(src.get() + plan.src_misalign, n, frame, cap, &frame_size, plan.opts, &stats) ==
             codec::Status::ok);
  FUZZ_CHECK(frame_size >= codec::kFrameHeaderSize && frame_size <= cap);
  // Only allowed modes are used.
  for (unsigned m = 0; m < 4; ++m)
    if (!(plan.opts.modes & (1u << m))) FUZZ_CHECK(stats.blocks_by_mode[m] == 0);

  codec::FrameInfo info;
  FUZZ_CHECK(codec::read_header(frame, frame_size, &info) == codec::Status::ok);
  FUZZ_CHECK(info.original_size == n && info.frame_size == frame_size);
  FUZZ_CHECK(info.version == codec::kFormatVersion && info.block_log2 == plan.opts.block_log2);
  if (plan.opts.dtype) FUZZ_CHECK(info.dtype == *plan.opts.dtype);

  for (std::string_view path : zipnet::fuzz::cpu_paths()) {
    codec::set_cpu_path(path);
    // Every path encodes the same bytes (and encoding is deterministic).
    std::unique_ptr<uint8_t[]> frame2(new uint8_t[cap]);
    size_t frame2_size = 0;
    FUZZ_CHECK(codec::encode(input.data(), n, frame2.get(), cap, &frame2_size, plan.opts) == codec::Status::ok);
    FUZZ_CHECK(frame2_size == frame_size && std::memcmp(frame2.get(), frame, frame_size) == 0);

    // Bit-exact round trip into an exactly sized, misaligned buffer.
    std::unique_ptr<uint8_t[]> out(new uint8_t[n + plan.src_misalign]);
    size_t got = 0;
    FUZZ_CHECK(codec::decode(frame, frame_size, out.get() + plan.src_misalign, n, &got) == codec::Status::ok);
    FUZZ_CHECK(got == n && (n == 0 || std::memcmp(out.get() + plan.src_misalign, input.data(), n) == 0));
  }
  codec::set_cpu_path("auto");
  return 0;
}
