// The CPU codec's SIMD paths this machine can run (portable always; avx2/avx512 when present), so
// the codec fuzzers can check that every path decodes alike and encodes the same bytes.
#pragma once

#include <string_view>
#include <vector>

#include "zipnet/codec.h"

namespace zipnet::fuzz {

inline const std::vector<std::string_view>& cpu_paths() {
  static const std::vector<std::string_view> paths = [] {
    std::vector<std::string_view> v;
    for (std::string_view p : {"portable", "avx2", "avx512"})
      if (codec::set_cpu_path(p)) v.push_back(p);
    codec::set_cpu_path("auto");
    return v;
  }();
  return paths;
}

}  // namespace zipnet::fuzz
