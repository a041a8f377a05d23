// zipnet::codec::cuda::bench (zipbench --device cuda): a correctness pass through the public
// batch API (round trip bit for bit, frames byte-identical to the CPU codec's), then the kernels
// alone timed with CUDA events: every batch's descriptors are uploaded once beforehand, so the
// timed loop is launches only, back to back on one stream.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "codec_impl.h"
#include "common/frame.h"
#include "kernels.h"
#include "zipnet/codec.h"
#include "zipnet/codec_cuda.h"

namespace zipnet::codec::cuda {

struct BenchAccess {
  static auto& impl(Codec& c) { return *c.impl_; }
};

// For the GPU tests (test_hooks.h): decode with one decoder whatever the batch size.
void force_decoder_for_tests(Codec& c, int warps) { BenchAccess::impl(c).decode_warps = warps; }
void force_separate_validation_for_tests(Codec& c, bool on) { BenchAccess::impl(c).separate_validation = on; }
void force_encoder_for_tests(Codec& c, EncoderPath path) { BenchAccess::impl(c).encoder = path; }

namespace {

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  ~DeviceBuffer() { cudaFree(p); }
  cudaError_t alloc(size_t n) { return cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)); }
};

struct Events {
  cudaEvent_t a = nullptr, b = nullptr;
  Events() {
    cudaEventCreate(&a);
    cudaEventCreate(&b);
  }
  ~Events() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
};

}  // namespace

