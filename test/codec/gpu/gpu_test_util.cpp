#include "gpu_test_util.h"

#include "test_hooks.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace zipnet::codec::gputest {

namespace {
constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

struct DeviceArena {
  uint8_t* p = nullptr;
  explicit DeviceArena(size_t n) {
    if (cudaMalloc(&p, std::max<size_t>(n, 1)) != cudaSuccess) p = nullptr;
  }
  ~DeviceArena() { cudaFree(p); }
};
}  // namespace

EncodeResult gpu_encode(const std::vector<Bytes>& msgs, const EncodeOptions& opts, size_t src_misalign,
                        size_t dst_misalign, int max_sms) {
  EncodeResult r;
  const size_t n = msgs.size();
  std::vector<size_t> src_off(n), dst_off(n), caps(n);
  size_t src_total = 0, dst_total = 0, max_bytes = 1;
  for (size_t i = 0; i < n; ++i) {
    src_off[i] = src_total + src_misalign;
    src_total = round_up(src_off[i] + msgs[i].size(), 256);
    caps[i] = max_frame_size(msgs[i].size(), opts.block_log2);
    dst_off[i] = dst_total + dst_misalign;
    dst_total = round_up(dst_off[i] + caps[i], 256);
    max_bytes = std::max(max_bytes, msgs[i].size());
  }
  DeviceArena src(src_total), dst(dst_total);
  std::vector<cuda::BatchItem> items(n);
  for (size_t i = 0; i < n; ++i) {
    if (!msgs[i].empty()) cudaMemcpy(src.p + src_off[i], msgs[i].data(), msgs[i].size(), cudaMemcpyHostToDevice);
    items[i] = cuda::BatchItem{src.p + src_off[i], msgs[i].size(), dst.p + dst_off[i], caps[i]};
  }
  cuda::Codec codec(std::max<size_t>(n, 1), max_bytes, opts);
  if (max_sms > 0) codec.set_max_sms(max_sms);
  // Both encoders, whatever the batch size: the split kernels, then fused_encode_kernel twice, each
  // into a cleared output. They must agree on status and bytes. The second fused launch takes the
  // messages in reverse order, so that what the first left in the codec's state (the ticket, each
  // block's published size) is wrong for it unless that launch reset it.
  std::vector<Bytes> split_frames;
  Status split_status = Status::ok;
  const std::vector<cuda::BatchItem> reversed(items.rbegin(), items.rend());
  for (const int pass : {0, 1, 2}) {
    const bool split = pass == 0, reverse = pass == 2;
    cudaMemset(dst.p, 0, std::max<size_t>(dst_total, 1));
    cuda::force_encoder_for_tests(codec, split ? cuda::EncoderPath::split : cuda::EncoderPath::fused);
    std::vector<size_t> sizes(n, 0);
    r.status = codec.encode_batch(reverse ? reversed.data() : items.data(), n, sizes.data());
    if (reverse) std::reverse(sizes.begin(), sizes.end());
    r.error = codec.last_error();
    r.frames.assign(n, Bytes{});
    if (r.status == Status::ok)
      for (size_t i = 0; i < n; ++i) {
        r.frames[i].resize(sizes[i]);
        cudaMemcpy(r.frames[i].data(), dst.p + dst_off[i], sizes[i], cudaMemcpyDeviceToHost);
      }
    if (split) {
      split_frames = r.frames;
      split_status = r.status;
    } else if (r.status != split_status || r.frames != split_frames) {
      r.status = Status::bad_options;
      r.error = pass == 1 ? "fused_encode_kernel and the split encoder disagree"
                          : "a second fused_encode_kernel launch on the same codec (messages reversed) differs";
      return r;
    }
  }
  return r;
}

