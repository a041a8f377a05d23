// Shared by the plugin suites: where the built plugin and the shipped tensors are, and payloads.
#pragma once

#include <string>
#include <vector>

#include "driver.h"

namespace plugin_test {

inline const char* plugin_path() { return ZIPNET_PLUGIN_PATH; }

// The real training tensors shipped in test/data/tensors (bf16 only, or all of them).
inline std::vector<std::string> tensor_files(bool bf16_only) {
  std::vector<std::string> names = {"weights.bf16", "grads.bf16", "activations.bf16", "moe-dispatch.bf16",
                                    "adam-exp-avg.bf16", "logits.bf16"};
  if (!bf16_only)
    for (const char* n : {"activations.fp16", "grads.fp32", "grads-upcast.fp32"}) names.push_back(n);
  std::vector<std::string> files;
  for (const std::string& n : names) files.push_back(std::string(ZIPPERF_TENSOR_DIR) + "/" + n);
  return files;
}

inline const zipperf::Payload& tensors() {
  static zipperf::Payload p = [] {
    std::string err;
    zipperf::Payload t = zipperf::Payload::from_files(tensor_files(false), &err);
    if (!err.empty()) throw std::runtime_error(err);
    return t;
  }();
  return p;
}

inline const zipperf::Payload& random_bytes() {
  static zipperf::Payload p = zipperf::Payload::random(8 << 20, 0xC0FFEE);
  return p;
}

// A two-process run of the real plugin with the given settings (ZIPNET_TIMEOUT kept short so a
// broken plugin fails the test quickly instead of hanging it).
inline zipperf::RunConfig config(zipperf::Abi abi, bool compress) {
  zipperf::RunConfig cfg;
  cfg.plugin_path = plugin_path();
  cfg.abi = abi;
  cfg.env = {{"ZIPNET_COMPRESS", compress ? "1" : "0"}, {"ZIPNET_TIMEOUT", "10"}};
  cfg.iters = 64;
  cfg.warmup = 0;
  cfg.timeout_s = 40;
  return cfg;
}

inline const char* abi_name(zipperf::Abi abi) { return abi == zipperf::Abi::V11 ? "v11" : "v12"; }

}  // namespace plugin_test
