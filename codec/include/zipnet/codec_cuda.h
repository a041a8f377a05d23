// Public API of the zipnet CUDA codec: batched encode/decode of many messages in one launch
// sequence, producing exactly the bytes of the CPU codec (docs/format.md). This header has no CUDA
// includes so that tools can call it without nvcc; streams are passed as void* (cudaStream_t).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zipnet/codec.h"

namespace zipnet::codec::cuda {

// True when the CUDA codec was built and a GPU is visible; otherwise why_not says why.
bool available(std::string* why_not);

// One message of a batch. All pointers are device pointers.
struct BatchItem {
  const void* src = nullptr;
  size_t size = 0;       // encode: input bytes; decode: frame bytes
  void* dst = nullptr;
  size_t dst_cap = 0;    // encode: >= max_frame_size(size); decode: >= original size
};

// One Codec per thread (or stream): calls on one Codec must not overlap, since they share its
// scratch and its pinned descriptor buffer. The constructor makes `device` current on the calling
// thread (cudaSetDevice). CUDA failures are reported as Status::device_error with last_error().
class Codec {
 public:
  // Scratch for up to max_items messages of up to max_item_bytes each is allocated once here,
  // never on the data path.
  Codec(size_t max_items, size_t max_item_bytes, const EncodeOptions& opts = {}, int device = 0);
  ~Codec();
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  // Encodes every item into a frame. out_sizes (host, count entries) receives the frame sizes once
  // the work on `stream` has completed (the call synchronises on that stream before returning).
  Status encode_batch(const BatchItem* items, size_t count, size_t* out_sizes, void* stream = nullptr);
  // Decodes every frame; statuses (host, count entries) gets each item's result.
  Status decode_batch(const BatchItem* items, size_t count, size_t* out_sizes, Status* statuses,
                      void* stream = nullptr);

  // SMs the batched kernels' grids are sized for (the codec shares the GPU with training): no
  // grid has more CTAs than this, and each kernel runs one CTA per SM. Default: all SMs
  // (zipbench: ZIPNET_CUDA_SMS).
  int sms_used() const;
  void set_max_sms(int sms);

  // Why a call returned device_error: the CUDA call that failed (allocation, launch, device
  // error); empty otherwise. Such an error is sticky for this Codec.
  const std::string& last_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend struct BenchAccess;
};

// Benchmark used by zipbench --device cuda: copies `data` to the GPU, cuts it into chunk-byte
// messages, encodes and decodes them in batches of `batch`, checks every round trip bit for bit
// against the input and against the CPU codec's bytes, and times the kernels with CUDA events.
struct BenchResult {
  bool ok = false;
  std::string error;
  uint64_t bytes = 0;
  uint64_t compressed_bytes = 0;
  double compress_gbps = 0;    // uncompressed bytes / kernel time
  double decompress_gbps = 0;
  bool matches_cpu_bytes = false;
  int sms_used = 0;
};
BenchResult bench(const void* data, size_t size, size_t chunk, size_t batch, int iterations,
                  const EncodeOptions& opts = {});

}  // namespace zipnet::codec::cuda
