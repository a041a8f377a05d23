// The bytes zipnet's TCP transport exchanges before and around data: the connect handle (shipped
// by NCCL out of band), the per-stream hello, and the per-sub-chunk header. Pure functions:
// bytes in, a struct or an error out, no sockets, so they can be unit-tested and fuzzed.
// docs/design.md ("Wire protocol over TCP") describes the layouts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace zipnet::tcp {

inline constexpr uint32_t kHandleMagic = 0x54454E5A;  // bytes "ZNET"
inline constexpr uint32_t kHelloMagic = 0x4C45485A;   // bytes "ZHEL"
inline constexpr uint32_t kChunkMagic = 0x4B48435A;   // bytes "ZCHK"
// Wire version 4: frames of docs/format.md version 3 (two rANS streams in blocks of more than
// 8192 symbols, length-coded final states). Raw sub-chunks carry a checksum of their payload
// (since version 3). A peer of any other version is refused at connect/accept.
inline constexpr uint16_t kWireVersion = 4;
inline constexpr uint16_t kCapCodec = 1u << 0;        // peer decodes the codec frames of its wire version
inline constexpr uint16_t kMaxStreams = 16;
inline constexpr uint32_t kMaxSubchunkBytes = 16u << 20;

enum class ParseError : uint8_t { none, truncated, bad_magic, bad_version, bad_checksum, bad_field };
const char* to_string(ParseError e);

// ---- connect handle (inside NCCL's 128-byte handle; 48 bytes) ----
struct HandleInfo {
  uint16_t wire_version = kWireVersion;
  uint16_t caps = kCapCodec;
  uint64_t token = 0;      // random per listen: only a peer holding the handle may connect
  uint16_t family = 0;     // AF_INET or AF_INET6
  uint16_t port = 0;       // host order
  uint8_t addr[16] = {};   // IPv4 in the first 4 bytes
  uint32_t scope_id = 0;   // IPv6 link-local scope
};
inline constexpr size_t kHandleSize = 48;
void encode_handle(const HandleInfo& h, uint8_t out[kHandleSize]);
// On bad_version, *peer_version holds the version the bytes claim (for "ours 1, theirs 2").
ParseError parse_handle(const uint8_t* p, size_t n, HandleInfo* out, uint16_t* peer_version);

// ---- hello: the first bytes on every stream, sender -> receiver (40 bytes) ----
struct Hello {
  uint16_t wire_version = kWireVersion;
  uint16_t caps = kCapCodec;
  uint64_t token = 0;      // copied from the handle
  uint64_t conn_id = 0;    // random per connection: groups the streams of one connection
  uint16_t stream = 0;     // index of this stream
  uint16_t nstreams = 0;   // streams in the connection, 1..kMaxStreams
  uint32_t subchunk_bytes = 0;  // sender's sub-chunk size (bounds every chunk's original length)
};
inline constexpr size_t kHelloSize = 40;
void encode_hello(const Hello& h, uint8_t out[kHelloSize]);
ParseError parse_hello(const uint8_t* p, size_t n, Hello* out, uint16_t* peer_version);

// ---- chunk header: precedes every sub-chunk on a stream (56 bytes) ----
inline constexpr uint16_t kChunkFrame = 1u << 0;  // payload is a codec frame (else raw bytes)
struct ChunkHeader {
  uint16_t flags = 0;
  uint64_t seq = 0;         // message number on this connection (0, 1, 2, ...)
  uint64_t msg_size = 0;    // original size of the whole message
  uint64_t offset = 0;      // where this sub-chunk's original bytes start in the message
  uint32_t orig_len = 0;    // original bytes in this sub-chunk
  uint32_t payload_len = 0; // bytes that follow the header
  uint32_t index = 0;       // sub-chunk number in the message
  uint32_t nchunks = 0;     // sub-chunks in the message (>= 1; a 0-byte message has one)
  // Raw payload: raw_payload_check() of its bytes, so corruption on the wire is caught as it is for
  // frames (whose blocks carry their own XXH3). Frame payload: 0.
  uint32_t payload_check = 0;
};
inline constexpr size_t kChunkHeaderSize = 56;
void encode_chunk_header(const ChunkHeader& h, uint8_t out[kChunkHeaderSize]);
// Checks internal consistency: offset + orig_len <= msg_size, index < nchunks, a raw payload is
// exactly orig_len, a frame payload at most max_payload and its payload_check 0. The raw payload's
// check is the receiver's to verify once it has the bytes.
ParseError parse_chunk_header(const uint8_t* p, size_t n, uint32_t max_orig, size_t max_payload,
                              ChunkHeader* out);

// The checksum of a raw sub-chunk's payload: the low 32 bits of XXH3-64 (seed 0).
uint32_t raw_payload_check(const uint8_t* p, size_t n);

}  // namespace zipnet::tcp
