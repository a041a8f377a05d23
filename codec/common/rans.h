// Format §4.2 and §6 (frequencies): rANS constants, the frequency quantisation rule that both codecs
// must follow bit for bit, the frequency table's serialisation, and the decode-table entry packing.
#pragma once

#include "hd.h"

namespace zipnet::codec::common {

constexpr unsigned kProbBits = 11;
constexpr uint32_t kProbScale = 1u << kProbBits;  // M = 2048
constexpr uint32_t kRansL = 1u << 16;             // lower bound of a normalised state
constexpr unsigned kLanes = 32;
// Streams (§4.2): a block of more than kStreamSplit symbols codes them as two independent 32-lane
// streams, elements [0, h) and [h, n), which halves its chain of dependent steps (the GPU decodes
// them side by side). h is a whole number of 32-element steps.
constexpr uint32_t kStreamSplit = 8192;
constexpr unsigned kMaxStreams = 2;
ZIPNET_HD inline unsigned rans_streams(uint32_t n) { return n > kStreamSplit ? 2u : 1u; }
ZIPNET_HD inline uint32_t rans_stream_split(uint32_t n) {
  return n > kStreamSplit ? 32u * uint32_t((uint64_t(n) + 63) / 64) : n;
}

// The final states (§4.2) of `lanes` lanes (32 a stream), each x >= L: a 4-bit length code
// k = floor(log2 x) - 16 per lane (two a byte, lane 2m in the low nibble of byte m), then each
// lane's low 16 + k bits (its top bit is implied), LSB first, lane after lane, padded with zero
// bits to a byte. About 1.5 bits a lane less than whole bytes and a short-state mask.
ZIPNET_HD inline unsigned clz32(uint32_t v) {
#ifdef __CUDA_ARCH__
  return unsigned(__clz(int(v)));
#else
  return v ? unsigned(__builtin_clz(v)) : 32u;
#endif
}
ZIPNET_HD inline unsigned state_length_code(uint32_t x) { return 15u - clz32(x); }  // x in [2^16, 2^32)
ZIPNET_HD inline uint32_t state_value_bits(unsigned code) { return 16u + code; }
ZIPNET_HD inline uint32_t state_codes_bytes(unsigned lanes) { return lanes / 2; }
// Lane l's length code, from the area's first bytes.
ZIPNET_HD inline unsigned state_length_code_at(const uint8_t* codes, unsigned l) { return (codes[l / 2] >> (4 * (l % 2))) & 0xF; }
// Bytes of the area of `lanes` states whose value bits sum to `bits`.
ZIPNET_HD inline uint32_t state_area_bytes_of(unsigned lanes, uint32_t bits) { return state_codes_bytes(lanes) + (bits + 7) / 8; }
// The least a state area of `lanes` lanes can take (every state below 2^17).
ZIPNET_HD inline uint32_t min_state_area_bytes(unsigned lanes) { return state_codes_bytes(lanes) + 2 * lanes; }
ZIPNET_HD inline uint32_t state_area_bytes(const uint32_t* x, unsigned lanes) {
  uint32_t bits = 0;
  for (unsigned l = 0; l < lanes; ++l) bits += state_value_bits(state_length_code(x[l]));
  return state_area_bytes_of(lanes, bits);
}
// Writes the area (state_area_bytes of it) at out; returns its size.
ZIPNET_HD inline uint32_t write_states(const uint32_t* x, unsigned lanes, uint8_t* out) {
  const uint32_t codes = state_codes_bytes(lanes);
  for (uint32_t b = 0; b < codes; ++b)
    out[b] = uint8_t(state_length_code(x[2 * b]) | (state_length_code(x[2 * b + 1]) << 4));
  uint8_t* bits = out + codes;
  uint64_t acc = 0;
  uint32_t have = 0, k = 0;
  for (unsigned l = 0; l < lanes; ++l) {
    const uint32_t nb = state_value_bits(state_length_code(x[l]));
    acc |= uint64_t(x[l] & ((1u << nb) - 1u)) << have;  // nb <= 31
    for (have += nb; have >= 8; have -= 8, acc >>= 8) bits[k++] = uint8_t(acc);
  }
  if (have) bits[k++] = uint8_t(acc);
  return codes + k;
}
// Lane l's state from its length code and its value bits at bit `off` of `bits` (reads the bytes
// of bits off .. off + 15 + code only).
ZIPNET_HD inline uint32_t read_state_bits(const uint8_t* bits, uint32_t off, unsigned code) {
  const uint32_t nb = state_value_bits(code), first = off / 8, last = (off + nb - 1) / 8;
  uint64_t v = 0;
  for (uint32_t b = first; b <= last; ++b) v |= uint64_t(bits[b]) << (8 * (b - first));
  return uint32_t((v >> (off % 8)) & ((1ull << nb) - 1)) | (1u << nb);
}
// Parses the area of `lanes` states from in[0..avail); false if it overruns avail or a padding
// bit is set (so every set of states has one encoding).
ZIPNET_HD inline bool read_states(const uint8_t* in, uint32_t avail, unsigned lanes, uint32_t* x, uint32_t* consumed) {
  const uint32_t codes = state_codes_bytes(lanes);
  if (avail < codes) return false;
  uint32_t bits = 0;
  for (unsigned l = 0; l < lanes; ++l) bits += state_value_bits(state_length_code_at(in, l));
  const uint32_t bytes = state_area_bytes_of(lanes, bits) - codes;
  if (avail - codes < bytes) return false;
  if (bits % 8 && (in[codes + bytes - 1] >> (bits % 8))) return false;
  const uint8_t* p = in + codes;
  uint64_t acc = 0;  // the stream's next `have` bits
  uint32_t have = 0;
  for (unsigned l = 0; l < lanes; ++l) {
    const uint32_t nb = state_value_bits(state_length_code_at(in, l));
    for (; have < nb; have += 8) acc |= uint64_t(*p++) << have;
    x[l] = uint32_t(acc & ((1u << nb) - 1u)) | (1u << nb);
    acc >>= nb;
    have -= nb;
  }
  *consumed = codes + bytes;
  return true;
}

// Stream 0's word count in a two-stream block (§4.2): LEB128, 7 bits a byte from the lowest, the
// high bit set on every byte but the last; at most 3 bytes, and the last byte is not 0 unless it
// is the only one (one encoding per count).
constexpr uint32_t kMaxVarintBytes = 3;
ZIPNET_HD inline uint32_t varint_bytes(uint32_t v) { return v < (1u << 7) ? 1u : v < (1u << 14) ? 2u : 3u; }
ZIPNET_HD inline uint32_t write_varint(uint32_t v, uint8_t* out) {
  const uint32_t n = varint_bytes(v);
  for (uint32_t i = 0; i < n; ++i) out[i] = uint8_t(((v >> (7 * i)) & 0x7F) | (i + 1 < n ? 0x80 : 0));
  return n;
}
ZIPNET_HD inline bool read_varint(const uint8_t* in, uint32_t avail, uint32_t* v, uint32_t* consumed) {
  uint32_t r = 0;
  for (uint32_t i = 0; i < kMaxVarintBytes && i < avail; ++i) {
    r |= uint32_t(in[i] & 0x7F) << (7 * i);
    if (!(in[i] & 0x80)) {
      if (i > 0 && in[i] == 0) return false;
      *v = r;
      *consumed = i + 1;
      return true;
    }
  }
  return false;
}

// The least the states and w0 of a RANS section of `streams` streams take (the encoders' bound for
// skipping rANS), and the bytes after its state area: w0 (two streams; words0: stream 0's words)
// and all the words.
ZIPNET_HD inline uint32_t min_rans_head_bytes(unsigned streams) {
  return min_state_area_bytes(kLanes * streams) + (streams == 2 ? 1 : 0);
}
ZIPNET_HD inline uint32_t rans_run_bytes(unsigned streams, uint32_t words0, uint32_t words) {
  return (streams == 2 ? varint_bytes(words0) : 0u) + 2 * words;
}

// Lane seeds (§4.2): the encoder starts lane l at L + a 16-bit seed holding 2 residual bytes,
// which the payload then leaves out; the decoder gets them back from its final states. Up to 64
// bytes a stream. Seeds are used only in blocks a decoder streaming 2 KiB at a time finishes
// with all seeded elements in its last piece: blocks of at most, or a multiple of, 2 KiB.
constexpr uint32_t kMaxSeedBytes = 2 * kLanes * kMaxStreams;
constexpr uint64_t kSeedPiece = 2048;

// §6: f[s] = max(1, floor((c[s]*M + n/2) / n)) for every symbol that occurs; then fix the sum to M.
// hist[s] are the counts, n their sum (> 0). Returns false only if n == 0.
ZIPNET_HD inline bool quantize_freqs(const uint32_t* hist, uint32_t n, uint32_t* freq) {
  if (n == 0) return false;
  uint32_t sum = 0;
  for (int s = 0; s < 256; ++s) {
    uint32_t f = 0;
    if (hist[s] != 0) {
      f = uint32_t((uint64_t(hist[s]) * kProbScale + n / 2) / n);
      if (f == 0) f = 1;
    }
    freq[s] = f;
    sum += f;
  }
  if (sum < kProbScale) {
    int best = 0;
    for (int s = 1; s < 256; ++s)
      if (freq[s] > freq[best]) best = s;  // strict: ties keep the lowest symbol
    freq[best] += kProbScale - sum;
  } else if (sum > kProbScale) {
    // Symbols in descending order of f (ties: lowest symbol first) each give up min(f-1, excess).
    // One pass always suffices (at most 256 symbols, M = 2048). Selection instead of a sort keeps
    // this STL-free; excess is usually cleared by the first (largest) symbol.
    uint32_t excess = sum - kProbScale;
    uint32_t done[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    while (excess > 0) {
      int best = -1;
      for (int s = 0; s < 256; ++s) {
        if (done[s >> 5] & (1u << (s & 31))) continue;
        if (freq[s] != 0 && (best < 0 || freq[s] > freq[best])) best = s;
      }
      if (best < 0) break;  // cannot happen: sum(f-1) >= excess
      done[best >> 5] |= 1u << (best & 31);
      uint32_t give = freq[best] - 1 < excess ? freq[best] - 1 : excess;
      freq[best] -= give;
      excess -= give;
    }
  }
  return true;
}

// Frequency table (§4.2): [lo][span-1] then entries for the symbols of [lo, hi) (hi = lo + span - 1;
// its frequency is implied: M minus the others). An entry is a frequency 1..0x7F in one byte, a
// frequency >= 0x80 in two ((f & 0x7F) | 0x80, f >> 7: the second byte is >= 1), one absent symbol
// (0x00), or a run of 2..129 absent symbols (0x80 | (run - 2), 0x00).
constexpr int kMaxZeroRun = 129;
ZIPNET_HD inline uint32_t freq_bytes(uint32_t f) { return f < 0x80 ? 1u : 2u; }
ZIPNET_HD inline void symbol_range(const uint32_t* freq, int* lo, int* hi) {
  *lo = 0;
  while (*lo < 255 && freq[*lo] == 0) ++*lo;
  *hi = 255;
  while (*hi > *lo && freq[*hi] == 0) --*hi;
}
// The absent symbols from s on that one entry covers, for an absent s whose run of absent symbols
// is [start, end) (end: the next present symbol, at most hi), or 0 when s is inside an earlier
// entry of the run. Runs are cut into entries of kMaxZeroRun from their start.
ZIPNET_HD inline int zero_entry_run_in(int s, int start, int end) {
  if ((s - start) % kMaxZeroRun) return 0;
  return end - s < kMaxZeroRun ? end - s : kMaxZeroRun;
}
// The same for an absent s in (lo, hi), finding its run by walking freq.
ZIPNET_HD inline int zero_entry_run(const uint32_t* freq, int s, int hi) {
  int start = s;
  while (freq[start - 1] == 0) --start;  // freq[lo] != 0 and s > lo
  int end = s + 1;
  while (end < hi && end - s < kMaxZeroRun && freq[end] == 0) ++end;
  return zero_entry_run_in(s, start, end);
}
// Bytes of a symbol's entry: its frequency f, or when f = 0 its zero_entry_run `run` (0 for the
// rest of a run). Lets GPU threads place entries with a scan.
ZIPNET_HD inline uint32_t freq_entry_bytes(uint32_t f, int run) {
  return f ? freq_bytes(f) : run == 0 ? 0u : run == 1 ? 1u : 2u;
}
// Writes a symbol's entry (freq_entry_bytes of it > 0) at out.
ZIPNET_HD inline void write_freq_entry(uint32_t f, int run, uint8_t* out) {
  if (f == 0) {
    out[0] = run == 1 ? 0 : uint8_t(0x80 | (run - 2));
    if (run > 1) out[1] = 0;
  } else if (f < 0x80) {
    out[0] = uint8_t(f);
  } else {
    out[0] = uint8_t(0x80 | (f & 0x7F));
    out[1] = uint8_t(f >> 7);
  }
}
// Bytes that symbol s adds to the table (0 outside [lo, hi)), and its entry.
ZIPNET_HD inline uint32_t table_entry_bytes(const uint32_t* freq, int s, int lo, int hi) {
  if (s < lo || s >= hi) return 0;
  return freq_entry_bytes(freq[s], freq[s] ? 0 : zero_entry_run(freq, s, hi));
}
ZIPNET_HD inline void write_table_entry(const uint32_t* freq, int s, int hi, uint8_t* out) {
  write_freq_entry(freq[s], freq[s] ? 0 : zero_entry_run(freq, s, hi), out);
}
// Serial writers walk each zero run once (table_entry_bytes is per symbol, for parallel writers).
ZIPNET_HD inline uint32_t zero_run_bytes(int run) {
  const int full = run / kMaxZeroRun, rest = run % kMaxZeroRun;
  return uint32_t(2 * full + (rest == 0 ? 0 : rest == 1 ? 1 : 2));
}
ZIPNET_HD inline uint32_t freq_table_size(const uint32_t* freq) {
  int lo, hi;
  symbol_range(freq, &lo, &hi);
  uint32_t size = 2;
  for (int s = lo; s < hi;) {
    if (freq[s]) {
      size += freq_bytes(freq[s++]);
      continue;
    }
    int run = 0;
    while (s + run < hi && freq[s + run] == 0) ++run;
    size += zero_run_bytes(run);
    s += run;
  }
  return size;
}
ZIPNET_HD inline uint32_t write_freq_table(const uint32_t* freq, uint8_t* out) {
  int lo, hi;
  symbol_range(freq, &lo, &hi);
  uint32_t k = 0;
  out[k++] = uint8_t(lo);
  out[k++] = uint8_t(hi - lo);
  for (int s = lo; s < hi;) {
    if (freq[s]) {
      write_freq_entry(freq[s], 0, out + k);
      k += freq_bytes(freq[s++]);
      continue;
    }
    int run = 0;
    while (s + run < hi && freq[s + run] == 0) ++run;
    for (int at = 0; at < run; at += kMaxZeroRun) {  // the entries of table_entry_bytes
      const int len = run - at < kMaxZeroRun ? run - at : kMaxZeroRun;
      write_freq_entry(0, len, out + k);
      k += freq_entry_bytes(0, len);
    }
    s += run;
  }
  return k;
}
// Parses a table from in[0..avail); fills freq[256] (zeros outside the range) and *consumed.
// Returns false if it overruns avail, the range passes 255, a run reaches hi, or the listed
// frequencies leave nothing (< 1) for hi.
ZIPNET_HD inline bool parse_freq_table(const uint8_t* in, uint32_t avail, uint32_t* freq,
                                       uint32_t* consumed) {
  if (avail < 2) return false;
  const uint32_t lo = in[0], span = uint32_t(in[1]) + 1;
  if (lo + span > 256) return false;
  for (int s = 0; s < 256; ++s) freq[s] = 0;
  uint32_t k = 2, sum = 0;
  for (uint32_t i = 0; i + 1 < span;) {  // entries cover symbols lo + i, i < span - 1
    if (k >= avail) return false;
    uint32_t b = in[k++];
    uint32_t run = 0;  // absent symbols this entry covers
    if (b == 0) {
      run = 1;
    } else if (b & 0x80) {
      if (k >= avail) return false;
      const uint32_t c = in[k++];
      if (c == 0) run = (b & 0x7F) + 2;
      else b = (b & 0x7F) | (c << 7);
    }
    if (run) {
      if (i + run + 1 > span) return false;
      i += run;
      continue;
    }
    freq[lo + i] = b;
    sum += b;
    if (sum >= kProbScale) return false;
    ++i;
  }
  freq[lo + span - 1] = kProbScale - sum;
  *consumed = k;
  return true;
}

// Cumulative frequencies: cum[s] = sum of freq below s.
ZIPNET_HD inline void cumulative(const uint32_t* freq, uint32_t* cum) {
  uint32_t c = 0;
  for (int s = 0; s < 256; ++s) {
    cum[s] = c;
    c += freq[s];
  }
}

// Decode-table entry for slot k of symbol s: symbol in bits 0..7, freq (1..2048) in bits 8..19,
// slot - cum[s] in bits 20..30. Then x' = freq * (x >> 11) + (slot - cum).
ZIPNET_HD inline uint32_t decode_entry(uint32_t s, uint32_t f, uint32_t k) {
  return s | (f << 8) | (k << 20);
}

// Encoder: a lane emits a word before coding s when x >= ((L >> PROB_BITS) << 16) * freq[s],
// i.e. when (x >> 21) >= freq[s] (same test, no 64-bit product).
constexpr unsigned kRenormShift = 32 - kProbBits;  // 21

// Encoder: x / f for every u32 x by one 32-bit multiply-high (Granlund and Montgomery's method
// with the add fix-up, as compilers divide by 7): the GPU encoder's division, which keeps the
// recurrence in 32-bit operations. q = (x + mulhi(x, magic)) >> post_shift with the sum taken in
// 33 bits (the same as the usual (t + ((x - t) >> 1)) >> (l - 1), in fewer dependent steps). f = 1
// is {0, 0}: q = x, so the encoder needs no special case.
struct RansDivisor {
  uint32_t magic;
  uint32_t post_shift;  // ceil(log2 f), 0..11
};
ZIPNET_HD inline RansDivisor rans_divisor(uint32_t f) {
  if (f <= 1) return {0, 0};
  uint32_t l = 1;  // ceil(log2 f)
  while ((1u << l) < f) ++l;
  return {uint32_t(((uint64_t((1u << l) - f)) << 32) / f + 1), l};
}
ZIPNET_HD inline uint32_t mulhi32(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return uint32_t((uint64_t(a) * b) >> 32);
#endif
}
// On the GPU, a funnel shift of the 33-bit sum, which reads only the low 5 bits of post_shift (the
// encoder keeps other constants above them in the same word).
ZIPNET_HD inline uint32_t rans_divide(uint32_t x, RansDivisor d) {
  const uint64_t sum = uint64_t(x) + mulhi32(x, d.magic);
#ifdef __CUDA_ARCH__
  return __funnelshift_r(uint32_t(sum), uint32_t(sum >> 32), d.post_shift);
#else
  return uint32_t(sum >> d.post_shift);
#endif
}

}  // namespace zipnet::codec::common
