#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "transport/tcp/handshake.h"
#include "transport/tcp/interfaces.h"

using namespace zipnet::tcp;

TEST_CASE("connect handle round-trips and fits NCCL's 128 bytes", "[handshake]") {
  HandleInfo h;
  h.token = 0x1122334455667788ull;
  h.family = 2;
  h.port = 41234;
  h.addr[0] = 127;
  h.addr[3] = 1;
  uint8_t buf[kHandleSize];
  encode_handle(h, buf);
  STATIC_REQUIRE(kHandleSize <= 128);
  HandleInfo back;
  REQUIRE(parse_handle(buf, sizeof buf, &back, nullptr) == ParseError::none);
  CHECK(back.token == h.token);
  CHECK(back.port == 41234);
  CHECK(back.caps == kCapCodec);
  CHECK(std::memcmp(back.addr, h.addr, 16) == 0);
}

TEST_CASE("handle of another wire version reports that version", "[handshake]") {
  HandleInfo h;
  h.family = 2;
  h.port = 1;
  h.wire_version = 7;
  uint8_t buf[kHandleSize];
  encode_handle(h, buf);
  HandleInfo back;
  uint16_t theirs = 0;
  CHECK(parse_handle(buf, sizeof buf, &back, &theirs) == ParseError::bad_version);
  CHECK(theirs == 7);
}

TEST_CASE("damaged handles are rejected, never accepted", "[handshake]") {
  HandleInfo h;
  h.family = 2;
  h.port = 5;
  uint8_t buf[kHandleSize];
  encode_handle(h, buf);
  HandleInfo back;
  CHECK(parse_handle(buf, kHandleSize - 1, &back, nullptr) == ParseError::truncated);
  for (size_t i = 0; i < kHandleSize; ++i) {  // every single-byte flip is caught
    uint8_t bad[kHandleSize];
    std::memcpy(bad, buf, sizeof bad);
    bad[i] ^= 0x40;
    INFO("byte " << i);
    CHECK(parse_handle(bad, sizeof bad, &back, nullptr) != ParseError::none);
  }
  uint8_t zeros[kHandleSize] = {};
  CHECK(parse_handle(zeros, sizeof zeros, &back, nullptr) == ParseError::bad_magic);
}

TEST_CASE("hello round-trips; bad fields and garbage are rejected", "[handshake]") {
  Hello h;
  h.token = 42;
  h.conn_id = 99;
  h.stream = 1;
  h.nstreams = 4;
  h.subchunk_bytes = 128 << 10;
  uint8_t buf[kHelloSize];
  encode_hello(h, buf);
  Hello back;
  REQUIRE(parse_hello(buf, sizeof buf, &back, nullptr) == ParseError::none);
  CHECK(back.conn_id == 99);
  CHECK(back.stream == 1);
  CHECK(back.nstreams == 4);

  h.stream = 4;  // stream index beyond nstreams
  encode_hello(h, buf);
  CHECK(parse_hello(buf, sizeof buf, &back, nullptr) == ParseError::bad_field);
  h.stream = 0;
  h.nstreams = 17;
  encode_hello(h, buf);
  CHECK(parse_hello(buf, sizeof buf, &back, nullptr) == ParseError::bad_field);

  const char* garbage = "GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789abcdef";
  CHECK(parse_hello(reinterpret_cast<const uint8_t*>(garbage), kHelloSize, &back, nullptr) == ParseError::bad_magic);
  h.nstreams = 2;
  h.wire_version = kWireVersion + 1;
  encode_hello(h, buf);
  uint16_t theirs = 0;
  CHECK(parse_hello(buf, sizeof buf, &back, &theirs) == ParseError::bad_version);
  CHECK(theirs == kWireVersion + 1);
}

