// zipbench inputs: raw tensor files (dtype from the suffix or --dtype) and synthetic sets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zipnet/codec.h"

namespace zipbench {

struct Input {
  std::string name;                    // file path or "synthetic:<kind>"
  zipnet::codec::Dtype dtype;          // what the data is (for the ideal ratio and the report)
  std::vector<uint8_t> data;
};

std::optional<zipnet::codec::Dtype> parse_dtype(const std::string& s);
const char* dtype_name(zipnet::codec::Dtype d);
// Dtype from a file name suffix (.bf16/.fp16/.fp32), opaque otherwise.
zipnet::codec::Dtype dtype_from_suffix(const std::string& path);
// Reads a whole file; throws std::runtime_error with the reason when it cannot.
std::vector<uint8_t> read_file(const std::string& path);
// kind: gaussian | lognormal (as `dtype`, bf16 by default) | random (bytes). Throws on an unknown kind.
Input synthetic(const std::string& kind, size_t bytes, std::optional<zipnet::codec::Dtype> dtype, uint64_t seed);

}  // namespace zipbench