BenchResult bench(const void* data, size_t size, size_t chunk, size_t batch, int iterations, const EncodeOptions& opts) {
  BenchResult r;
  r.bytes = size;
  std::string why;
  if (!available(&why)) {
    r.error = why;
    return r;
  }
  if (chunk == 0) chunk = std::max<size_t>(size, 1);
  batch = std::max<size_t>(batch, 1);
  iterations = std::max(iterations, 1);
  const size_t nmsg = (size + chunk - 1) / chunk;
  const size_t fcap = common::max_frame_size(chunk, opts.block_log2);
  auto fail = [&](const std::string& what) {
    r.ok = false;
    r.error = what;
    return r;
  };
  auto cuda_ok = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess && r.error.empty()) r.error = std::string(what) + ": " + cudaGetErrorString(e);
    return e == cudaSuccess;
  };

  Codec codec(batch, chunk, opts);
  auto& impl = BenchAccess::impl(codec);
  if (!impl.error.empty()) return fail(impl.error);
  // Benchmark knobs (the library itself reads no environment): SM budget, decode warps per SM.
  if (const char* v = std::getenv("ZIPNET_CUDA_SMS"); v && std::atoi(v) > 0) codec.set_max_sms(std::atoi(v));
  if (const char* v = std::getenv("ZIPNET_CUDA_DECODE_WARPS")) {
    const int w = std::atoi(v);
    impl.decode_warps = w == 4 || w == 8 || w == 16 ? w : 0;
  }
  if (const char* v = std::getenv("ZIPNET_CUDA_VALIDATE_KERNEL")) impl.separate_validation = std::atoi(v) == 1;
  if (const char* v = std::getenv("ZIPNET_CUDA_ENCODER"))
    impl.encoder = std::string(v) == "split" ? EncoderPath::split : std::string(v) == "fused" ? EncoderPath::fused : EncoderPath::by_size;
  r.sms_used = codec.sms_used();
  DeviceBuffer<uint8_t> d_in, d_frames, d_out;
  if (!cuda_ok(d_in.alloc(size), "cudaMalloc") || !cuda_ok(d_frames.alloc(nmsg * fcap), "cudaMalloc") ||
      !cuda_ok(d_out.alloc(size), "cudaMalloc"))
    return fail(r.error);
  if (!cuda_ok(cudaMemcpy(d_in.p, data, size, cudaMemcpyHostToDevice), "H2D")) return fail(r.error);
  cudaMemset(d_out.p, 0xA5, size);

  // The batches: message k is bytes [k*chunk, ...) of the input, its frame at k*fcap.
  std::vector<BatchItem> enc(nmsg), dec(nmsg);
  std::vector<size_t> fsize(nmsg, 0);
  for (size_t k = 0; k < nmsg; ++k) {
    const size_t len = std::min(chunk, size - k * chunk);
    enc[k] = BatchItem{d_in.p + k * chunk, len, d_frames.p + k * fcap, fcap};
  }
  // Correctness pass through the public API.
  for (size_t b0 = 0; b0 < nmsg; b0 += batch) {
    const size_t cnt = std::min(batch, nmsg - b0);
    Status st = codec.encode_batch(&enc[b0], cnt, &fsize[b0]);
    if (st != Status::ok) return fail("encode_batch: " + std::string(to_string(st)) + " " + codec.last_error());
  }
  for (size_t k = 0; k < nmsg; ++k) {
    dec[k] = BatchItem{d_frames.p + k * fcap, fsize[k], d_out.p + k * chunk, enc[k].size};
    r.compressed_bytes += fsize[k];
  }
  std::vector<size_t> osize(nmsg, 0);
  std::vector<Status> sts(nmsg, Status::ok);
  for (size_t b0 = 0; b0 < nmsg; b0 += batch) {
    const size_t cnt = std::min(batch, nmsg - b0);
    Status st = codec.decode_batch(&dec[b0], cnt, &osize[b0], &sts[b0]);
    if (st != Status::ok) return fail("decode_batch: " + std::string(to_string(st)) + " " + codec.last_error());
  }
  {
    std::vector<uint8_t> back(size);
    if (!cuda_ok(cudaMemcpy(back.data(), d_out.p, size, cudaMemcpyDeviceToHost), "D2H")) return fail(r.error);
    bool same = size == 0 || std::memcmp(back.data(), data, size) == 0;
    for (size_t k = 0; k < nmsg; ++k) same = same && osize[k] == enc[k].size;
    if (!same) return fail("GPU round trip differs from the input");
    std::vector<uint8_t> frames(nmsg * fcap), cpu(fcap);
    if (!cuda_ok(cudaMemcpy(frames.data(), d_frames.p, nmsg * fcap, cudaMemcpyDeviceToHost), "D2H")) return fail(r.error);
    r.matches_cpu_bytes = true;
    for (size_t k = 0; k < nmsg && r.matches_cpu_bytes; ++k) {
      size_t cs = 0;
      Status st = encode(static_cast<const uint8_t*>(data) + k * chunk, enc[k].size, cpu.data(), cpu.size(), &cs, opts);
      r.matches_cpu_bytes = st == Status::ok && cs == fsize[k] && std::memcmp(cpu.data(), frames.data() + k * fcap, cs) == 0;
    }
  }

  // Timed pass: descriptors of every batch uploaded first, then launches only.
  const size_t nb = (nmsg + batch - 1) / batch;
  const size_t stride = batch + 1;
  DeviceBuffer<detail::DevMsg> d_enc, d_dec;
  if (!cuda_ok(d_enc.alloc(nb * stride), "cudaMalloc") || !cuda_ok(d_dec.alloc(nb * stride), "cudaMalloc")) return fail(r.error);
  std::vector<uint32_t> totals(nb);
  std::vector<uint64_t> batch_frame_bytes(nb, 0);  // chooses the decoder, as decode_batch does
  for (size_t b = 0; b < nb; ++b) {
    const size_t b0 = b * batch, cnt = std::min(batch, nmsg - b0);
    if (impl.stage_encode(&enc[b0], cnt, &totals[b]) != Status::ok) return fail("stage_encode");
    cudaMemcpy(d_enc.p + b * stride, impl.h_msgs, (cnt + 1) * sizeof(detail::DevMsg), cudaMemcpyHostToDevice);
    impl.stage_decode(&dec[b0], cnt);
    for (size_t k = b0; k < b0 + cnt; ++k) batch_frame_bytes[b] += dec[k].size;
    cudaMemcpy(d_dec.p + b * stride, impl.h_msgs, (cnt + 1) * sizeof(detail::DevMsg), cudaMemcpyHostToDevice);
  }
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  Events ev;
  auto run_encode = [&] {
    for (size_t b = 0; b < nb; ++b) {
      const size_t cnt = std::min(batch, nmsg - b * batch);
      detail::launch_encode(impl.encode_args(d_enc.p + b * stride, cnt, totals[b]), impl.encode_grid(totals[b], cnt), s);
    }
  };
  auto run_decode = [&] {
    for (size_t b = 0; b < nb; ++b) {
      const size_t cnt = std::min(batch, nmsg - b * batch);
      detail::launch_decode(impl.decode_args(d_dec.p + b * stride, cnt, batch_frame_bytes[b]), impl.decode_grid(cnt, batch_frame_bytes[b]), s);
    }
  };
  float ms_enc = 0, ms_dec = 0;
  run_encode();  // warm-up
  run_decode();
  cudaEventRecord(ev.a, s);
  for (int it = 0; it < iterations; ++it) run_encode();
  cudaEventRecord(ev.b, s);
  cudaEventSynchronize(ev.b);
  cudaEventElapsedTime(&ms_enc, ev.a, ev.b);
  cudaEventRecord(ev.a, s);
  for (int it = 0; it < iterations; ++it) run_decode();
  cudaEventRecord(ev.b, s);
  cudaEventSynchronize(ev.b);
  cudaEventElapsedTime(&ms_dec, ev.a, ev.b);
  if (std::getenv("ZIPNET_CUDA_BENCH_DETAIL")) {  // per-kernel times of the first batch, to stderr
    cudaEvent_t mk[3];
    for (auto& e : mk) cudaEventCreate(&e);
    double te[2] = {0, 0}, td[2] = {0, 0};
    const size_t cnt = std::min(batch, nmsg);
    auto add_spans = [&](double* t) {
      cudaEventSynchronize(mk[2]);
      for (int k = 0; k < 2; ++k) {
        float ms = 0;
        cudaEventElapsedTime(&ms, mk[k], mk[k + 1]);
        t[k] += ms * 1000.0 / iterations;
      }
    };
    for (int it = 0; it < iterations; ++it) {
      detail::launch_encode(impl.encode_args(d_enc.p, cnt, totals[0]), impl.encode_grid(totals[0], cnt), s, mk);
      add_spans(te);
      detail::launch_decode(impl.decode_args(d_dec.p, cnt, batch_frame_bytes[0]), impl.decode_grid(cnt, batch_frame_bytes[0]), s, mk);
      add_spans(td);
    }
    for (auto& e : mk) cudaEventDestroy(e);
    std::fprintf(stderr, "  per batch of %zu x %zu B: encode analyse %.1f us, blocks and headers %.1f us; "
                 "decode validate %.1f us, blocks %.1f us\n", cnt, chunk, te[0], te[1], td[0], td[1]);
  }
  const bool launched_ok = cuda_ok(cudaGetLastError(), "timed launches") && cuda_ok(cudaStreamSynchronize(s), "timed run");
  cudaStreamDestroy(s);
  if (!launched_ok) return fail(r.error);
  // The timed decodes rewrote the output: check it once more.
  {
    std::vector<uint8_t> back(size);
    cudaMemcpy(back.data(), d_out.p, size, cudaMemcpyDeviceToHost);
    if (size && std::memcmp(back.data(), data, size) != 0) return fail("timed GPU round trip differs from the input");
  }
  const double bytes = double(size) * iterations;
  r.compress_gbps = ms_enc > 0 ? bytes / (double(ms_enc) * 1e6) : 0;
  r.decompress_gbps = ms_dec > 0 ? bytes / (double(ms_dec) * 1e6) : 0;
  r.ok = true;
  return r;
}

}  // namespace zipnet::codec::cuda
