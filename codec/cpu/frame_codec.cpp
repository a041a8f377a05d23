// Frames (format §1, §5, §6): encode cuts the message into blocks, picks layout and dtype, writes
// the payloads, then the table and header; decode validates header and table in the documented
// order, then decodes block by block.
#include <cstring>

#include "common/block.h"
#include "common/detect.h"
#include "common/frame.h"
#include "common/layout.h"
#include "cpu/block_codec.h"
#include "cpu/detect_fast.h"
#include "cpu/kernels.h"
#include "cpu/scratch.h"
#include "xxhash.h"
#include "zipnet/codec.h"

namespace zipnet::codec {

using namespace zipnet::codec::common;

static_assert(uint8_t(Status::dst_too_small) == kDstTooSmall && uint8_t(Status::truncated) == kTruncated &&
              uint8_t(Status::bad_magic) == kBadMagic && uint8_t(Status::bad_version) == kBadVersion &&
              uint8_t(Status::bad_header) == kBadHeader && uint8_t(Status::bad_table) == kBadTable &&
              uint8_t(Status::corrupt_block) == kCorruptBlock &&
              uint8_t(Status::checksum_mismatch) == kChecksumMismatch &&
              uint8_t(Status::too_large) == kTooLarge);
static_assert(kFrameMagic == kMagic && kFormatVersion == kVersion && kFrameHeaderSize == kHeaderSize);

namespace {

uint32_t hash32(const void* p, size_t n) { return uint32_t(XXH3_64bits(p, n)); }

// Decodes the rANS streams of block a and, if given, block b: all of them are independent (up to
// four), so they go two at a time through k.rans_decode2 where it exists, whose chains interleave.
// ok[0] / ok[1]: every stream of a / b decoded cleanly.
void decode_rans_streams(const cpu::Kernels& k, cpu::PreparedBlock& a, cpu::PreparedBlock* b, bool* ok) {
  struct Stream {
    const cpu::RansDecodeJob* job;
    unsigned block;
  };
  cpu::PreparedBlock* blocks[2] = {&a, b};
  Stream streams[2 * kMaxStreams];
  unsigned count = 0;
  for (unsigned i = 0; i < 2; ++i)
    if (blocks[i] && blocks[i]->needs_rans)
      for (unsigned st = 0; st < blocks[i]->streams; ++st) streams[count++] = {&blocks[i]->rans[st], i};
  const unsigned paired = k.rans_decode2 ? count - count % 2 : 0;  // streams [0, paired) go in pairs
  for (unsigned i = 0; i < 2; ++i) {
    if (!blocks[i] || !blocks[i]->needs_rans) continue;
    bool all_paired = true;
    for (unsigned j = paired; j < count; ++j) all_paired &= streams[j].block != i;
    cpu::ready_rans_table(k, *blocks[i], all_paired);
  }
  ok[0] = ok[1] = true;
  for (unsigned j = 0; j < paired; j += 2) {
    bool r[2];
    k.rans_decode2(*streams[j].job, *streams[j + 1].job, r);
    ok[streams[j].block] &= r[0];
    ok[streams[j + 1].block] &= r[1];
  }
  for (unsigned j = paired; j < count; ++j) {
    const cpu::RansDecodeJob& d = *streams[j].job;
    ok[streams[j].block] &= k.rans_decode(d.table, d.states, d.words, d.nwords, d.n, d.sym);
  }
}

}  // namespace

std::string_view to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::dst_too_small: return "output buffer too small";
    case Status::truncated: return "frame truncated";
    case Status::bad_magic: return "not a zipnet frame (bad magic)";
    case Status::bad_version: return "unsupported frame format version";
    case Status::bad_header: return "bad frame header";
    case Status::bad_table: return "bad block table";
    case Status::corrupt_block: return "corrupt block payload";
    case Status::checksum_mismatch: return "block checksum mismatch";
    case Status::too_large: return "message too large for one frame";
    case Status::bad_options: return "bad encode options";
    case Status::device_error: return "GPU device error";
  }
  return "unknown status";
}

size_t max_frame_size(size_t n, unsigned block_log2) {
  if (block_log2 < kMinBlockLog2 || block_log2 > kMaxBlockLog2) block_log2 = kMinBlockLog2;
  return size_t(common::max_frame_size(n, block_log2));
}

