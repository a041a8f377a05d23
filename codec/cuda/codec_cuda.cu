// zipnet::codec::cuda::Codec: batch descriptors (one H2D copy), the launches of
// encode_kernels.cu / decode_kernels.cu on the caller's stream, and the results (one D2H copy).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "codec_impl.h"
#include "common/frame.h"
#include "common/layout.h"
#include "kernels.h"
#include "zipnet/codec_cuda.h"

namespace zipnet::codec::cuda {

using detail::DevMsg;
namespace cm = zipnet::codec::common;

bool available(std::string* why_not) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why_not) *why_not = e != cudaSuccess ? std::string("no usable CUDA device: ") + cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();
    return false;
  }
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  if (major < 9) {
    if (why_not) *why_not = "the CUDA codec is built for compute capability 9.0+ (sm_90); device 0 is " + std::to_string(major) + ".x";
    return false;
  }
  return true;
}

bool Codec::Impl::check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  if (error.empty()) error = std::string(what) + ": " + cudaGetErrorString(e);
  return false;
}

Codec::Codec(size_t max_items, size_t max_item_bytes, const EncodeOptions& opts, int device)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.device = device;
  m.max_items = std::max<size_t>(max_items, 1);
  m.max_item_bytes = std::max<size_t>(max_item_bytes, 1);
  m.opts = opts;
  m.opts_ok = opts.block_log2 >= cm::kMinBlockLog2 && opts.block_log2 <= cm::kMaxBlockLog2 &&
              (!opts.dtype || uint8_t(*opts.dtype) < cm::kNumDtypes);
  const unsigned log2 = m.opts_ok ? opts.block_log2 : cm::kDefaultBlockLog2;
  const uint64_t bs = uint64_t(1) << log2;
  m.max_blocks = uint64_t(m.max_items) * cm::block_count(m.max_item_bytes, log2);
  m.slot_bytes = detail::slot_bytes_for(bs);
  if (!m.check(cudaSetDevice(device), "cudaSetDevice")) return;
  m.check(cudaDeviceGetAttribute(&m.sm_count, cudaDevAttrMultiProcessorCount, device), "SM count");
  m.sms = m.sm_count;
  m.check(cudaMalloc(&m.d_msgs, (m.max_items + 1) * sizeof(DevMsg)), "cudaMalloc msgs");
  m.check(cudaMallocHost(&m.h_msgs, (m.max_items + 1) * sizeof(DevMsg)), "cudaMallocHost msgs");
  m.check(cudaMalloc(&m.d_recs, std::max<uint64_t>(m.max_blocks, 1) * sizeof(detail::BlockRec)), "cudaMalloc recs");
  m.check(cudaMalloc(&m.d_plans, std::max<uint64_t>(m.max_blocks, 1) * sizeof(detail::BlockPlanRec)), "cudaMalloc plans");
  m.check(cudaMalloc(&m.d_scratch, std::max<uint64_t>(m.max_blocks, 1) * m.slot_bytes), "cudaMalloc scratch");
  m.check(cudaMalloc(&m.d_published, std::max<uint64_t>(m.max_blocks, 1) * sizeof(uint64_t)), "cudaMalloc published");
  // fused_encode_kernel's ticket and finished-group count (EncodeArgs::ticket): zero here, and
  // zeroed again by each launch's last group.
  m.check(cudaMalloc(&m.d_ticket, 2 * sizeof(uint32_t)), "cudaMalloc ticket");
  m.check(cudaMemset(m.d_ticket, 0, 2 * sizeof(uint32_t)), "cudaMemset ticket");
  m.check(cudaDeviceSynchronize(), "cudaMemset ticket");  // a memset may return before it is done
  m.check(detail::configure_kernels(), "kernel attributes");
}

Codec::~Codec() {
  if (!impl_) return;
  cudaFree(impl_->d_msgs);
  cudaFreeHost(impl_->h_msgs);
  cudaFree(impl_->d_recs);
  cudaFree(impl_->d_plans);
  cudaFree(impl_->d_scratch);
  cudaFree(impl_->d_published);
  cudaFree(impl_->d_ticket);
}

