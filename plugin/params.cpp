#include "plugin/params.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace zipnet::params {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits on ',', '+' or '|' and trims each item; empty items are skipped.
std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ',' || s[i] == '+' || s[i] == '|') {
      std::string_view item = trim(s.substr(start, i - start));
      if (!item.empty()) out.push_back(lower(item));
      start = i + 1;
    }
  }
  return out;
}

bool parse_u64(std::string_view s, uint64_t& v) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

constexpr const char* kModeNames[4] = {"raw", "planes", "window", "rans"};
constexpr const char* kFaultNames[] = {"regmr_fail",     "staging_exhausted", "corrupt_frame",
                                       "truncate_frame", "wrong_version",     "reset",
                                       "corrupt_raw",    "short_frame"};

}  // namespace

bool BoolT::parse(std::string_view s, value_type& v, std::string& err) {
  std::string l = lower(trim(s));
  if (l == "1" || l == "on" || l == "yes" || l == "true") { v = true; return true; }
  if (l == "0" || l == "off" || l == "no" || l == "false") { v = false; return true; }
  err = "expected 0/1 (or on/off, yes/no, true/false)";
  return false;
}
std::string BoolT::show(value_type v) { return v ? "1" : "0"; }

template <int64_t Lo, int64_t Hi>
bool IntT<Lo, Hi>::parse(std::string_view s, value_type& v, std::string& err) {
  s = trim(s);
  int64_t x = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || x < Lo || x > Hi) {
    err = "expected an integer in " + std::to_string(Lo) + ".." + std::to_string(Hi);
    return false;
  }
  v = x;
  return true;
}

template <uint64_t Lo, uint64_t Hi, uint64_t Multiple>
bool BytesT_<Lo, Hi, Multiple>::parse(std::string_view s, value_type& v, std::string& err) {
  std::string l = lower(trim(s));
  uint64_t scale = 1;
  // Accept 128K, 128k, 128KiB, 128KB (all binary), 1M, 1G.
  for (const char* suffix : {"kib", "kb", "k"})
    if (l.size() > strlen(suffix) && l.ends_with(suffix)) { scale = 1ull << 10; l.resize(l.size() - strlen(suffix)); break; }
  if (scale == 1)
    for (const char* suffix : {"mib", "mb", "m"})
      if (l.size() > strlen(suffix) && l.ends_with(suffix)) { scale = 1ull << 20; l.resize(l.size() - strlen(suffix)); break; }
  if (scale == 1)
    for (const char* suffix : {"gib", "gb", "g"})
      if (l.size() > strlen(suffix) && l.ends_with(suffix)) { scale = 1ull << 30; l.resize(l.size() - strlen(suffix)); break; }
  uint64_t x = 0;
  if (!parse_u64(l, x) || (x != 0 && scale > ~0ull / x) || x * scale < Lo || x * scale > Hi ||
      (x * scale) % Multiple != 0) {
    err = "expected a byte count in " + show(Lo) + ".." + show(Hi);
    if (Multiple > 1) err += ", a multiple of " + show(Multiple);
    err += " (suffixes K, M, G)";
    return false;
  }
  v = x * scale;
  return true;
}
template <uint64_t Lo, uint64_t Hi, uint64_t Multiple>
std::string BytesT_<Lo, Hi, Multiple>::show(value_type v) {
  if (v != 0 && v % (1ull << 30) == 0) return std::to_string(v >> 30) + "G";
  if (v != 0 && v % (1ull << 20) == 0) return std::to_string(v >> 20) + "M";
  if (v != 0 && v % (1ull << 10) == 0) return std::to_string(v >> 10) + "K";
  return std::to_string(v);
}

bool StringT::parse(std::string_view s, value_type& v, std::string&) {
  v = std::string(trim(s));
  return true;
}

bool DtypeT::parse(std::string_view s, value_type& v, std::string& err) {
  std::string l = lower(trim(s));
  if (l == "auto") v = Dtype::auto_detect;
  else if (l == "bf16" || l == "bfloat16") v = Dtype::bf16;
  else if (l == "fp16" || l == "half") v = Dtype::fp16;
  else if (l == "fp32" || l == "float") v = Dtype::fp32;
  else if (l == "opaque") v = Dtype::opaque;
  else { err = "expected auto|bf16|fp16|fp32|opaque"; return false; }
  return true;
}
std::string DtypeT::show(value_type v) {
  switch (v) {
    case Dtype::auto_detect: return "auto";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp32: return "fp32";
    case Dtype::opaque: return "opaque";
  }
  return "?";
}