TEST_CASE("chunk headers are checked for consistency", "[handshake]") {
  ChunkHeader h;
  h.flags = kChunkFrame;
  h.seq = 3;
  h.msg_size = 300000;
  h.offset = 262144;
  h.orig_len = 300000 - 262144;
  h.payload_len = 1000;
  h.index = 2;
  h.nchunks = 3;
  uint8_t buf[kChunkHeaderSize];
  encode_chunk_header(h, buf);
  ChunkHeader back;
  REQUIRE(parse_chunk_header(buf, sizeof buf, 131072, 140000, &back) == ParseError::none);
  CHECK(back.seq == 3);
  CHECK(back.offset == 262144);

  auto reject = [&](ChunkHeader bad) {
    encode_chunk_header(bad, buf);
    return parse_chunk_header(buf, sizeof buf, 131072, 140000, &back);
  };
  ChunkHeader b = h;
  b.orig_len = 40000;  // runs past msg_size
  CHECK(reject(b) == ParseError::bad_field);
  b = h;
  b.index = 3;  // index >= nchunks
  CHECK(reject(b) == ParseError::bad_field);
  b = h;
  b.payload_len = 140001;  // bigger than any frame for this sub-chunk size
  CHECK(reject(b) == ParseError::bad_field);
  b = h;
  b.flags = 0;  // raw: payload must equal orig_len
  CHECK(reject(b) == ParseError::bad_field);
  b = h;
  b.msg_size = 1ull << 40;
  b.orig_len = 200000;  // above the announced sub-chunk size
  CHECK(reject(b) == ParseError::bad_field);
  b = h;
  b.payload_check = 1;  // a frame carries its own checksums; the raw-payload field must be 0
  CHECK(reject(b) == ParseError::bad_field);
  encode_chunk_header(h, buf);
  buf[20] ^= 1;
  CHECK(parse_chunk_header(buf, sizeof buf, 131072, 140000, &back) == ParseError::bad_checksum);
}

TEST_CASE("raw chunk headers carry their payload's checksum", "[handshake]") {
  std::vector<uint8_t> payload(5000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 131 + 7);
  ChunkHeader h;
  h.msg_size = h.orig_len = h.payload_len = uint32_t(payload.size());
  h.nchunks = 1;
  h.payload_check = raw_payload_check(payload.data(), payload.size());
  uint8_t buf[kChunkHeaderSize];
  encode_chunk_header(h, buf);
  ChunkHeader back;
  REQUIRE(parse_chunk_header(buf, sizeof buf, 131072, 140000, &back) == ParseError::none);
  CHECK(back.payload_check == h.payload_check);
  CHECK(raw_payload_check(payload.data(), payload.size()) == back.payload_check);
  // Any single flipped bit changes the check (XXH3's low 32 bits; spot-check every 97th bit).
  for (size_t bit = 0; bit < payload.size() * 8; bit += 97) {
    payload[bit / 8] ^= uint8_t(1u << (bit % 8));
    CHECK(raw_payload_check(payload.data(), payload.size()) != back.payload_check);
    payload[bit / 8] ^= uint8_t(1u << (bit % 8));
  }
}

TEST_CASE("interface lists follow NCCL_SOCKET_IFNAME syntax", "[handshake]") {
  CHECK(ifname_matches("eth", "eth0"));
  CHECK(ifname_matches("ib,eth", "eth1"));
  CHECK_FALSE(ifname_matches("eth", "ens5"));
  CHECK(ifname_matches("=eth0", "eth0"));
  CHECK_FALSE(ifname_matches("=eth0", "eth01"));
  CHECK_FALSE(ifname_matches("^docker,lo", "docker0"));
  CHECK_FALSE(ifname_matches("^docker,lo", "lo"));
  CHECK(ifname_matches("^docker,lo", "eth0"));
  CHECK_FALSE(ifname_matches("^=eth0", "eth0"));
  CHECK(ifname_matches("^=eth0", "eth0.1"));
  CHECK(ifname_matches("eth0:1", "eth0"));
  auto lo = find_interfaces("=lo", 8);
  REQUIRE(lo.size() == 1);
  CHECK(lo[0].name == "lo");
}
