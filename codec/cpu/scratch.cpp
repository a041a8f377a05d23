#include "cpu/scratch.h"

#include "common/rans.h"

namespace zipnet::codec::cpu {

void Scratch::reserve(size_t block_bytes) {
  if (sym.size() >= block_bytes) return;
  gathered.resize(block_bytes);
  sym.resize(block_bytes + 64);
  sym2.resize(block_bytes + 64);
  for (auto& e : enc) {
    e.gathered.resize(block_bytes);
    e.sym.resize(block_bytes + 64);
    for (auto& r : e.res) r.resize(block_bytes);
    e.words.resize(block_bytes + 64);  // at most one word per symbol, plus SIMD slack
  }
  zeros.assign(block_bytes + 64, 0);
  table.resize(common::kProbScale);
  table2.resize(common::kProbScale);
}

Scratch& thread_scratch() {
  thread_local Scratch s;
  return s;
}

}  // namespace zipnet::codec::cpu
