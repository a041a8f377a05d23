#include "plugin/pipeline/stats.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "plugin/log.h"

namespace zipnet::pipeline {

std::string CommStats::json(const char* kind, const std::string& peer) const {
  uint64_t in = bytes_in.load(), out = bytes_out.load();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"comm\":\"%s\",\"pid\":%d,\"peer\":\"%s\",\"messages\":%" PRIu64
                ",\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64 ",\"ratio\":%.4f"
                ",\"codec_ms\":%.3f,\"chunks_compressed\":%" PRIu64 ",\"chunks_raw\":%" PRIu64
                ",\"raw_fallbacks\":%" PRIu64 "}\n",
                kind, int(getpid()), peer.c_str(), messages.load(), in, out,
                in ? double(out) / double(in) : 1.0, double(codec_ns.load()) / 1e6,
                chunks_compressed.load(), chunks_raw.load(), raw_fallbacks.load());
  return buf;
}

void CommStats::report(const char* kind, const std::string& peer, const std::string& stats_file) const {
  uint64_t in = bytes_in.load(), out = bytes_out.load();
  ZN_INFO(NCCL_NET,
          "%s comm %s closed: %" PRIu64 " messages, %" PRIu64 " bytes in, %" PRIu64
          " bytes out, ratio %.3f, codec %.1f ms, %" PRIu64 " chunks compressed, %" PRIu64
          " raw, %" PRIu64 " raw fallbacks",
          kind, peer.c_str(), messages.load(), in, out, in ? double(out) / double(in) : 1.0,
          double(codec_ns.load()) / 1e6, chunks_compressed.load(), chunks_raw.load(),
          raw_fallbacks.load());
  if (stats_file.empty()) return;
  std::string line = json(kind, peer);
  // O_APPEND + one write per line: lines from several comms and processes do not interleave.
  int fd = ::open(stats_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != ssize_t(line.size()))
    ZN_WARN(NCCL_NET, "cannot append stats to ZIPNET_STATS_FILE=%s: %s", stats_file.c_str(),
            std::strerror(errno));
  if (fd >= 0) ::close(fd);
}

}  // namespace zipnet::pipeline
