// The seam between the pipeline (plugin/pipeline) and a network transport.
//
// A transport gives the pipeline, per connection, a Link: `streams()` independent, ordered,
// reliable byte streams (TCP: one socket each). The pipeline drives each stream from its own
// thread with blocking read/write calls, so a transport only moves bytes; framing, compression
// and request matching stay in the pipeline. Listen/connect/accept are non-blocking state machines,
// exactly as NCCL needs: poll_* returns `pending` until the connection is ready.
//
// tcp/ implements it now. ib/ (verbs) goes behind the same seam later; see ib/README.md.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace zipnet::transport {

// Bytes of NCCL's 128-byte connect handle a transport may use; the rest belongs to the plugin.
inline constexpr size_t kHandleBytes = 96;

struct IoStatus {
  enum Code : uint8_t { ok, closed, reset, timeout, stopped, error } code = ok;
  std::string what;  // empty when ok
  bool waited = false;  // write: had to wait for socket space (the link was the bottleneck)
  explicit operator bool() const { return code == ok; }
};

class Link {
 public:
  virtual ~Link() = default;
  virtual int streams() const = 0;
  // Blocks until all bytes are written, the peer stops reading for the transport's timeout
  // (timeout), the connection fails, or shutdown() is called (stopped).
  virtual IoStatus write(int stream, const iovec* iov, int iovcnt) = 0;
  // Blocks until len bytes are read. An idle stream may wait forever (NCCL connections idle
  // between collectives; a dead peer is still detected by keepalive); with bounded=true (the
  // middle of a frame) the wait is bounded by the transport's timeout.
  virtual IoStatus read(int stream, void* buf, size_t len, bool bounded) = 0;
  // Wakes every blocked read/write (they return `stopped`). Idempotent, thread-safe.
  virtual void shutdown() = 0;
  // Test-only: breaks the connection abruptly (RST), as a crashed peer would.
  virtual void inject_reset() = 0;
  // Bytes written but not yet received by the peer (TCP: unacknowledged, SIOCOUTQ summed over
  // the streams); 0 where unknown. Thread-safe; a system call per stream.
  virtual uint64_t queued_bytes() const = 0;
  virtual std::string describe() const = 0;
  // The sub-chunk size the sending side announced in its hello (receiver side; 0 on the sender).
  virtual uint32_t peer_subchunk_bytes() const = 0;
};

enum class Poll : uint8_t { pending, ready, failed };

class Listener {
 public:
  virtual ~Listener() = default;
  // Non-blocking. ready: *out is the connection. failed: err says why (a peer of another wire
  // version, or no valid peer within the timeout). Stray clients are rejected and logged, and the
  // listener keeps waiting.
  virtual Poll poll_accept(std::unique_ptr<Link>* out, std::string* err) = 0;
};

class Connector {
 public:
  virtual ~Connector() = default;
  virtual Poll poll_connect(std::unique_ptr<Link>* out, std::string* err) = 0;
};

struct DeviceInfo {
  std::string name;     // interface name, e.g. "eth0"
  std::string address;  // printable address
  int speed_mbps = 10000;
};

struct Config {
  int streams = 2;                 // streams per connection this side opens
  int timeout_s = 30;              // bound on every wait on a peer
  uint16_t port_lo = 0, port_hi = 0;
  std::string ifname;              // NCCL syntax
  uint32_t subchunk_bytes = 128u << 10;  // announced to the receiver in the hello
  bool fault_wrong_version = false;  // test only: advertise another wire version
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual int device_count() const = 0;
  virtual const DeviceInfo& device(int dev) const = 0;
  // Writes at most kHandleBytes into handle. Returns nullptr with err set on failure.
  virtual std::unique_ptr<Listener> listen(int dev, void* handle, std::string* err) = 0;
  // handle: the peer's listen handle. Fails at once (err) for a handle of another wire version.
  virtual std::unique_ptr<Connector> connect(int dev, const void* handle, std::string* err) = 0;
};

// Builds the TCP transport: discovers interfaces (cfg.ifname). nullptr + err if none is usable.
std::unique_ptr<Transport> make_tcp_transport(const Config& cfg, std::string* err);

}  // namespace zipnet::transport
