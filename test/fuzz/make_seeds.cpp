// Writes the seed corpora of the codec fuzzers from the shipped tensors (test/data/tensors):
// small real frames of every dtype, mode and layout for fuzz_decode, and the matching
// [option bytes][payload] inputs for fuzz_roundtrip. Run by tools/fuzz-long.sh --reseed; its output
// is committed under test/fuzz/corpus/. Also valid connect handles, hellos and chunk headers for
// fuzz_handshake. Usage: fuzz_make_seeds TENSOR_DIR CORPUS_DIR
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "transport/tcp/handshake.h"
#include "zipnet/codec.h"

namespace codec = zipnet::codec;

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// LL: {d1, flag, d2, flag} per 16 bytes; LL128: 120 data bytes then a u64 flag.
std::vector<uint8_t> to_lines(const std::vector<uint8_t>& data, codec::Layout layout) {
  std::vector<uint8_t> out;
  const uint64_t flag = 0x2A;
  if (layout == codec::Layout::ll) {
    for (size_t i = 0; i + 8 <= data.size(); i += 8) {
      const uint32_t f = uint32_t(flag);
      out.insert(out.end(), data.begin() + i, data.begin() + i + 4);
      out.insert(out.end(), reinterpret_cast<const uint8_t*>(&f), reinterpret_cast<const uint8_t*>(&f) + 4);
      out.insert(out.end(), data.begin() + i + 4, data.begin() + i + 8);
      out.insert(out.end(), reinterpret_cast<const uint8_t*>(&f), reinterpret_cast<const uint8_t*>(&f) + 4);
    }
  } else {
    for (size_t i = 0; i + 120 <= data.size(); i += 120) {
      out.insert(out.end(), data.begin() + i, data.begin() + i + 120);
      out.insert(out.end(), reinterpret_cast<const uint8_t*>(&flag), reinterpret_cast<const uint8_t*>(&flag) + 8);
    }
  }
  return out;
}

struct Seed {
  std::string name;
  std::vector<uint8_t> data;
  codec::EncodeOptions opts;
};

// The option bytes fuzz_roundtrip.cpp's read_plan() turns back into `opts` (shape 0: data as is).
std::vector<uint8_t> plan_bytes(const codec::EncodeOptions& o) {
  const uint8_t d = o.dtype ? uint8_t(*o.dtype) : 4;
  const uint8_t modes = uint8_t(o.modes >> 0) & 0xF;
  return {uint8_t(d | ((modes & 0xF) << 3) | (o.detect_layout ? 0x80 : 0)), uint8_t(o.block_log2 - 12), 0};
}

