#include "transport/tcp/handshake.h"

#include <cstring>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace zipnet::tcp {
namespace {

// Little-endian field access, independent of host byte order and alignment.
struct Writer {
  uint8_t* p;
  size_t at = 0;
  template <class T> void put(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) p[at++] = uint8_t(uint64_t(v) >> (8 * i));
  }
  void bytes(const uint8_t* b, size_t n) { std::memcpy(p + at, b, n); at += n; }
};
struct Reader {
  const uint8_t* p;
  size_t at = 0;
  template <class T> T get() {
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= uint64_t(p[at++]) << (8 * i);
    return T(v);
  }
  void bytes(uint8_t* b, size_t n) { std::memcpy(b, p + at, n); at += n; }
};

uint32_t check32(const uint8_t* p, size_t n) { return uint32_t(XXH3_64bits(p, n)); }

// Common prefix of handle and hello: magic, version, then a checksum in the last 4 bytes.
ParseError check_envelope(const uint8_t* p, size_t n, size_t size, uint32_t magic,
                          uint16_t* peer_version) {
  if (n < size) return ParseError::truncated;
  Reader r{p};
  if (r.get<uint32_t>() != magic) return ParseError::bad_magic;
  // The version is checked before the checksum: a future version may change the layout, and the
  // user must hear "version mismatch", not "bad checksum".
  uint16_t version = r.get<uint16_t>();
  if (peer_version) *peer_version = version;
  if (version != kWireVersion) return ParseError::bad_version;
  Reader c{p, size - 4};
  if (c.get<uint32_t>() != check32(p, size - 4)) return ParseError::bad_checksum;
  return ParseError::none;
}

}  // namespace

const char* to_string(ParseError e) {
  switch (e) {
    case ParseError::none: return "ok";
    case ParseError::truncated: return "truncated";
    case ParseError::bad_magic: return "bad magic (not a zipnet peer)";
    case ParseError::bad_version: return "wire version mismatch";
    case ParseError::bad_checksum: return "checksum mismatch";
    case ParseError::bad_field: return "field out of range";
  }
  return "?";
}

void encode_handle(const HandleInfo& h, uint8_t out[kHandleSize]) {
  std::memset(out, 0, kHandleSize);
  Writer w{out};
  w.put<uint32_t>(kHandleMagic);
  w.put<uint16_t>(h.wire_version);
  w.put<uint16_t>(h.caps);
  w.put<uint64_t>(h.token);
  w.put<uint16_t>(h.family);
  w.put<uint16_t>(h.port);
  w.bytes(h.addr, 16);
  w.put<uint32_t>(h.scope_id);
  w.at = kHandleSize - 4;
  w.put<uint32_t>(check32(out, kHandleSize - 4));
}

ParseError parse_handle(const uint8_t* p, size_t n, HandleInfo* out, uint16_t* peer_version) {
  ParseError e = check_envelope(p, n, kHandleSize, kHandleMagic, peer_version);
  if (e != ParseError::none) return e;
  Reader r{p, 4};
  HandleInfo h;
  h.wire_version = r.get<uint16_t>();
  h.caps = r.get<uint16_t>();
  h.token = r.get<uint64_t>();
  h.family = r.get<uint16_t>();
  h.port = r.get<uint16_t>();
  r.bytes(h.addr, 16);
  h.scope_id = r.get<uint32_t>();
  if ((h.family != 2 /*AF_INET*/ && h.family != 10 /*AF_INET6*/) || h.port == 0)
    return ParseError::bad_field;
  *out = h;
  return ParseError::none;
}

void encode_hello(const Hello& h, uint8_t out[kHelloSize]) {
  std::memset(out, 0, kHelloSize);
  Writer w{out};
  w.put<uint32_t>(kHelloMagic);
  w.put<uint16_t>(h.wire_version);
  w.put<uint16_t>(h.caps);
  w.put<uint64_t>(h.token);
  w.put<uint64_t>(h.conn_id);
  w.put<uint16_t>(h.stream);
  w.put<uint16_t>(h.nstreams);
  w.put<uint32_t>(h.subchunk_bytes);
  w.at = kHelloSize - 4;
  w.put<uint32_t>(check32(out, kHelloSize - 4));
}

ParseError parse_hello(const uint8_t* p, size_t n, Hello* out, uint16_t* peer_version) {
  ParseError e = check_envelope(p, n, kHelloSize, kHelloMagic, peer_version);
  if (e != ParseError::none) return e;
  Reader r{p, 4};
  Hello h;
  h.wire_version = r.get<uint16_t>();
  h.caps = r.get<uint16_t>();
  h.token = r.get<uint64_t>();
  h.conn_id = r.get<uint64_t>();
  h.stream = r.get<uint16_t>();
  h.nstreams = r.get<uint16_t>();
  h.subchunk_bytes = r.get<uint32_t>();
  if (h.nstreams < 1 || h.nstreams > kMaxStreams || h.stream >= h.nstreams ||
      h.subchunk_bytes < 4096 || h.subchunk_bytes > kMaxSubchunkBytes)
    return ParseError::bad_field;
  *out = h;
  return ParseError::none;
}

void encode_chunk_header(const ChunkHeader& h, uint8_t out[kChunkHeaderSize]) {
  std::memset(out, 0, kChunkHeaderSize);
  Writer w{out};
  w.put<uint32_t>(kChunkMagic);
  w.put<uint16_t>(h.flags);
  w.put<uint16_t>(0);
  w.put<uint64_t>(h.seq);
  w.put<uint64_t>(h.msg_size);
  w.put<uint64_t>(h.offset);
  w.put<uint32_t>(h.orig_len);
  w.put<uint32_t>(h.payload_len);
  w.put<uint32_t>(h.index);
  w.put<uint32_t>(h.nchunks);
  w.put<uint32_t>(h.payload_check);
  w.put<uint32_t>(check32(out, kChunkHeaderSize - 4));
}

ParseError parse_chunk_header(const uint8_t* p, size_t n, uint32_t max_orig, size_t max_payload,
                              ChunkHeader* out) {
  if (n < kChunkHeaderSize) return ParseError::truncated;
  Reader r{p};
  if (r.get<uint32_t>() != kChunkMagic) return ParseError::bad_magic;
  Reader c{p, kChunkHeaderSize - 4};
  if (c.get<uint32_t>() != check32(p, kChunkHeaderSize - 4)) return ParseError::bad_checksum;
  ChunkHeader h;
  h.flags = r.get<uint16_t>();
  uint16_t reserved = r.get<uint16_t>();
  h.seq = r.get<uint64_t>();
  h.msg_size = r.get<uint64_t>();
  h.offset = r.get<uint64_t>();
  h.orig_len = r.get<uint32_t>();
  h.payload_len = r.get<uint32_t>();
  h.index = r.get<uint32_t>();
  h.nchunks = r.get<uint32_t>();
  h.payload_check = r.get<uint32_t>();
  bool raw = !(h.flags & kChunkFrame);
  if (reserved != 0 || (h.flags & ~kChunkFrame) || h.nchunks == 0 || h.index >= h.nchunks ||
      h.orig_len > max_orig || h.offset > h.msg_size || h.orig_len > h.msg_size - h.offset ||
      (raw && h.payload_len != h.orig_len) || (!raw && h.payload_len > max_payload) ||
      (!raw && h.payload_len == 0) || (!raw && h.payload_check != 0))
    return ParseError::bad_field;
  *out = h;
  return ParseError::none;
}

uint32_t raw_payload_check(const uint8_t* p, size_t n) { return check32(p, n); }

}  // namespace zipnet::tcp
