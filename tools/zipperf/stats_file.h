// Reads the compression ratio of a run from the plugin's ZIPNET_STATS_FILE (JSON lines, one per
// closed comm; see docs/params.md): total original bytes over total wire bytes of the send comms.
#pragma once

#include <optional>
#include <string>

namespace zipperf {

// nullopt when the file is missing, empty, or has no send-side byte counts.
std::optional<double> send_ratio_from_stats_file(const std::string& path);

}  // namespace zipperf