// fuzz_handshake inputs: [selector][bytes], selector as in fuzz_handshake.cpp (bit 2: re-seal).
size_t write_handshake_seeds(const std::string& dir) {
  namespace tcp = zipnet::tcp;
  size_t total = 0;
  auto put = [&](const std::string& name, uint8_t selector, const uint8_t* p, size_t n) {
    std::vector<uint8_t> in{selector};
    in.insert(in.end(), p, p + n);
    write_file(dir + "/" + name, in);
    total += in.size();
  };
  tcp::HandleInfo h4;
  h4.token = 0x1122334455667788ull;
  h4.family = 2;
  h4.port = 50001;
  h4.addr[0] = 127, h4.addr[3] = 1;
  uint8_t handle[tcp::kHandleSize];
  tcp::encode_handle(h4, handle);
  put("handle-v4", 0, handle, sizeof handle);
  put("handle-v4-seal", 4, handle, sizeof handle);
  tcp::HandleInfo h6 = h4;
  h6.family = 10;
  std::memset(h6.addr, 0, 16);
  h6.addr[15] = 1;
  h6.scope_id = 3;
  tcp::encode_handle(h6, handle);
  put("handle-v6", 0, handle, sizeof handle);
  tcp::HandleInfo other = h4;  // a peer of the next wire version
  other.wire_version = tcp::kWireVersion + 1;
  tcp::encode_handle(other, handle);
  put("handle-other-version", 0, handle, sizeof handle);

  tcp::Hello hello;
  hello.token = h4.token;
  hello.conn_id = 42;
  hello.stream = 1;
  hello.nstreams = 2;
  hello.subchunk_bytes = 128 << 10;
  uint8_t hb[tcp::kHelloSize];
  tcp::encode_hello(hello, hb);
  put("hello", 1, hb, sizeof hb);
  put("hello-seal", 5, hb, sizeof hb);

  for (int frame = 0; frame < 2; ++frame) {
    tcp::ChunkHeader c;
    c.flags = frame ? tcp::kChunkFrame : 0;
    c.seq = 7;
    c.msg_size = 300000;
    c.offset = 131072;
    c.orig_len = 131072;
    c.payload_len = frame ? 90000 : 131072;
    c.index = 1;
    c.nchunks = 3;
    c.payload_check = frame ? 0 : 0x1234ABCDu;
    uint8_t in[8 + tcp::kChunkHeaderSize] = {};
    const uint32_t max_orig = 128u << 10, max_payload = (128u << 10) + 4096;
    std::memcpy(in, &max_orig, 4);
    std::memcpy(in + 4, &max_payload, 4);
    tcp::encode_chunk_header(c, in + 8);
    put(frame ? "chunk-frame" : "chunk-raw", 2, in, sizeof in);
    put(frame ? "chunk-frame-seal" : "chunk-raw-seal", 6, in, sizeof in);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TENSOR_DIR CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string tensors = argv[1], corpus = argv[2];
  for (const char* sub : {"/decode", "/roundtrip", "/handshake"}) std::filesystem::create_directories(corpus + sub);
  struct Source { const char* file; codec::Dtype dtype; };
  const Source sources[] = {{"grads.bf16", codec::Dtype::bf16},     {"weights.bf16", codec::Dtype::bf16},
                            {"activations.fp16", codec::Dtype::fp16}, {"grads.fp32", codec::Dtype::fp32},
                            {"grads-upcast.fp32", codec::Dtype::fp32}};
  const codec::ModeMask mode_sets[] = {codec::mode_bit(codec::Mode::raw),
                                       codec::ModeMask(codec::mode_bit(codec::Mode::raw) | codec::mode_bit(codec::Mode::planes)),
                                       codec::ModeMask(codec::mode_bit(codec::Mode::raw) | codec::mode_bit(codec::Mode::window)),
                                       codec::ModeMask(codec::mode_bit(codec::Mode::raw) | codec::mode_bit(codec::Mode::rans)),
                                       codec::kAllModes};
  std::vector<Seed> seeds;
  for (const Source& s : sources) {
    const std::vector<uint8_t> file = read_file(tensors + "/" + s.file);
    if (file.size() < (1u << 20)) {
      std::fprintf(stderr, "cannot read %s/%s\n", tensors.c_str(), s.file);
      return 1;
    }
    // 5 KiB + 3 bytes from the middle: two 4 KiB blocks, the last one short, with an odd tail.
    const std::vector<uint8_t> slice(file.begin() + (1 << 20), file.begin() + (1 << 20) + 5 * 1024 + 3);
    for (codec::ModeMask m : mode_sets) {
      codec::EncodeOptions o;
      o.dtype = s.dtype;
      o.modes = m;
      o.block_log2 = 12;
      seeds.push_back({std::string(s.file) + ".modes" + std::to_string(m), slice, o});
    }
    codec::EncodeOptions detect;  // detected dtype, default 32 KiB blocks
    seeds.push_back({std::string(s.file) + ".detect", slice, detect});
    codec::EncodeOptions opaque;
    opaque.dtype = codec::Dtype::opaque;
    opaque.block_log2 = 12;
    seeds.push_back({std::string(s.file) + ".opaque", std::vector<uint8_t>(slice.begin(), slice.begin() + 2048), opaque});
  }
  const std::vector<uint8_t> bf16 = read_file(tensors + "/grads.bf16");
  {  // one block of 8195 bf16 elements and a tail byte: two rANS streams (format §4.2)
    codec::EncodeOptions o;
    o.dtype = codec::Dtype::bf16;
    o.modes = codec::ModeMask(codec::mode_bit(codec::Mode::raw) | codec::mode_bit(codec::Mode::rans));
    seeds.push_back({"grads.bf16.two-streams", std::vector<uint8_t>(bf16.begin(), bf16.begin() + 2 * 8195 + 1), o});
  }
  const std::vector<uint8_t> gathered(bf16.begin() + 4096, bf16.begin() + 4096 + 3840);
  for (codec::Layout l : {codec::Layout::ll, codec::Layout::ll128}) {
    codec::EncodeOptions o;
    o.dtype = codec::Dtype::bf16;
    o.block_log2 = 12;
    seeds.push_back({l == codec::Layout::ll ? "grads.bf16.ll" : "grads.bf16.ll128", to_lines(gathered, l), o});
  }
  seeds.push_back({"empty", {}, {}});
  seeds.push_back({"one-byte", {0x7F}, {}});

  size_t total = 0;
  for (const Seed& s : seeds) {
    std::vector<uint8_t> frame(codec::max_frame_size(s.data.size(), s.opts.block_log2));
    size_t frame_size = 0;
    if (codec::encode(s.data.data(), s.data.size(), frame.data(), frame.size(), &frame_size, s.opts) != codec::Status::ok) {
      std::fprintf(stderr, "encode failed for %s\n", s.name.c_str());
      return 1;
    }
    frame.resize(frame_size);
    write_file(corpus + "/decode/" + s.name + ".frame", frame);
    std::vector<uint8_t> input = plan_bytes(s.opts);
    input.insert(input.end(), s.data.begin(), s.data.end());
    write_file(corpus + "/roundtrip/" + s.name + ".in", input);
    total += frame.size() + input.size();
  }
  total += write_handshake_seeds(corpus + "/handshake");
  std::printf("wrote %zu seeds per codec target, %zu bytes in all, to %s\n", seeds.size(), total, corpus.c_str());
  return 0;
}
