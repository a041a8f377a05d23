// Helpers of the GPU codec tests: run a batch of host messages through the CUDA codec (device
// buffers at chosen misalignments, guard bytes around every decode output), and the full check
// that every test uses: GPU frames byte-identical to the CPU's, GPU decodes them and the CPU's,
// the CPU decodes the GPU's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zipnet/codec.h"
#include "zipnet/codec_cuda.h"

namespace zipnet::codec::gputest {

using Bytes = std::vector<uint8_t>;

struct EncodeResult {
  Status status = Status::ok;
  std::vector<Bytes> frames;
  std::string error;
};
// Encodes all messages in one encode_batch call with each encoder (the split kernels, then
// fused_encode_kernel twice on the same codec), which must agree. Inputs start `src_misalign`
// bytes and frames `dst_misalign` bytes past a 256-byte boundary; max_sms > 0 limits the codec's
// grids.
EncodeResult gpu_encode(const std::vector<Bytes>& msgs, const EncodeOptions& opts = {}, size_t src_misalign = 0,
                        size_t dst_misalign = 0, int max_sms = 0);

struct Decoded {
  Status status = Status::ok;
  size_t size = 0;
  Bytes out;               // the output region (capacity bytes)
  bool guards_ok = false;  // nothing written outside [dst, dst + capacity)
};
// Decodes all frames in one decode_batch call with each decoder (warp and group, validated first or
// fused), which must all agree; caps[i] is item i's output capacity.
std::vector<Decoded> gpu_decode(const std::vector<Bytes>& frames, const std::vector<size_t>& caps,
                                size_t dst_misalign = 0, Status* batch_status = nullptr);

Bytes cpu_encode(const Bytes& msg, const EncodeOptions& opts = {});

// The full check of one batch; returns "" or what went wrong first (for INFO/REQUIRE).
std::string check_batch(const std::vector<Bytes>& msgs, const EncodeOptions& opts = {}, size_t src_misalign = 0,
                        size_t dst_misalign = 0);

// Data.
Bytes gaussian_bf16(size_t bytes, uint64_t seed, float sigma = 1.0f);
Bytes random_bytes(size_t bytes, uint64_t seed);
Bytes read_tensor(const std::string& name);
std::vector<std::string> tensor_names();

}  // namespace zipnet::codec::gputest
