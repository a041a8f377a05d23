#include "inputs.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

namespace zipbench {

using zipnet::codec::Dtype;

std::optional<Dtype> parse_dtype(const std::string& s) {
  if (s == "bf16") return Dtype::bf16;
  if (s == "fp16") return Dtype::fp16;
  if (s == "fp32") return Dtype::fp32;
  if (s == "opaque" || s == "bytes") return Dtype::opaque;
  return std::nullopt;
}

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp32: return "fp32";
    default: return "opaque";
  }
}

Dtype dtype_from_suffix(const std::string& path) {
  auto dot = path.rfind('.');
  if (dot == std::string::npos) return Dtype::opaque;
  return parse_dtype(path.substr(dot + 1)).value_or(Dtype::opaque);
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::vector<uint8_t> data(size_t(f.tellg()));
  f.seekg(0);
  if (!f.read(reinterpret_cast<char*>(data.data()), std::streamsize(data.size())))
    throw std::runtime_error("cannot read " + path);
  return data;
}

namespace {

void store_float(std::vector<uint8_t>& out, size_t i, float v, Dtype d) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if (d == Dtype::fp32) {
    std::memcpy(&out[4 * i], &u, 4);
  } else if (d == Dtype::bf16) {
    uint16_t h = uint16_t(u >> 16);
    std::memcpy(&out[2 * i], &h, 2);
  } else {  // fp16 by conversion (round toward zero is fine for test data)
    uint32_t sign = (u >> 16) & 0x8000;
    int32_t e = int32_t((u >> 23) & 0xFF) - 127 + 15;
    uint32_t m = (u >> 13) & 0x3FF;
    uint16_t h;
    if (e <= 0) h = uint16_t(sign);  // flush tiny values to zero
    else if (e >= 31) h = uint16_t(sign | 0x7BFF);
    else h = uint16_t(sign | (uint32_t(e) << 10) | m);
    std::memcpy(&out[2 * i], &h, 2);
  }
}

}  // namespace

Input synthetic(const std::string& kind, size_t bytes, std::optional<Dtype> dtype, uint64_t seed) {
  Input in;
  in.name = "synthetic:" + kind;
  std::mt19937_64 rng(seed);
  if (kind == "random") {
    in.dtype = Dtype::opaque;
    in.data.resize(bytes);
    for (auto& b : in.data) b = uint8_t(rng() >> 56);
    return in;
  }
  if (kind != "gaussian" && kind != "lognormal")
    throw std::runtime_error("unknown synthetic set '" + kind + "' (gaussian, lognormal, random)");
  in.dtype = dtype.value_or(Dtype::bf16);
  if (in.dtype == Dtype::opaque) in.dtype = Dtype::bf16;
  const size_t es = in.dtype == Dtype::fp32 ? 4 : 2;
  in.data.assign(bytes, 0);
  std::normal_distribution<float> nd(0.0f, kind == "gaussian" ? 1.0f : 2.0f);
  for (size_t i = 0; i < bytes / es; ++i) {
    float v = nd(rng);
    if (kind == "lognormal") v = std::exp(v) * ((rng() & 1) ? 1.0f : -1.0f) * 1e-3f;
    store_float(in.data, i, v, in.dtype);
  }
  return in;
}

}  // namespace zipbench