std::vector<Decoded> gpu_decode(const std::vector<Bytes>& frames, const std::vector<size_t>& caps, size_t dst_misalign,
                                Status* batch_status) {
  const size_t n = frames.size();
  std::vector<size_t> in_off(n), out_off(n);
  size_t in_total = 0, out_total = 0;
  for (size_t i = 0; i < n; ++i) {
    in_off[i] = in_total;
    in_total = round_up(in_total + frames[i].size(), 256);
    out_off[i] = out_total + kGuard + dst_misalign;
    out_total = round_up(out_off[i] + caps[i] + kGuard, 256);
  }
  DeviceArena in(in_total), out(out_total);
  cudaMemset(out.p, kGuardByte, std::max<size_t>(out_total, 1));
  std::vector<cuda::BatchItem> items(n);
  for (size_t i = 0; i < n; ++i) {
    if (!frames[i].empty()) cudaMemcpy(in.p + in_off[i], frames[i].data(), frames[i].size(), cudaMemcpyHostToDevice);
    items[i] = cuda::BatchItem{in.p + in_off[i], frames[i].size(), out.p + out_off[i], caps[i]};
  }
  cuda::Codec codec(std::max<size_t>(n, 1), 1);  // max_item_bytes sizes encode scratch only
  std::vector<size_t> sizes(n, 0);
  std::vector<Status> sts(n, Status::ok);
  // Every decoder, each on a freshly guarded output: the warp decoder and the group decoder, each
  // with the frames checked by validate_kernel first and (up to kFusedMaxFrames frames) by the
  // decoder itself. Every result must equal the last one's, the group decoder fused, which the
  // caller checks (a difference shows up as a failed status, which every test checks).
  struct Config {
    int warps;
    bool separate_validation;
  };
  constexpr Config kConfigs[] = {{16, true}, {4, true}, {16, false}, {4, false}};
  Bytes all(out_total), prev_out;
  std::vector<size_t> prev_sizes;
  std::vector<Status> prev_sts;
  Status bs = Status::ok, prev_bs = Status::ok;
  bool agree = true;
  for (const Config& c : kConfigs) {
    cudaMemset(out.p, kGuardByte, std::max<size_t>(out_total, 1));
    cuda::force_decoder_for_tests(codec, c.warps);
    cuda::force_separate_validation_for_tests(codec, c.separate_validation);
    bs = codec.decode_batch(items.data(), n, sizes.data(), sts.data());
    cudaMemcpy(all.data(), out.p, out_total, cudaMemcpyDeviceToHost);
    if (!prev_out.empty()) {
      // Same statuses and sizes, the same bytes for every decoded item, and guards intact in both.
      agree = agree && prev_bs == bs && prev_sizes == sizes && prev_sts == sts;
      for (size_t i = 0; i < n && agree; ++i) {
        const size_t lo = out_off[i] - kGuard - dst_misalign, hi = out_off[i] + caps[i] + kGuard;
        for (size_t k = lo; k < hi && agree; ++k) {
          const bool guard = k < out_off[i] || k >= out_off[i] + caps[i];
          if (guard ? prev_out[k] != kGuardByte : (sts[i] == Status::ok && prev_out[k] != all[k])) agree = false;
        }
      }
    }
    prev_out = all;
    prev_sizes = sizes;
    prev_sts = sts;
    prev_bs = bs;
  }
  if (batch_status) *batch_status = bs;
  if (!agree) {
    for (auto& st : sts) st = Status::bad_options;  // the decoders disagree
    if (batch_status) *batch_status = Status::bad_options;
  }
  std::vector<Decoded> r(n);
  for (size_t i = 0; i < n; ++i) {
    r[i].status = sts[i];
    r[i].size = sizes[i];
    r[i].out.assign(all.begin() + out_off[i], all.begin() + out_off[i] + caps[i]);
    bool g = true;
    for (size_t k = out_off[i] - kGuard - dst_misalign; k < out_off[i]; ++k) g = g && all[k] == kGuardByte;
    for (size_t k = out_off[i] + caps[i]; k < out_off[i] + caps[i] + kGuard; ++k) g = g && all[k] == kGuardByte;
    r[i].guards_ok = g;
  }
  return r;
}

Bytes cpu_encode(const Bytes& msg, const EncodeOptions& opts) {
  Bytes f(max_frame_size(msg.size(), opts.block_log2));
  size_t fs = 0;
  if (encode(msg.data(), msg.size(), f.data(), f.size(), &fs, opts) != Status::ok) return {};
  f.resize(fs);
  return f;
}

std::string check_batch(const std::vector<Bytes>& msgs, const EncodeOptions& opts, size_t src_misalign,
                        size_t dst_misalign) {
  std::ostringstream why;
  EncodeResult g = gpu_encode(msgs, opts, src_misalign, dst_misalign);
  if (g.status != Status::ok) {
    why << "GPU encode_batch: " << to_string(g.status) << " " << g.error;
    return why.str();
  }
  std::vector<Bytes> cpu(msgs.size());
  std::vector<size_t> caps(msgs.size());
  for (size_t i = 0; i < msgs.size(); ++i) {
    cpu[i] = cpu_encode(msgs[i], opts);
    caps[i] = msgs[i].size();
    if (cpu[i] != g.frames[i]) {
      size_t k = 0;
      while (k < cpu[i].size() && k < g.frames[i].size() && cpu[i][k] == g.frames[i][k]) ++k;
      why << "message " << i << " (" << msgs[i].size() << " bytes): GPU frame (" << g.frames[i].size()
          << " bytes) differs from the CPU frame (" << cpu[i].size() << " bytes) first at byte " << k;
      return why.str();
    }
    // The CPU decodes the GPU frame.
    Bytes out(msgs[i].size() + 1);
    size_t got = 0;
    Status st = decode(g.frames[i].data(), g.frames[i].size(), out.data(), msgs[i].size(), &got);
    if (st != Status::ok || got != msgs[i].size() || !std::equal(msgs[i].begin(), msgs[i].end(), out.begin())) {
      why << "message " << i << ": CPU decode of the GPU frame: " << to_string(st);
      return why.str();
    }
  }
  // The GPU decodes the CPU frames (identical bytes, but decoded from the CPU's copy).
  auto d = gpu_decode(cpu, caps, dst_misalign);
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (d[i].status != Status::ok || d[i].size != msgs[i].size() || d[i].out != msgs[i] || !d[i].guards_ok) {
      why << "message " << i << " (" << msgs[i].size() << " bytes): GPU decode: " << to_string(d[i].status)
          << (d[i].guards_ok ? "" : ", wrote outside its output") << (d[i].out != msgs[i] ? ", output differs" : "");
      return why.str();
    }
  }
  return "";
}

Bytes gaussian_bf16(size_t bytes, uint64_t seed, float sigma) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, sigma);
  Bytes out(bytes);
  for (size_t i = 0; i + 1 < bytes; i += 2) {
    float f = nd(rng);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    out[i] = uint8_t(u >> 16);
    out[i + 1] = uint8_t(u >> 24);
  }
  if (bytes % 2) out[bytes - 1] = uint8_t(rng());
  return out;
}

Bytes random_bytes(size_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes out(bytes);
  for (auto& b : out) b = uint8_t(rng() >> 56);
  return out;
}

Bytes read_tensor(const std::string& name) {
  std::ifstream f(std::string(ZIPNET_TEST_DATA_DIR) + "/tensors/" + name, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::vector<std::string> tensor_names() {
  return {"activations.bf16", "adam-exp-avg.bf16", "grads.bf16",   "logits.bf16",      "moe-dispatch.bf16",
          "weights.bf16",     "activations.fp16",  "grads.fp32",   "grads-upcast.fp32"};
}

}  // namespace zipnet::codec::gputest