int Codec::sms_used() const { return impl_->sms; }
void Codec::set_max_sms(int sms) { impl_->sms = std::clamp(sms, 1, std::max(impl_->sm_count, 1)); }
const std::string& Codec::last_error() const { return impl_->error; }

int Codec::Impl::encode_grid(uint32_t total_blocks, size_t count) const {
  const uint64_t work = std::max<uint64_t>({uint64_t(total_blocks), uint64_t(count), 1});
  return int(std::min<uint64_t>(uint64_t(sms), work));
}
// CTAs for a decode: enough for the blocks the frames can hold (estimated at a ratio of up to 4,
// 32 KiB blocks), at most one per SM. (It was count * 64, which left a lone 64 MiB frame's 2048
// blocks on 64 of the 132 SMs: ncu showed waves per SM 0.48.)
int Codec::Impl::decode_grid(size_t count, uint64_t frame_bytes) const {
  const uint64_t est_blocks = (frame_bytes * 4 >> cm::kDefaultBlockLog2) + count;
  return int(std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(sms), est_blocks)));
}

Status Codec::Impl::stage_encode(const BatchItem* items, size_t count, uint32_t* total_blocks) {
  if (!opts_ok) return Status::bad_options;
  if (count > max_items) return Status::bad_options;
  const unsigned log2 = opts.block_log2;
  uint64_t first = 0;
  for (size_t i = 0; i < count; ++i) {
    const BatchItem& it = items[i];
    const uint64_t nblk = cm::block_count(it.size, log2);
    if (it.size > max_item_bytes) return Status::too_large;
    if (it.size + nblk > cm::kMaxPayloadArea) return Status::too_large;
    if (!it.dst || it.dst_cap < cm::max_frame_size(it.size, log2) || (it.size && !it.src)) return Status::dst_too_small;
    DevMsg& d = h_msgs[i];
    std::memset(&d, 0, sizeof d);
    d.src = static_cast<const uint8_t*>(it.src);
    d.dst = static_cast<uint8_t*>(it.dst);
    d.size = it.size;
    d.cap = it.dst_cap;
    d.first_block = uint32_t(first);
    d.nblk = uint32_t(nblk);
    if (opts.detect_layout) {  // the size rules of common::detect_layout; the kernels check the flags
      if (it.size % cm::kLLLine == 0 && it.size >= 2 * cm::kLLLine) d.layout_ok |= 1;
      if (it.size % cm::kLL128Line == 0 && it.size >= 2 * cm::kLL128Line) d.layout_ok |= 2;
    }
    first += nblk;
  }
  std::memset(&h_msgs[count], 0, sizeof(DevMsg));
  h_msgs[count].first_block = uint32_t(first);
  *total_blocks = uint32_t(first);
  return Status::ok;
}

detail::EncodeArgs Codec::Impl::encode_args(DevMsg* msgs, size_t count, uint32_t total_blocks) const {
  detail::EncodeArgs a;
  a.msgs = msgs;
  a.count = uint32_t(count);
  a.total_blocks = total_blocks;
  a.recs = d_recs;
  a.plans = d_plans;
  a.scratch = d_scratch;
  a.slot_bytes = slot_bytes;
  a.forced_dtype = opts.dtype ? int(*opts.dtype) : -1;
  a.modes = opts.modes;
  a.block_log2 = opts.block_log2;
  const bool one_wave = detail::fused_encode_fits(total_blocks, encode_grid(total_blocks, count), opts.block_log2);
  a.fused = encoder == EncoderPath::by_size ? one_wave
                                            : encoder == EncoderPath::fused && opts.block_log2 <= detail::kMaxStagedLog2;
  a.published = d_published;
  a.ticket = d_ticket;
  return a;
}

