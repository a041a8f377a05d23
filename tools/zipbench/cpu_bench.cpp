#include "cpu_bench.h"

#include <algorithm>
#include <ctime>
#include <cstring>
#include <vector>

namespace zipbench {

using namespace zipnet::codec;
namespace {

// Thread CPU time: the figure is per core even when the machine is shared (2 cores here, busy).
struct Clock {
  using time_point = double;
  static double now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

CpuResult cpu_bench(const uint8_t* data, size_t size, size_t chunk, int iterations, const EncodeOptions& opts,
                    const std::function<void(int, int)>& progress) {
  CpuResult r;
  r.bytes = size;
  const size_t nmsg = size ? (size + chunk - 1) / chunk : 0;
  std::vector<size_t> frame_off(nmsg + 1, 0), frame_len(nmsg, 0);
  for (size_t m = 0; m < nmsg; ++m) {
    size_t len = std::min(chunk, size - m * chunk);
    frame_off[m + 1] = frame_off[m] + max_frame_size(len, opts.block_log2);
  }
  std::vector<uint8_t> frames(frame_off[nmsg] + 1);
  std::vector<uint8_t> out(size + 1);
  std::vector<double> enc_s, dec_s;
  r.roundtrip_ok = true;
  for (int it = 0; it < std::max(1, iterations); ++it) {
    EncodeStats stats;
    auto t0 = Clock::now();
    for (size_t m = 0; m < nmsg; ++m) {
      size_t len = std::min(chunk, size - m * chunk);
      Status st = encode(data + m * chunk, len, frames.data() + frame_off[m], frame_off[m + 1] - frame_off[m],
                         &frame_len[m], opts, it == 0 ? &stats : nullptr);
      if (st != Status::ok) {
        r.roundtrip_ok = false;
        r.error = "encode failed: " + std::string(to_string(st));
        return r;
      }
    }
    auto t1 = Clock::now();
    std::memset(out.data(), 0, size);
    auto t2 = Clock::now();
    for (size_t m = 0; m < nmsg; ++m) {
      size_t len = std::min(chunk, size - m * chunk), got = 0;
      Status st = decode(frames.data() + frame_off[m], frame_len[m], out.data() + m * chunk, len, &got);
      if (st != Status::ok || got != len) {
        r.roundtrip_ok = false;
        r.error = "decode failed: " + std::string(to_string(st));
        return r;
      }
    }
    auto t3 = Clock::now();
    if (size && std::memcmp(out.data(), data, size) != 0) {
      r.roundtrip_ok = false;
      r.error = "round trip differs from the input";
      return r;
    }
    enc_s.push_back(t1 - t0);
    dec_s.push_back(t3 - t2);
    if (it == 0) {
      r.stats = stats;
      r.compressed_bytes = 0;
      for (size_t m = 0; m < nmsg; ++m) r.compressed_bytes += frame_len[m];
      FrameInfo info;
      if (nmsg && read_header(frames.data(), frame_len[0], &info) == Status::ok) r.detected = info.dtype;
    }
    if (progress) progress(it + 1, iterations);
  }
  r.compress_gbps = median(enc_s) > 0 ? double(size) / median(enc_s) / 1e9 : 0;
  r.decompress_gbps = median(dec_s) > 0 ? double(size) / median(dec_s) / 1e9 : 0;

  // The entropy-mode overhead: code every block with rANS (RAW still allowed) and count.
  EncodeOptions ro = opts;
  ro.modes = mode_bit(Mode::raw) | mode_bit(Mode::rans);
  EncodeStats rs;
  for (size_t m = 0; m < nmsg; ++m) {
    size_t len = std::min(chunk, size - m * chunk), fs = 0;
    encode(data + m * chunk, len, frames.data() + frame_off[m], frame_off[m + 1] - frame_off[m], &fs, ro, &rs);
  }
  r.rans_only_symbol_bytes = rs.symbol_section_bytes;
  r.rans_only_blocks = rs.blocks_by_mode[3];
  r.total_blocks = rs.blocks_by_mode[0] + rs.blocks_by_mode[1] + rs.blocks_by_mode[2] + rs.blocks_by_mode[3];
  return r;
}

}  // namespace zipbench
