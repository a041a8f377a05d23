// Block payloads (format §4): the encoder computes the size of every allowed mode from the block's
// statistics (rANS by actually coding it) and writes the smallest; the decoder checks every size
// and field before using it, decodes symbols into scratch, then writes the output in one forward
// pass, each LL/LL128 line whole.
#include "cpu/block_codec.h"

#include <atomic>
#include <cmath>
#include <cstring>

#include "common/block.h"
#include "common/layout.h"
#include "cpu/window.h"

namespace zipnet::codec::cpu {
namespace {

using namespace zipnet::codec::common;

void build_enc_table(const uint32_t* freq, RansEncTable* t) {
  uint32_t c = 0;
  for (int s = 0; s < 256; ++s) {
    t->freq[s] = freq[s];
    t->cum[s] = c;
    t->packed[s] = freq[s] | (c << 16);
    float r = 0;
    if (freq[s]) {
      r = 1.0f / float(freq[s]);
      if (double(r) * freq[s] > 1.0) r = std::nextafter(r, 0.0f);  // exact product: 24 + 12 bits
    }
    t->rcp[s] = r;
    c += freq[s];
  }
}

void build_dec_table(const uint32_t* freq, uint32_t* table) {
  uint32_t c = 0;
  for (uint32_t s = 0; s < 256; ++s) {
    // Written as base + (k << 20) so that the compiler vectorises the fill (4x faster).
    const uint32_t f = freq[s], base = decode_entry(s, f, 0);
    uint32_t* t = table + c;
    for (uint32_t k = 0; k < f; ++k) t[k] = base + (k << 20);
    c += f;
  }
}

// Writes one line-structured or flat region forward with 16-byte copies (lines stay whole).
void copy_forward(uint8_t* dst, const uint8_t* src, uint64_t n) {
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) std::memcpy(dst + i, src + i, 16);
  for (; i < n; ++i) dst[i] = src[i];
}

// Scatters gathered data back into lines, flags included, ascending. NCCL's GPU may read a line
// as soon as its flag is valid, so a flag must never become visible before its data:
//  - LL: each {data, flag} half is one 8-byte store (the GPU reads halves with 8-byte loads);
//  - LL128: the 120 data bytes, then the flag by a release store. (Storing the last 16 bytes
//    as one copy was not enough: the compiler split it into two 8-byte stores, flag first, and
//    test_ll_order caught a line with a valid flag and stale data about once in 12 runs.)
void scatter_lines(unsigned layout, uint64_t flag, const uint8_t* g, uint64_t lines, uint8_t* dst) {
  if (layout == kLayoutLL) {
    for (uint64_t i = 0; i < lines; ++i) {
      for (int half = 0; half < 2; ++half) {
        const uint64_t v = uint64_t(load_u32(g + 8 * i + 4 * half)) | (uint64_t(uint32_t(flag)) << 32);
        __atomic_store_n(reinterpret_cast<uint64_t*>(dst + 16 * i + 8 * half), v, __ATOMIC_RELAXED);
      }
    }
  } else {
    for (uint64_t i = 0; i < lines; ++i) {
      uint8_t* d = dst + kLL128Line * i;
      const uint8_t* s = g + kLL128Data * i;
      for (uint32_t b = 0; b + 16 <= kLL128Data; b += 16) std::memcpy(d + b, s + b, 16);
      std::memcpy(d + 112, s + 112, 8);
      __atomic_store_n(reinterpret_cast<uint64_t*>(d + kLL128Data), flag, __ATOMIC_RELEASE);
    }
  }
}

// A lower bound on the words rANS emits for these counts and frequencies over `lanes` lanes. With
// P = sum over lanes of log2(x) + 16.046 * words: P starts at lanes * 16; coding s raises it by at
// least log2(M / f[s]) - 0.0444 (x' >= x * M / f / (1 + 2^-5) since x' >= L); emitting a word
// lowers log2(x) by at most 16.046 (x >= 2^21 then); at the end every x < 2^32. Hence
// 16.046 * words >= H - 0.0444 * n - 16 * lanes. Margins absorb floating-point error.
uint64_t rans_min_words(const uint32_t* hist, const uint32_t* freq, uint32_t n, unsigned lanes) {
  double h = 0;
  for (int s = 0; s < 256; ++s)
    if (hist[s]) h += double(hist[s]) * (double(kProbBits) - std::log2(double(freq[s])));
  double w = (h - 0.0445 * double(n) - 16.0 * lanes - 4.0) / 16.0460;
  return w > 0 ? uint64_t(w) : 0;
}

std::atomic<bool> g_rans_skip{true};

}  // namespace

