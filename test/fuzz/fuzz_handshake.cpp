// libFuzzer target: the TCP transport's parsers of untrusted bytes (transport/tcp/handshake.h): the
// connect handle, the per-stream hello and the per-sub-chunk header. Any process can connect to the
// listen port and send anything, so these must reject garbage cleanly.
// Input: [selector][bytes]. Selector bits 0-1 pick the parser; bit 2 re-seals the trailing checksum
// (and magic) first so mutations reach the field checks behind it; for chunk headers the next 8 bytes
// give max_orig and max_payload. Properties: a parsed result satisfies every documented limit, and
// re-encoding it parses back to the same fields.
#include <cstdint>
#include <cstring>
#include <memory>

#include <xxhash.h>

#include "fuzz_check.h"
#include "transport/tcp/handshake.h"

namespace tcp = zipnet::tcp;

namespace {

uint32_t load32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
void store32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}

void reseal(uint8_t* p, size_t n, size_t size, uint32_t magic) {
  if (n < size) return;
  store32(p, magic);
  store32(p + size - 4, uint32_t(XXH3_64bits(p, size - 4)));
}

void fuzz_handle(const uint8_t* p, size_t n) {
  tcp::HandleInfo h;
  uint16_t peer_version = tcp::kWireVersion;
  const tcp::ParseError e = tcp::parse_handle(p, n, &h, &peer_version);
  if (e == tcp::ParseError::bad_version) FUZZ_CHECK(peer_version != tcp::kWireVersion);
  if (e != tcp::ParseError::none) return;
  FUZZ_CHECK(n >= tcp::kHandleSize);
  FUZZ_CHECK(h.wire_version == tcp::kWireVersion);
  FUZZ_CHECK(h.family == 2 || h.family == 10);
  FUZZ_CHECK(h.port != 0);
  uint8_t again[tcp::kHandleSize];
  tcp::encode_handle(h, again);
  tcp::HandleInfo h2;
  FUZZ_CHECK(tcp::parse_handle(again, sizeof again, &h2, nullptr) == tcp::ParseError::none);
  FUZZ_CHECK(h2.caps == h.caps && h2.token == h.token && h2.family == h.family && h2.port == h.port &&
             std::memcmp(h2.addr, h.addr, 16) == 0 && h2.scope_id == h.scope_id);
}

void fuzz_hello(const uint8_t* p, size_t n) {
  tcp::Hello h;
  uint16_t peer_version = tcp::kWireVersion;
  const tcp::ParseError e = tcp::parse_hello(p, n, &h, &peer_version);
  if (e == tcp::ParseError::bad_version) FUZZ_CHECK(peer_version != tcp::kWireVersion);
  if (e != tcp::ParseError::none) return;
  FUZZ_CHECK(h.nstreams >= 1 && h.nstreams <= tcp::kMaxStreams && h.stream < h.nstreams);
  FUZZ_CHECK(h.subchunk_bytes >= 4096 && h.subchunk_bytes <= tcp::kMaxSubchunkBytes);
  uint8_t again[tcp::kHelloSize];
  tcp::encode_hello(h, again);
  tcp::Hello h2;
  FUZZ_CHECK(tcp::parse_hello(again, sizeof again, &h2, nullptr) == tcp::ParseError::none);
  FUZZ_CHECK(h2.caps == h.caps && h2.token == h.token && h2.conn_id == h.conn_id && h2.stream == h.stream &&
             h2.nstreams == h.nstreams && h2.subchunk_bytes == h.subchunk_bytes);
}

void fuzz_chunk(const uint8_t* p, size_t n, uint32_t max_orig, size_t max_payload) {
  tcp::ChunkHeader h;
  if (tcp::parse_chunk_header(p, n, max_orig, max_payload, &h) != tcp::ParseError::none) return;
  // The limits the receiver relies on before it touches the user's buffer.
  FUZZ_CHECK(h.nchunks >= 1 && h.index < h.nchunks);
  FUZZ_CHECK(h.orig_len <= max_orig);
  FUZZ_CHECK(h.offset <= h.msg_size && h.orig_len <= h.msg_size - h.offset);
  if (h.flags & tcp::kChunkFrame)
    FUZZ_CHECK(h.payload_len > 0 && h.payload_len <= max_payload && h.payload_check == 0);
  else
    FUZZ_CHECK(h.payload_len == h.orig_len);
  uint8_t again[tcp::kChunkHeaderSize];
  tcp::encode_chunk_header(h, again);
  tcp::ChunkHeader h2;
  FUZZ_CHECK(tcp::parse_chunk_header(again, sizeof again, max_orig, max_payload, &h2) == tcp::ParseError::none);
  FUZZ_CHECK(h2.flags == h.flags && h2.seq == h.seq && h2.msg_size == h.msg_size && h2.offset == h.offset &&
             h2.orig_len == h.orig_len && h2.payload_len == h.payload_len && h2.index == h.index &&
             h2.nchunks == h.nchunks && h2.payload_check == h.payload_check);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const unsigned which = data[0] & 3;
  const bool seal = (data[0] & 4) != 0;
  data += 1, size -= 1;
  uint32_t max_orig = 128u << 10;
  size_t max_payload = size_t(max_orig) + 4096;
  if (which >= 2) {
    if (size < 8) return 0;
    max_orig = load32(data);
    max_payload = load32(data + 4);
    data += 8, size -= 8;
  }
  // An exactly sized heap copy, so a read past the end is an ASan report.
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(buf.get(), data, size);
  switch (which) {
    case 0:
      if (seal) reseal(buf.get(), size, tcp::kHandleSize, tcp::kHandleMagic);
      fuzz_handle(buf.get(), size);
      break;
    case 1:
      if (seal) reseal(buf.get(), size, tcp::kHelloSize, tcp::kHelloMagic);
      fuzz_hello(buf.get(), size);
      break;
    default:
      if (seal) reseal(buf.get(), size, tcp::kChunkHeaderSize, tcp::kChunkMagic);
      fuzz_chunk(buf.get(), size, max_orig, max_payload);
      break;
  }
  return 0;
}