Status encode(const void* src_v, size_t n, void* dst_v, size_t dst_cap, size_t* frame_size,
              const EncodeOptions& opts, EncodeStats* stats) {
  if (frame_size) *frame_size = 0;
  const unsigned log2 = opts.block_log2;
  if (log2 < kMinBlockLog2 || log2 > kMaxBlockLog2) return Status::bad_options;
  if (opts.dtype && uint8_t(*opts.dtype) >= kNumDtypes) return Status::bad_options;
  const uint64_t nblk = block_count(n, log2);
  if (uint64_t(n) + nblk > kMaxPayloadArea) return Status::too_large;
  if (dst_cap < common::max_frame_size(n, log2) || (n && (!src_v || !dst_v)) || !dst_v)
    return Status::dst_too_small;
  const auto* src = static_cast<const uint8_t*>(src_v);
  auto* dst = static_cast<uint8_t*>(dst_v);
  const cpu::Kernels& k = cpu::active_kernels();
  cpu::Scratch& s = cpu::thread_scratch();
  const uint64_t block = uint64_t(1) << log2;
  s.reserve(block);

  FrameHeader h;
  h.block_log2 = uint8_t(log2);
  h.original_size = n;
  h.layout = opts.detect_layout ? uint8_t(detect_layout(src, n, &h.layout_flag)) : uint8_t(kLayoutFlat);
  if (h.layout == kLayoutFlat) h.layout_flag = 0;

  auto gather_block = [&](uint64_t off, uint64_t bytes) -> const uint8_t* {
    if (h.layout == kLayoutFlat) return src + off;
    gather_lines(h.layout, src + off, bytes / line_bytes(h.layout), s.gathered.data());
    return s.gathered.data();
  };

  if (opts.dtype) {
    h.dtype = uint8_t(*opts.dtype);
  } else {
    const uint64_t b0 = n < block ? n : block;
    const uint8_t* g = gather_block(0, b0);
    uint64_t glen = gathered_size(h.layout, b0);
    h.dtype = uint8_t(cpu::detect_dtype_fast(g, uint32_t(glen < kDetectSampleBytes ? glen : kDetectSampleBytes)));
  }

  uint8_t* payload = dst + kHeaderSize + kEntrySize * nblk;
  uint64_t end = 0;
  // Blocks go in groups of kEncodeGroup: each is split and analysed, their rANS streams run
  // interleaved (one alone is bound by the latency of its state updates), then the blocks are
  // written in order.
  thread_local cpu::PreparedEncode prepared[cpu::kEncodeGroup];  // ~5.8 KiB each: off the stack
  for (uint64_t i = 0; i < nblk; i += cpu::kEncodeGroup) {
    const unsigned count = nblk - i < cpu::kEncodeGroup ? unsigned(nblk - i) : cpu::kEncodeGroup;
    cpu::BlockInput in[cpu::kEncodeGroup];
    cpu::RansEncodeJob jobs[cpu::kEncodeGroup * kMaxStreams];
    unsigned njobs = 0;
    for (unsigned b = 0; b < count; ++b) {
      cpu::EncodeBuffers& eb = s.enc[b];
      const uint64_t off = (i + b) * block;
      const uint64_t bytes = n - off < block ? n - off : block;
      in[b].original = src + off;
      in[b].original_bytes = bytes;
      if (h.layout == kLayoutFlat) {
        in[b].gathered = src + off;
      } else {
        gather_lines(h.layout, src + off, bytes / line_bytes(h.layout), eb.gathered.data());
        in[b].gathered = eb.gathered.data();
      }
      in[b].gathered_bytes = gathered_size(h.layout, bytes);
      in[b].dtype = h.dtype;
      const cpu::EncodeSlot slot{eb.sym.data(), {eb.res[0].data(), eb.res[1].data(), eb.res[2].data()},
                                 eb.words.data() + eb.words.size()};
      cpu::prepare_encode(k, slot, in[b], opts.modes, &prepared[b]);
      if (prepared[b].needs_rans)
        for (unsigned st = 0; st < prepared[b].streams; ++st) jobs[njobs++] = prepared[b].rans[st];
    }
    if (njobs >= 2 && k.rans_encode_group) {
      // Two streams at a time: all four of two blocks at once encoded bf16 0.96x as fast as pairs
      // (AVX-512, this VM, 2026-12-01).
      for (unsigned j = 0; j < njobs; j += 2) k.rans_encode_group(jobs + j, njobs - j < 2 ? 1 : 2);
    } else {
      for (unsigned j = 0; j < njobs; ++j)
        jobs[j].nwords = k.rans_encode(jobs[j].sym, jobs[j].n, *jobs[j].t, jobs[j].states, jobs[j].words_end);
    }
    for (unsigned b = 0, j = 0; b < count; ++b)
      if (prepared[b].needs_rans)
        for (unsigned st = 0; st < prepared[b].streams; ++st) prepared[b].rans[st].nwords = jobs[j++].nwords;
    for (unsigned b = 0; b < count; ++b) {
      end += cpu::write_encoded(prepared[b], in[b], opts.modes, payload + end, stats);
      write_entry(dst, i + b, uint32_t(end), uint32_t(k.xxh3(in[b].original, in[b].original_bytes)));
    }
  }
  h.frame_size = kHeaderSize + kEntrySize * nblk + end;
  h.table_checksum = hash32(dst + kHeaderSize, kEntrySize * nblk);
  write_header(h, dst);
  store_header_checksum(dst, hash32(dst, kHeaderHashedBytes));
  if (frame_size) *frame_size = size_t(h.frame_size);
  return Status::ok;
}

