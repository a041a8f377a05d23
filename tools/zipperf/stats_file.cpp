#include "stats_file.h"

#include <fstream>

#include <nlohmann/json.hpp>

namespace zipperf {

std::optional<double> send_ratio_from_stats_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  double original = 0, wire = 0;
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    // Only the sending side's counts describe what crossed the wire once.
    const std::string side = j.value("comm", std::string("send"));  // "send" or "recv"
    if (side != "send" && side != "sender") continue;
    if (j.contains("bytes_in") && j.contains("bytes_out")) {
      original += j["bytes_in"].get<double>();
      wire += j["bytes_out"].get<double>();
    }
  }
  if (original <= 0 || wire <= 0) return std::nullopt;
  return original / wire;
}

}  // namespace zipperf
