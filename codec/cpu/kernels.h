// The CPU codec's hot loops behind one table of function pointers, so that the portable, AVX2 and
// AVX-512 versions can be picked at run time (dispatch.cpp) and compared in tests. Every version
// must produce exactly the same bytes as the portable one.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zipnet::codec::cpu {

// Per-symbol rANS encoder data for one block.
struct RansEncTable {
  uint32_t freq[256];
  uint32_t cum[256];
  uint32_t packed[256];  // freq | cum << 16 (for SIMD gathers)
  float rcp[256];        // the largest float <= 1 / freq (0 for absent symbols), for SIMD division
};

// One block's rANS encode (arguments of Kernels::rans_encode); nwords is the result.
struct RansEncodeJob {
  const uint8_t* sym;
  uint32_t n;
  const RansEncTable* t;
  uint32_t* states;
  uint16_t* words_end;
  uint32_t nwords;
};

// One block's rANS decode (arguments of Kernels::rans_decode).
struct RansDecodeJob {
  const uint32_t* table;
  uint32_t* states;  // in: start states; out: final states
  const uint8_t* words;
  uint32_t nwords;
  uint32_t n;
  uint8_t* sym;
  const uint32_t* freq;  // the block's 256 frequencies (rans_decode2 may decode from them instead
                         // of table), or nullptr
};

struct Kernels {
  const char* name;
  // Splits n elements (dtype 1..3) at src into symbols sym[n] and residual planes res[j][n].
  // Returns the OR of all residuals (to find all-zero planes).
  uint32_t (*split)(unsigned dtype, const uint8_t* src, uint32_t n, uint8_t* sym, uint8_t* const* res);
  // Joins n elements back into dst (dtype 1..3). res[j] points at n bytes (zeros for absent planes).
  void (*join)(unsigned dtype, const uint8_t* sym, const uint8_t* const* res, uint32_t n, uint8_t* dst);
  // Counts symbol occurrences into hist[256] (overwritten).
  void (*histogram)(const uint8_t* sym, uint32_t n, uint32_t* hist);
  // rANS encode (format §4.2): lanes start at states[] (L + seed); writes words backwards ending
  // at words_end, returns their count, and leaves the 32 final states in states.
  uint32_t (*rans_encode)(const uint8_t* sym, uint32_t n, const RansEncTable& t, uint32_t* states,
                          uint16_t* words_end);
  // 2..4 independent blocks at once (their dependency chains interleave); nullptr: none. Fills
  // each job's nwords.
  void (*rans_encode_group)(RansEncodeJob* jobs, unsigned count);
  // rANS decode: table is the 2048-entry slot table (common::decode_entry). words is little-endian
  // u16 data of nwords words. Returns false if the stream is corrupt (runs out of words, or leftover
  // words); leaves the final states in states (the caller checks them: block_codec take_seeds).
  bool (*rans_decode)(const uint32_t* table, uint32_t* states, const uint8_t* words,
                      uint32_t nwords, uint32_t n, uint8_t* sym);
  // Two independent blocks at once (their dependency chains interleave); nullptr: none. Sets
  // ok[0], ok[1] like rans_decode's result.
  void (*rans_decode2)(const RansDecodeJob& a, const RansDecodeJob& b, bool* ok);
  // XXH3-64 (seed 0) of the block checksums, built for this SIMD level.
  uint64_t (*xxh3)(const void* p, size_t n);
  // rans_decode2 decodes a block of at most this many distinct symbols from its freq alone (its
  // table need not be built); 0: it always reads the table.
  unsigned decode2_table_free = 0;
};

const Kernels& portable_kernels();
const Kernels* avx2_kernels();    // nullptr when this CPU lacks AVX2 (or the build lacks it)
const Kernels* avx512_kernels();  // nullptr when this CPU lacks AVX-512 F/BW/VL/VBMI/VBMI2

// The kernels encode/decode use now (chosen once, may be overridden by set_cpu_path()).
const Kernels& active_kernels();

}  // namespace zipnet::codec::cpu