void set_rans_skip_for_testing(bool enabled) { g_rans_skip.store(enabled); }

void prepare_encode(const Kernels& k, const EncodeSlot& slot, const BlockInput& in, unsigned modes,
                    PreparedEncode* e) {
  const unsigned es = element_size(in.dtype), planes = residual_planes(in.dtype);
  BlockStats& b = e->b;
  b.original_bytes = in.original_bytes;
  b.n = uint32_t(in.gathered_bytes / es);
  b.tail = uint32_t(in.gathered_bytes % es);
  b.residual_planes = planes;

  // Split into symbols and residual planes.
  e->sym = in.gathered;
  uint32_t res_or = 0;
  for (unsigned j = 0; j < 3; ++j) e->res[j] = slot.res[j];
  if (in.dtype != kDtypeOpaque) {
    res_or = k.split(in.dtype, in.gathered, b.n, slot.sym, slot.res);
    e->sym = slot.sym;
  }
  uint32_t hist[256];
  k.histogram(e->sym, b.n, hist);
  b.plane_mask = uint8_t((hist[0] != b.n ? 1 : 0) | residual_plane_bits(res_or, planes));

  e->base = 0;
  e->window_section = kNoSize;
  if (modes & (1u << kModeWindow)) {
    e->base = window_base(hist);
    e->window_section = window_section_size(b.n, window_escapes(hist, b.n, e->base));
  }
  e->needs_rans = false;
  e->streams = rans_streams(b.n);
  for (auto& job : e->rans) job.nwords = 0;
  if ((modes & (1u << kModeRans)) && b.n > 0) {
    quantize_freqs(hist, b.n, e->freq);
    e->table_bytes = freq_table_size(e->freq);
    // Skip coding when rANS provably cannot be smaller than the best other mode (then the choice
    // is the same as if it had been coded: a tie goes to the lower mode anyway).
    ModeSizes others = mode_sizes(b, e->window_section, 0);
    uint64_t best_other = others.size[kModeRaw];
    for (unsigned m = 1; m < 3; ++m)
      if ((modes & (1u << m)) && others.size[m] < best_other) best_other = others.size[m];
    const uint8_t mask = uint8_t(b.plane_mask | 1);
    const uint32_t seed = rans_seed_bytes(b, mask);
    const unsigned lanes = kLanes * e->streams;
    const uint64_t lower = planes_prefix_size(b, mask) + e->table_bytes + min_rans_head_bytes(e->streams) +
                           2 * rans_min_words(hist, e->freq, b.n, lanes) - seed;
    if (lower < best_other || !g_rans_skip.load(std::memory_order_relaxed)) {
      build_enc_table(e->freq, &e->table);
      // Start states: L + the lane's seed (the encoder's states array is in/out).
      const auto res_byte = [&](unsigned j, uint32_t i) { return e->res[j][i]; };
      for (unsigned g = 0; g < lanes; ++g)
        e->states[g] = kRansL + (2 * g < seed ? lane_seed(b, mask, seed, g, res_byte) : 0);
      e->needs_rans = true;
      // Stream 1's words end the buffer; stream 0's end below the most stream 1 can emit (one a
      // symbol), so the two runs never overlap.
      const uint32_t h = rans_stream_split(b.n);
      e->rans[0] = RansEncodeJob{e->sym, h, &e->table, e->states, slot.words_end - (b.n - h), 0};
      if (e->streams == 2)
        e->rans[1] = RansEncodeJob{e->sym + h, b.n - h, &e->table, e->states + kLanes, slot.words_end, 0};
    }
  }
}

