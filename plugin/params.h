// Typed ZIPNET_* parameters, read once at the first init (see params_table.h for the list).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/params_table.h"

namespace zipnet::params {

// ---- value types: each parses a string (false + message on error) and prints a value ----
struct BoolT {
  using value_type = bool;
  static bool parse(std::string_view s, value_type& v, std::string& err);
  static std::string show(value_type v);
};
template <int64_t Lo, int64_t Hi>
struct IntT {
  using value_type = int64_t;
  static bool parse(std::string_view s, value_type& v, std::string& err);
  static std::string show(value_type v) { return std::to_string(v); }
};
template <uint64_t Lo, uint64_t Hi, uint64_t Multiple>
struct BytesT_ {
  using value_type = uint64_t;
  static bool parse(std::string_view s, value_type& v, std::string& err);
  static std::string show(value_type v);
};
struct StringT {
  using value_type = std::string;
  static bool parse(std::string_view s, value_type& v, std::string& err);
  static std::string show(const value_type& v) { return v; }
};
enum class Dtype : uint8_t { auto_detect, bf16, fp16, fp32, opaque };
struct DtypeT {
  using value_type = Dtype;
  static bool parse(std::string_view s, value_type& v, std::string& err);
  static std::string show(value_type v);
};
// Bit i allows codec Mode(i): 0 raw, 1 planes, 2 window, 3 rans.
struct ModeMaskT {
  using value_type = uint8_t;
  static bool parse(std::string_view s, value_type& v, std::string& err);
  static std::string show(value_type v);
};
struct PortRange {
  uint16_t lo = 0, hi = 0;  // 0-0: any port
};
struct PortRangeT {
  using value_type = PortRange;
  static bool parse(std::string_view s, value_type& v, std::string& err);
  static std::string show(value_type v);
};
enum class Ptr : uint8_t { host };
struct PtrT {
  using value_type = Ptr;
  static bool parse(std::string_view s, value_type& v, std::string& err);
  static std::string show(value_type v);
};
// Test-only fault injection: a bit per fault, so checking "is fault X on" is one AND.
enum Fault : uint32_t {
  kFaultRegMrFail = 1u << 0,
  kFaultStagingExhausted = 1u << 1,
  kFaultCorruptFrame = 1u << 2,
  kFaultTruncateFrame = 1u << 3,
  kFaultWrongVersion = 1u << 4,
  kFaultReset = 1u << 5,
  kFaultCorruptRaw = 1u << 6,
  kFaultShortFrame = 1u << 7,
};
struct FaultsT {
  using value_type = uint32_t;
  static bool parse(std::string_view s, value_type& v, std::string& err);
  static std::string show(value_type v);
};

using BytesT = BytesT_<0, (1ull << 40), 1>;
using SubchunkT = BytesT_<4096, (16ull << 20), 4096>;
using ThreadsT = IntT<0, 64>;
using StreamsT = IntT<1, 16>;
using TimeoutT = IntT<1, 86400>;

// ---- the parameter set ----
struct Params {
#define ZN_DECLARE_FIELD(NAME, TYPE, DEFAULT, DOC) TYPE::value_type NAME{};
  ZIPNET_PARAM_TABLE(ZN_DECLARE_FIELD)
#undef ZN_DECLARE_FIELD
  // "ZIPNET_X=value" for every variable whose value differs from the default (for the banner).
  std::vector<std::string> non_default;
};

using EnvLookup = const char* (*)(const char* name);

// Fills p from the environment (defaults for unset variables). Returns false with one message per
// bad variable in err ("ZIPNET_STREAMS='0': must be in 1..16; ...").
bool load(Params& p, std::string& err, EnvLookup env = nullptr);

// Defaults only (no environment).
Params defaults();

// Markdown table of every variable (docs/params.md is this text).
std::string markdown_table();

}  // namespace zipnet::params