bool ModeMaskT::parse(std::string_view s, value_type& v, std::string& err) {
  std::vector<std::string> items = split_list(s);
  if (items.size() == 1 && items[0] == "auto") { v = 0xF; return true; }
  if (items.empty()) { err = "expected auto or a list of raw,planes,window,rans"; return false; }
  v = 1;  // raw is always allowed: it is the fallback that never fails
  for (const std::string& item : items) {
    bool found = false;
    for (unsigned m = 0; m < 4; ++m)
      if (item == kModeNames[m]) { v |= uint8_t(1u << m); found = true; }
    if (!found) { err = "unknown mode '" + item + "' (expected auto or raw,planes,window,rans)"; return false; }
  }
  return true;
}
std::string ModeMaskT::show(value_type v) {
  if ((v & 0xF) == 0xF) return "auto";
  std::string out;
  for (unsigned m = 0; m < 4; ++m)
    if (v & (1u << m)) out.append(out.empty() ? "" : ",").append(kModeNames[m]);
  return out;
}

bool PortRangeT::parse(std::string_view s, value_type& v, std::string& err) {
  s = trim(s);
  if (s.empty()) { v = {}; return true; }
  size_t dash = s.find('-');
  uint64_t lo = 0, hi = 0;
  bool ok = dash != std::string_view::npos && parse_u64(s.substr(0, dash), lo) &&
            parse_u64(s.substr(dash + 1), hi) && lo >= 1 && lo <= hi && hi <= 65535;
  if (!ok) { err = "expected LO-HI with 1 <= LO <= HI <= 65535"; return false; }
  v = {uint16_t(lo), uint16_t(hi)};
  return true;
}
std::string PortRangeT::show(value_type v) {
  return v.lo == 0 ? "" : std::to_string(v.lo) + "-" + std::to_string(v.hi);
}

bool PtrT::parse(std::string_view s, value_type& v, std::string& err) {
  std::string l = lower(trim(s));
  if (l == "host") { v = Ptr::host; return true; }
  err = l == "cuda" ? "cuda is not implemented yet (the GPU data path comes later); use host"
                    : "expected host";
  return false;
}
std::string PtrT::show(value_type) { return "host"; }

bool FaultsT::parse(std::string_view s, value_type& v, std::string& err) {
  v = 0;
  for (const std::string& item : split_list(s)) {
    bool found = false;
    for (unsigned i = 0; i < std::size(kFaultNames); ++i)
      if (item == kFaultNames[i]) { v |= 1u << i; found = true; }
    if (!found) {
      err = "unknown fault '" + item + "'";
      return false;
    }
  }
  return true;
}
std::string FaultsT::show(value_type v) {
  std::string out;
  for (unsigned i = 0; i < std::size(kFaultNames); ++i)
    if (v & (1u << i)) out.append(out.empty() ? "" : ",").append(kFaultNames[i]);
  return out;
}

Params defaults() {
  Params p;
  std::string err;
#define ZN_DEFAULT(NAME, TYPE, DEFAULT, DOC) TYPE::parse(DEFAULT, p.NAME, err);
  ZIPNET_PARAM_TABLE(ZN_DEFAULT)
#undef ZN_DEFAULT
  return p;
}

bool load(Params& p, std::string& err, EnvLookup env) {
  if (!env) env = [](const char* n) -> const char* { return std::getenv(n); };
  p = defaults();
  err.clear();
#define ZN_LOAD(NAME, TYPE, DEFAULT, DOC)                                                     \
  if (const char* raw = env("ZIPNET_" #NAME)) {                                               \
    std::string why;                                                                          \
    if (!TYPE::parse(raw, p.NAME, why)) {                                                     \
      err += std::string(err.empty() ? "" : "; ") + "ZIPNET_" #NAME "='" + raw + "': " + why; \
    } else if (TYPE::show(p.NAME) != TYPE::show(defaults().NAME)) {                           \
      p.non_default.push_back("ZIPNET_" #NAME "=" + TYPE::show(p.NAME));                      \
    }                                                                                         \
  }
  ZIPNET_PARAM_TABLE(ZN_LOAD)
#undef ZN_LOAD
  return err.empty();
}

std::string markdown_table() {
  std::string out = "| variable | default | meaning |\n|---|---|---|\n";
#define ZN_ROW(NAME, TYPE, DEFAULT, DOC)                                                      \
  out += std::string("| `ZIPNET_" #NAME "` | ") + (DEFAULT[0] ? "`" DEFAULT "`" : "(empty)") + \
         " | " + DOC + " |\n";
  ZIPNET_PARAM_TABLE(ZN_ROW)
#undef ZN_ROW
  return out;
}

template struct IntT<0, 64>;
template struct IntT<1, 16>;
template struct IntT<1, 86400>;
template struct BytesT_<0, (1ull << 40), 1>;
template struct BytesT_<4096, (16ull << 20), 4096>;

}  // namespace zipnet::params