uint64_t write_encoded(const PreparedEncode& e, const BlockInput& in, unsigned modes, uint8_t* out,
                       EncodeStats* stats) {
  const BlockStats& b = e.b;
  const unsigned es = element_size(in.dtype);
  const uint32_t w0 = e.rans[0].nwords, words = w0 + (e.streams == 2 ? e.rans[1].nwords : 0);
  const uint64_t rans_section =
      e.needs_rans ? e.table_bytes + state_area_bytes(e.states, kLanes * e.streams) + rans_run_bytes(e.streams, w0, words)
                   : 0;
  ModeSizes sizes = mode_sizes(b, e.window_section, rans_section);
  const unsigned mode = choose_mode(sizes, modes | 1u);
  if (stats) ++stats->blocks_by_mode[mode];

  if (mode == kModeRaw) {
    out[0] = kModeRaw;
    std::memcpy(out + 1, in.original, in.original_bytes);
    if (stats) stats->symbol_section_bytes += b.n;
    return sizes.size[kModeRaw];
  }
  const uint8_t mask = mode == kModePlanes ? b.plane_mask : uint8_t(b.plane_mask | 1);
  out[0] = uint8_t(mode);
  out[1] = mask;
  uint8_t* p = out + 2;
  for (unsigned j = 0; j < b.residual_planes; ++j) {
    if (mask & (2u << j)) {
      std::memcpy(p, e.res[j], b.n);
      p += b.n;
    }
  }
  const uint32_t seed = mode == kModeRans ? rans_seed_bytes(b, mask) : 0;
  p -= seed;  // the lane seeds carry them
  std::memcpy(p, in.gathered + uint64_t(b.n) * es, b.tail);
  p += b.tail;
  uint8_t* section = p;
  if (mode == kModePlanes) {
    if (mask & 1) {
      std::memcpy(p, e.sym, b.n);
      p += b.n;
    }
  } else if (mode == kModeWindow) {
    p += window_encode(e.sym, b.n, e.base, p);
  } else {
    p += write_freq_table(e.freq, p);
    p += write_states(e.states, kLanes * e.streams, p);
    if (e.streams == 2) p += write_varint(w0, p);
    for (unsigned st = 0; st < e.streams; ++st) {
      const RansEncodeJob& job = e.rans[st];
      std::memcpy(p, job.words_end - job.nwords, 2ull * job.nwords);  // host is little-endian
      p += 2ull * job.nwords;
    }
  }
  // Net of the residual bytes the lane seeds carry: what coding the symbols cost.
  if (stats) stats->symbol_section_bytes += uint64_t(p - section) - seed;
  return uint64_t(p - out);
}

uint8_t prepare_block(Scratch& s, const uint8_t* payload, uint64_t size, const BlockTarget& t, uint8_t* sym_buf,
                      uint32_t* table_buf, PreparedBlock* b) {
  b->payload = payload;
  b->size = size;
  b->needs_rans = false;
  const unsigned mode = payload[0];
  b->mode = mode;
  if (mode > kModeRans) return kCorruptBlock;
  if (mode == kModeRaw) return size == 1 + t.original_bytes ? kOk : kCorruptBlock;
  if (size < 2) return kCorruptBlock;
  const unsigned es = element_size(t.dtype), planes = residual_planes(t.dtype);
  const uint8_t mask = payload[1];
  if (mask >> (1 + planes)) return kCorruptBlock;
  if (mode != kModePlanes && !(mask & 1)) return kCorruptBlock;
  const uint64_t glen = gathered_size(t.layout, t.original_bytes);
  const uint32_t n = uint32_t(glen / es), tail = uint32_t(glen % es);
  b->n = n;
  b->tail = tail;
  BlockStats st;
  st.original_bytes = t.original_bytes;
  st.n = n;
  b->seed = mode == kModeRans ? rans_seed_bytes(st, mask) : 0;
  b->mask = mask;
  const uint64_t prefix = 2 + uint64_t(popcount32(mask >> 1)) * n - b->seed + tail;
  if (prefix > size) return kCorruptBlock;
  const uint8_t* zeros = s.zeros.data();
  b->res[0] = b->res[1] = b->res[2] = zeros;
  const uint8_t* p = payload + 2;
  for (unsigned j = 0; j < planes; ++j) {
    if (mask & (2u << j)) {
      b->res[j] = p;
      p += n;
    }
  }
  // The join reads the seeded bytes' places from what follows (the tail and the rANS section, at
  // least 82 bytes a stream once its states parse: still inside the payload); finish_block then
  // writes the seeds over them.
  b->tail_bytes = p - b->seed;
  const uint8_t* section = payload + prefix;
  const uint64_t section_size = size - prefix;

  b->sym = zeros;
  if (mode == kModePlanes) {
    if (section_size != ((mask & 1) ? n : 0)) return kCorruptBlock;
    if (mask & 1) b->sym = section;
  } else if (mode == kModeWindow) {
    if (!window_decode(section, uint32_t(section_size), n, sym_buf)) return kCorruptBlock;
    b->sym = sym_buf;
  } else {
    uint32_t* freq = b->freq;
    uint32_t used = 0;
    if (n == 0) return kCorruptBlock;
    if (!parse_freq_table(section, uint32_t(section_size), freq, &used)) return kCorruptBlock;
    const unsigned streams = rans_streams(n);
    uint32_t state_bytes = 0, w0 = 0, w0_bytes = 0;
    if (!read_states(section + used, uint32_t(section_size - used), kLanes * streams, b->states, &state_bytes))
      return kCorruptBlock;
    used += state_bytes;
    if (streams == 2 && !read_varint(section + used, uint32_t(section_size - used), &w0, &w0_bytes))
      return kCorruptBlock;
    used += w0_bytes;
    if ((section_size - used) % 2) return kCorruptBlock;
    const uint32_t words = uint32_t((section_size - used) / 2);
    if (streams == 1) w0 = words;
    if (w0 > words) return kCorruptBlock;
    b->distinct = 0;
    for (int v = 0; v < 256; ++v) b->distinct += freq[v] != 0;
    b->table_buf = table_buf;
    b->needs_rans = true;
    b->streams = streams;
    const uint32_t h = rans_stream_split(n);
    const uint8_t* w = section + used;
    b->rans[0] = RansDecodeJob{table_buf, b->states, w, w0, h, sym_buf, b->freq};
    if (streams == 2)
      b->rans[1] = RansDecodeJob{table_buf, b->states + kLanes, w + 2ull * w0, words - w0, n - h, sym_buf + h, b->freq};
    b->sym = sym_buf;
  }
  return kOk;
}