Status Codec::encode_batch(const BatchItem* items, size_t count, size_t* out_sizes, void* stream) {
  Impl& m = *impl_;
  for (size_t i = 0; i < count; ++i) out_sizes[i] = 0;
  if (!m.error.empty()) return Status::device_error;
  if (count == 0) return Status::ok;
  uint32_t total = 0;
  Status st = m.stage_encode(items, count, &total);
  if (st != Status::ok) return st;
  if (total > m.max_blocks) return Status::too_large;
  auto s = static_cast<cudaStream_t>(stream);
  const size_t bytes = (count + 1) * sizeof(DevMsg);
  if (!m.check(cudaMemcpyAsync(m.d_msgs, m.h_msgs, bytes, cudaMemcpyHostToDevice, s), "H2D")) return Status::device_error;
  detail::launch_encode(m.encode_args(m.d_msgs, count, total), m.encode_grid(total, count), s);
  if (!m.check(cudaGetLastError(), "encode launch")) return Status::device_error;
  if (!m.check(cudaMemcpyAsync(m.h_msgs, m.d_msgs, bytes, cudaMemcpyDeviceToHost, s), "D2H")) return Status::device_error;
  if (!m.check(cudaStreamSynchronize(s), "encode")) return Status::device_error;
  for (size_t i = 0; i < count; ++i) out_sizes[i] = size_t(m.h_msgs[i].out_size);
  return Status::ok;
}

Status Codec::Impl::stage_decode(const BatchItem* items, size_t count) {
  if (count > max_items) return Status::bad_options;
  for (size_t i = 0; i < count; ++i) {
    const BatchItem& it = items[i];
    DevMsg& d = h_msgs[i];
    std::memset(&d, 0, sizeof d);
    d.src = static_cast<const uint8_t*>(it.src);
    d.dst = static_cast<uint8_t*>(it.dst);
    d.size = it.src ? it.size : 0;
    d.cap = it.dst_cap;
    d.first_error = ~0ull;
  }
  std::memset(&h_msgs[count], 0, sizeof(DevMsg));
  return Status::ok;
}

detail::DecodeArgs Codec::Impl::decode_args(DevMsg* msgs, size_t count, uint64_t frame_bytes) const {
  detail::DecodeArgs a;
  a.msgs = msgs;
  a.count = uint32_t(count);
  if (decode_warps == 8 || decode_warps == 16) a.warps = decode_warps;
  else if (decode_warps == 4) a.warps = 0;
  else a.warps = detail::prefer_group_decoder(frame_bytes, decode_grid(count, frame_bytes)) ? 0 : 16;
  a.fused = !separate_validation && count <= detail::kFusedMaxFrames && a.warps != 8;
  return a;
}

Status Codec::decode_batch(const BatchItem* items, size_t count, size_t* out_sizes, Status* statuses, void* stream) {
  Impl& m = *impl_;
  for (size_t i = 0; i < count; ++i) {
    out_sizes[i] = 0;
    statuses[i] = Status::bad_options;
  }
  const auto device_failed = [&] {  // a CUDA call failed: no frame was decoded
    for (size_t i = 0; i < count; ++i) statuses[i] = Status::device_error;
    return Status::device_error;
  };
  if (!m.error.empty()) return device_failed();
  if (count == 0) return Status::ok;
  Status st = m.stage_decode(items, count);
  if (st != Status::ok) return st;
  auto s = static_cast<cudaStream_t>(stream);
  const size_t bytes = (count + 1) * sizeof(DevMsg);
  if (!m.check(cudaMemcpyAsync(m.d_msgs, m.h_msgs, bytes, cudaMemcpyHostToDevice, s), "H2D")) return device_failed();
  uint64_t frame_bytes = 0;
  for (size_t i = 0; i < count; ++i) frame_bytes += items[i].src ? items[i].size : 0;
  detail::launch_decode(m.decode_args(m.d_msgs, count, frame_bytes), m.decode_grid(count, frame_bytes), s);
  if (!m.check(cudaGetLastError(), "decode launch")) return device_failed();
  if (!m.check(cudaMemcpyAsync(m.h_msgs, m.d_msgs, bytes, cudaMemcpyDeviceToHost, s), "D2H")) return device_failed();
  if (!m.check(cudaStreamSynchronize(s), "decode")) return device_failed();
  Status first = Status::ok;
  for (size_t i = 0; i < count; ++i) {
    const DevMsg& d = m.h_msgs[i];
    uint8_t code = uint8_t(d.status);
    if (code == cm::kOk && d.first_error != ~0ull) code = uint8_t(d.first_error & 0xFF);
    statuses[i] = Status(code);
    if (code == cm::kOk) out_sizes[i] = size_t(d.out_size);
    else if (first == Status::ok) first = Status(code);
  }
  return first;
}

}  // namespace zipnet::codec::cuda
