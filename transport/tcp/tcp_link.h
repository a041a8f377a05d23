// A connected set of TCP sockets (one per stream) behind transport::Link.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace zipnet::tcp {

// TCP_NODELAY, keepalive and TCP_USER_TIMEOUT derived from timeout_s, so a peer that vanishes
// without a FIN/RST is still noticed within about timeout_s.
void set_stream_options(int fd, int timeout_s);

class TcpLink final : public transport::Link {
 public:
  TcpLink(std::vector<int> fds, int timeout_s, std::string peer, uint32_t peer_subchunk_bytes = 0);
  ~TcpLink() override;
  int streams() const override { return int(fds_.size()); }
  transport::IoStatus write(int stream, const iovec* iov, int iovcnt) override;
  transport::IoStatus read(int stream, void* buf, size_t len, bool bounded) override;
  void shutdown() override;
  void inject_reset() override;
  uint64_t queued_bytes() const override;
  std::string describe() const override { return peer_; }
  uint32_t peer_subchunk_bytes() const override { return peer_subchunk_bytes_; }

 private:
  transport::IoStatus from_errno(int err, const char* op) const;
  std::vector<int> fds_;
  int timeout_s_;
  std::string peer_;
  uint32_t peer_subchunk_bytes_;
  std::atomic<bool> stopped_{false};
};

}  // namespace zipnet::tcp