Status read_header(const void* frame, size_t avail, FrameInfo* info) {
  if (!frame && avail) return Status::truncated;
  const auto* in = static_cast<const uint8_t*>(frame);
  if (avail < kHeaderSize) return Status::truncated;
  FrameHeader h;
  // Only the header is given here: take frame_size from the header so that its checks pass.
  uint8_t st = parse_header(in, load_u64(in + 16), hash32(in, kHeaderHashedBytes), UINT64_MAX, &h);
  if (st != kOk) return Status(st);
  if (info) {
    info->version = h.version;
    info->dtype = Dtype(h.dtype);
    info->layout = Layout(h.layout);
    info->block_log2 = h.block_log2;
    info->original_size = h.original_size;
    info->frame_size = h.frame_size;
    info->nblocks = uint32_t(block_count(h.original_size, h.block_log2));
  }
  return Status::ok;
}

Status decode(const void* frame, size_t frame_size, void* dst_v, size_t dst_cap, size_t* original_size) {
  if (original_size) *original_size = 0;
  if (!frame) return Status::truncated;
  const auto* in = static_cast<const uint8_t*>(frame);
  FrameHeader h;
  uint32_t hh = frame_size >= kHeaderSize ? hash32(in, kHeaderHashedBytes) : 0;
  uint8_t st = parse_header(in, frame_size, hh, dst_v ? dst_cap : 0, &h);
  if (st != kOk) return Status(st);
  if (!table_fits(h)) return Status::bad_table;
  const uint64_t nblk = block_count(h.original_size, h.block_log2);
  st = check_table(h, in, hash32(in + kHeaderSize, kEntrySize * nblk));
  if (st != kOk) return Status(st);

  const cpu::Kernels& k = cpu::active_kernels();
  cpu::Scratch& s = cpu::thread_scratch();
  const uint64_t block = uint64_t(1) << h.block_log2;
  s.reserve(block);
  auto* dst = static_cast<uint8_t*>(dst_v);
  const uint8_t* payload = in + kHeaderSize + kEntrySize * nblk;
  // Blocks go in pairs: both are checked and prepared, their rANS loops run interleaved when both
  // need one, then block i and block i+1 are written and verified in that order.
  auto target = [&](uint64_t i) {
    const uint64_t off = i * block;
    const uint64_t bytes = h.original_size - off < block ? h.original_size - off : block;
    return cpu::BlockTarget{dst + off, bytes, h.dtype, h.layout, h.layout_flag};
  };
  auto payload_of = [&](uint64_t i, uint64_t* size) {
    const uint64_t start = i ? entry_end(in, i - 1) : 0;
    *size = entry_end(in, i) - start;
    return payload + start;
  };
  auto finish = [&](uint64_t i, const cpu::PreparedBlock& b, const cpu::BlockTarget& t) -> uint8_t {
    cpu::finish_block(k, s, b, t);
    return uint32_t(k.xxh3(t.dst, t.original_bytes)) == entry_checksum(in, i) ? uint8_t(kOk) : uint8_t(kChecksumMismatch);
  };
  cpu::PreparedBlock pa, pb;
  for (uint64_t i = 0; i < nblk; i += 2) {
    uint64_t sa = 0, sb = 0;
    const cpu::BlockTarget ta = target(i);
    const uint8_t* pl_a = payload_of(i, &sa);
    st = cpu::prepare_block(s, pl_a, sa, ta, s.sym.data(), s.table.data(), &pa);
    if (st != kOk) return Status(st);
    const bool pair = i + 1 < nblk;
    cpu::BlockTarget tb{};
    uint8_t st_b = kOk;
    if (pair) {
      tb = target(i + 1);
      const uint8_t* pl_b = payload_of(i + 1, &sb);
      st_b = cpu::prepare_block(s, pl_b, sb, tb, s.sym2.data(), s.table2.data(), &pb);
    }
    bool ok[2] = {true, true};
    const bool b_rans = pair && st_b == kOk && pb.needs_rans;
    decode_rans_streams(k, pa, b_rans ? &pb : nullptr, ok);
    if (!ok[0] || (pa.needs_rans && !cpu::take_seeds(pa))) return Status::corrupt_block;
    st = finish(i, pa, ta);
    if (st != kOk) return Status(st);
    if (!pair) break;
    if (st_b != kOk) return Status(st_b);
    if (!ok[1] || (pb.needs_rans && !cpu::take_seeds(pb))) return Status::corrupt_block;
    st = finish(i + 1, pb, tb);
    if (st != kOk) return Status(st);
  }
  if (original_size) *original_size = size_t(h.original_size);
  return Status::ok;
}

}  // namespace zipnet::codec
