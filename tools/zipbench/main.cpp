// zipbench: ratio and single-core speed of the zipnet codec on tensor files and synthetic data,
// with a bit-for-bit round-trip check and the order-0 ideal beside every figure.
// Usage: zipbench [options] FILE...   (see --help)
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cpu_bench.h"
#include "ideal.h"
#include "inputs.h"
#include "zipnet/codec.h"
#ifdef ZIPNET_HAVE_CUDA
#include "zipnet/codec_cuda.h"
#endif

using namespace zipnet::codec;
using zipbench::Input;

namespace {

size_t parse_size(const std::string& s) {
  size_t pos = 0;
  double v = std::stod(s, &pos);
  std::string suf = s.substr(pos);
  double mul = 1;
  if (suf == "K" || suf == "k" || suf == "KiB") mul = 1024;
  else if (suf == "M" || suf == "MiB") mul = 1024.0 * 1024;
  else if (suf == "G" || suf == "GiB") mul = 1024.0 * 1024 * 1024;
  else if (!suf.empty()) throw std::runtime_error("bad size suffix in '" + s + "' (K, M, G)");
  return size_t(v * mul);
}

ModeMask parse_modes(const std::string& s) {
  if (s == "auto" || s.empty()) return kAllModes;
  ModeMask m = mode_bit(Mode::raw);
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    std::string w = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (w == "raw") m |= mode_bit(Mode::raw);
    else if (w == "planes") m |= mode_bit(Mode::planes);
    else if (w == "window") m |= mode_bit(Mode::window);
    else if (w == "rans") m |= mode_bit(Mode::rans);
    else throw std::runtime_error("unknown mode '" + w + "' (raw, planes, window, rans)");
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zipbench: zipnet codec ratio and speed, every round trip checked bit for bit"};
  std::vector<std::string> files, synthetic;
  std::string device = "cpu", chunk_s = "512K", size_s = "16M", dtype_s, codec_dtype_s = "auto", modes_s = "auto",
              cpu_path_s = "auto";
  int batch = 16, iters = 5;
  unsigned block_log2 = kDefaultBlockLog2;
  bool json = false;
  app.add_option("files", files, "raw tensor files; dtype from the suffix .bf16/.fp16/.fp32, else opaque bytes");
  app.add_option("--synthetic", synthetic, "synthetic set: gaussian | lognormal | random (repeatable)");
  app.add_option("--size", size_s, "bytes of each synthetic set (K/M/G suffixes)");
  app.add_option("--dtype", dtype_s, "dtype of the inputs (bf16|fp16|fp32|opaque): overrides the suffix; "
                                     "element type of gaussian/lognormal sets");
  app.add_option("--codec-dtype", codec_dtype_s, "dtype the encoder uses: auto (detect, as the plugin does) or "
                                                 "bf16|fp16|fp32|opaque");
  app.add_option("--device", device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--chunk", chunk_s, "message size: each message is one frame (K/M/G suffixes)");
  app.add_option("--batch", batch, "messages per GPU launch (cuda)");
  app.add_option("--iters", iters, "timed iterations; the median is reported");
  app.add_option("--modes", modes_s, "allowed block modes: auto or a list of raw,planes,window,rans");
  app.add_option("--block-log2", block_log2, "log2 of the block size (12..20)");
  app.add_option("--cpu-path", cpu_path_s, "SIMD path: auto | avx512 | avx2 | portable");
  app.add_flag("--json", json, "one JSON object per input on stdout");
  CLI11_PARSE(app, argc, argv);

  try {
    std::optional<Dtype> dtype_override;
    if (!dtype_s.empty()) {
      dtype_override = zipbench::parse_dtype(dtype_s);
      if (!dtype_override) throw std::runtime_error("unknown --dtype '" + dtype_s + "'");
    }
    EncodeOptions opts;
    opts.modes = parse_modes(modes_s);
    opts.block_log2 = block_log2;
    if (codec_dtype_s != "auto") {
      opts.dtype = zipbench::parse_dtype(codec_dtype_s);
      if (!opts.dtype) throw std::runtime_error("unknown --codec-dtype '" + codec_dtype_s + "'");
    }
    if (!set_cpu_path(cpu_path_s)) throw std::runtime_error("this CPU or build has no '" + cpu_path_s + "' path");
    const size_t chunk = parse_size(chunk_s);
    if (chunk == 0) throw std::runtime_error("--chunk must be > 0");
    if (files.empty() && synthetic.empty()) throw std::runtime_error("no input: give files or --synthetic");

    std::vector<std::pair<std::string, bool>> todo;  // name, is synthetic
    for (auto& f : files) todo.push_back({f, false});
    for (auto& s : synthetic) todo.push_back({s, true});

    bool all_ok = true;
    for (size_t i = 0; i < todo.size(); ++i) {
      Input in;
      if (todo[i].second) {
        in = zipbench::synthetic(todo[i].first, parse_size(size_s), dtype_override, 42 + i);
      } else {
        in.name = todo[i].first;
        in.dtype = dtype_override.value_or(zipbench::dtype_from_suffix(in.name));
        in.data = zipbench::read_file(in.name);
      }
      fmt::print(stderr, "[{}/{}] {} ({} bytes, {}) on {}...\n", i + 1, todo.size(), in.name, in.data.size(),
                 zipbench::dtype_name(in.dtype), device);
      const double ideal = zipbench::ideal_ratio(in.data.data(), in.data.size(), in.dtype);
      nlohmann::ordered_json j;
      j["file"] = in.name;
      j["dtype"] = zipbench::dtype_name(in.dtype);
      j["bytes"] = in.data.size();
      j["device"] = device;
      j["chunk"] = chunk;
      bool ok = false;
      if (device == "cpu") {
        auto progress = [&](int done, int total) {
          if (in.data.size() * size_t(total) >= (size_t(256) << 20)) fmt::print(stderr, "  iteration {}/{}\n", done, total);
        };
        auto r = zipbench::cpu_bench(in.data.data(), in.data.size(), chunk, iters, opts, progress);
        ok = r.roundtrip_ok;
        // Entropy-mode overhead: rANS symbol sections against the order-0 entropy of each block's symbols.
        double ent = 0;
        for (size_t off = 0; off < in.data.size(); off += chunk)
          ent += zipbench::symbol_entropy_bytes(in.data.data() + off, std::min(chunk, in.data.size() - off),
                                                r.detected, size_t(1) << block_log2);
        double overhead = ent > 0 ? (double(r.rans_only_symbol_bytes) / ent - 1.0) * 100.0 : 0.0;
        double ratio = r.compressed_bytes ? double(r.bytes) / double(r.compressed_bytes) : 0;
        j["compressed_bytes"] = r.compressed_bytes;
        j["ratio"] = ratio;
        j["compress_gbps"] = r.compress_gbps;
        j["decompress_gbps"] = r.decompress_gbps;
        j["roundtrip_ok"] = r.roundtrip_ok;
        j["ideal_ratio_order0_64k"] = ideal;
        j["codec_dtype"] = zipbench::dtype_name(r.detected);
        j["blocks_by_mode"] = {{"raw", r.stats.blocks_by_mode[0]}, {"planes", r.stats.blocks_by_mode[1]},
                               {"window", r.stats.blocks_by_mode[2]}, {"rans", r.stats.blocks_by_mode[3]}};
        j["rans_overhead_pct"] = overhead;
        j["rans_blocks"] = r.rans_only_blocks;
        j["cpu_path"] = std::string(cpu_path());
        j["iters"] = iters;
        if (!r.error.empty()) j["error"] = r.error;
        if (!json)
          fmt::print("{:<40} {:>6} {:>10} B  ratio {:6.4f} (ideal {:6.4f})  compress {:6.2f} GB/s  decompress "
                     "{:6.2f} GB/s  rANS overhead {:+.2f}% ({}/{} blocks)  modes r/p/w/a {}/{}/{}/{}  [{}, {}]{}\n",
                     in.name, zipbench::dtype_name(in.dtype), r.bytes, ratio, ideal, r.compress_gbps,
                     r.decompress_gbps, overhead, r.rans_only_blocks, r.total_blocks, r.stats.blocks_by_mode[0],
                     r.stats.blocks_by_mode[1], r.stats.blocks_by_mode[2], r.stats.blocks_by_mode[3],
                     zipbench::dtype_name(r.detected), cpu_path(), ok ? "" : "  ROUND TRIP FAILED: " + r.error);
      } else {
#ifdef ZIPNET_HAVE_CUDA
        auto r = zipnet::codec::cuda::bench(in.data.data(), in.data.size(), chunk, size_t(batch), iters, opts);
        ok = r.ok;
        double ratio = r.compressed_bytes ? double(r.bytes) / double(r.compressed_bytes) : 0;
        j["compressed_bytes"] = r.compressed_bytes;
        j["ratio"] = ratio;
        j["compress_gbps"] = r.compress_gbps;
        j["decompress_gbps"] = r.decompress_gbps;
        j["roundtrip_ok"] = r.ok;
        j["ideal_ratio_order0_64k"] = ideal;
        j["matches_cpu_bytes"] = r.matches_cpu_bytes;
        j["sms_used"] = r.sms_used;
        j["batch"] = batch;
        j["iters"] = iters;
        if (!r.error.empty()) j["error"] = r.error;
        if (!json)
          fmt::print("{:<40} {:>6} {:>10} B  ratio {:6.4f} (ideal {:6.4f})  compress {:7.1f} GB/s  decompress "
                     "{:7.1f} GB/s  SMs {}  same bytes as CPU: {}{}\n",
                     in.name, zipbench::dtype_name(in.dtype), r.bytes, ratio, ideal, r.compress_gbps,
                     r.decompress_gbps, r.sms_used, r.matches_cpu_bytes ? "yes" : "NO",
                     ok ? "" : "  FAILED: " + r.error);
#else
        throw std::runtime_error("this zipbench was built without the CUDA codec (configure with -Dcuda=enabled)");
#endif
      }
      if (json) fmt::print("{}\n", j.dump());
      std::fflush(stdout);
      all_ok = all_ok && ok;
    }
    return all_ok ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "zipbench: {}\n", e.what());
    return 2;
  }
}