bool take_seeds(PreparedBlock& b) {
  for (unsigned g = 0; g < kLanes * b.streams; ++g) {
    const uint32_t x = b.states[g];
    if (2 * g < b.seed) {
      if ((x >> 16) != 1) return false;  // L <= x < 2L
      b.seeds[2 * g] = uint8_t(x);
      b.seeds[2 * g + 1] = uint8_t(x >> 8);
    } else if (x != kRansL) {
      return false;
    }
  }
  return true;
}

void ready_rans_table(const Kernels& k, PreparedBlock& b, bool paired) {
  if (paired && b.distinct <= k.decode2_table_free) return;
  build_dec_table(b.freq, b.table_buf);
}

void finish_block(const Kernels& k, Scratch& s, const PreparedBlock& b, const BlockTarget& t) {
  if (b.mode == kModeRaw) {
    copy_forward(t.dst, b.payload + 1, t.original_bytes);
    return;
  }
  const unsigned es = element_size(t.dtype);
  // One forward pass over the output.
  uint8_t* out = t.layout == kLayoutFlat ? t.dst : s.gathered.data();
  // Usually every seeded byte is in the last present plane (seed <= n): its last `seed` elements
  // are joined from a copy of the planes' ends with the seeds in place.
  const bool seeds_in_last_plane = b.seed && b.seed <= b.n;
  const uint32_t joined = seeds_in_last_plane ? b.n - b.seed : b.n;
  if (t.dtype == kDtypeOpaque) {
    if (t.layout == kLayoutFlat) copy_forward(out, b.sym, b.n);
    else std::memcpy(out, b.sym, b.n);
  } else {
    k.join(t.dtype, b.sym, b.res, joined, out);
  }
  if (seeds_in_last_plane) {
    const unsigned last = last_residual_plane(b.mask);
    const uint8_t* res[3];
    for (unsigned j = 0; j < 3; ++j) res[j] = j == last ? b.seeds : b.res[j] + joined;
    k.join(t.dtype, b.sym + joined, res, b.seed, out + uint64_t(joined) * es);
  }
  std::memcpy(out + uint64_t(b.n) * es, b.tail_bytes, b.tail);
  if (b.seed && !seeds_in_last_plane) {  // the residual area's last bytes come from the lane seeds
    const uint32_t count = b.seed < b.n ? b.seed : b.n;
    for (uint32_t i = b.n - count; i < b.n; ++i) {
      uint8_t* e = out + uint64_t(i) * es;
      store_element(es, e, with_seeded_bytes(t.dtype, load_element(es, e), i, b.n, b.mask, b.seed, b.seeds));
    }
  }
  if (t.layout != kLayoutFlat)
    scatter_lines(t.layout, t.layout_flag, out, t.original_bytes / line_bytes(t.layout), t.dst);
}

}  // namespace zipnet::codec::cpu
