// libFuzzer target: arbitrary bytes into zipnet::codec::decode.
// Properties: no crash, no read past the frame, no write past the output (ASan guards both: the
// input and the output are heap blocks of exactly their size); success only with a consistent header;
// a buffer one byte short is refused; and what decodes re-encodes and decodes to the same bytes.
// Each input is tried twice: as given, and re-sealed (frame_patch.h) so mutations reach the block
// decoders behind the checksums; and under every SIMD path (cpu_paths.h), which must agree.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu_paths.h"
#include "fuzz_check.h"
#include "frame_patch.h"
#include "zipnet/codec.h"

namespace codec = zipnet::codec;

namespace {

constexpr uint64_t kMaxOutput = uint64_t(8) << 20;  // larger claims are tried against a small buffer

void check_reencode(const uint8_t* data, size_t n) {
  std::vector<uint8_t> frame(codec::max_frame_size(n));
  size_t frame_size = 0;
  FUZZ_CHECK(codec::encode(data, n, frame.data(), frame.size(), &frame_size) == codec::Status::ok);
  auto out = std::make_unique<uint8_t[]>(n ? n : 1);
  size_t got = 0;
  FUZZ_CHECK(codec::decode(frame.data(), frame_size, out.get(), n, &got) == codec::Status::ok);
  FUZZ_CHECK(got == n && (n == 0 || std::memcmp(out.get(), data, n) == 0));
}

void decode_one(const uint8_t* frame, size_t size) {
  codec::FrameInfo info;
  const codec::Status header = codec::read_header(frame, size, &info);
  const uint64_t claimed = header == codec::Status::ok ? info.original_size : 0;
  const size_t cap = size_t(claimed <= kMaxOutput ? claimed : 4096);
  // Exactly `cap` bytes on the heap: any write past them is an ASan report.
  std::unique_ptr<uint8_t[]> out(new uint8_t[cap ? cap : 1]);
  size_t original = 0;
  const codec::Status st = codec::decode(frame, size, out.get(), cap, &original);
  // Every other SIMD path gives the same verdict, and the same bytes when it succeeds.
  for (std::string_view path : zipnet::fuzz::cpu_paths()) {
    codec::set_cpu_path(path);
    std::unique_ptr<uint8_t[]> alt(new uint8_t[cap ? cap : 1]);
    size_t alt_original = 0;
    const codec::Status alt_st = codec::decode(frame, size, alt.get(), cap, &alt_original);
    FUZZ_CHECK(alt_st == st);
    if (st == codec::Status::ok)
      FUZZ_CHECK(alt_original == original && (original == 0 || std::memcmp(alt.get(), out.get(), original) == 0));
  }
  codec::set_cpu_path("auto");
  if (st != codec::Status::ok) return;

  FUZZ_CHECK(header == codec::Status::ok);
  FUZZ_CHECK(original == info.original_size && original <= cap);
  FUZZ_CHECK(info.frame_size == size);
  // The same frame must not decode into a buffer one byte short.
  if (original > 0) {
    std::unique_ptr<uint8_t[]> small(new uint8_t[original - 1 ? original - 1 : 1]);
    size_t ignored = 0;
    FUZZ_CHECK(codec::decode(frame, size, small.get(), original - 1, &ignored) != codec::Status::ok);
  }
  // Decoding is a pure function of the frame.
  std::unique_ptr<uint8_t[]> again(new uint8_t[cap ? cap : 1]);
  size_t original2 = 0;
  FUZZ_CHECK(codec::decode(frame, size, again.get(), cap, &original2) == codec::Status::ok);
  FUZZ_CHECK(original2 == original && (original == 0 || std::memcmp(out.get(), again.get(), original) == 0));
  check_reencode(out.get(), original);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<uint8_t[]> frame(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(frame.get(), data, size);
  decode_one(frame.get(), size);
  zipnet::fuzz::reseal(frame.get(), size);
  decode_one(frame.get(), size);
  return 0;
}
