// What the messages carry: windows cut from a pool of bytes (real tensor files, cycled, or random
// bytes), optionally laid out as NCCL LL or LL128 lines with in-line flags.
//
// Both ends build the same Payload (the fork copies it), so the receiver can regenerate any message
// from its index and compare every byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace zipperf {

// Flat: plain data (NCCL Simple). LL: 16-byte lines {d1, flag, d2, flag} with 4-byte flags.
// LL128: 128-byte lines of 120 data bytes and an 8-byte flag. The flag is message index + 1, like
// NCCL's step + 1, so it is never 0.
enum class Shape { Flat, LL, LL128 };
const char* shape_name(Shape s);
// Message sizes of LL/LL128 must be whole lines; rounds down to one.
size_t whole_lines(Shape s, size_t size);

class Payload {
 public:
  // Concatenates the files; fails (empty pool, error set) on a missing or empty file.
  static Payload from_files(const std::vector<std::string>& files, std::string* error);
  // Uniform random bytes from a fixed seed: nothing to compress.
  static Payload random(size_t bytes, uint64_t seed);

  // Writes message `index` of `size` bytes into dst. Message i starts where message i-1 ended in the
  // pool (64-byte aligned, so element boundaries stay put), wrapping around the end.
  void fill(uint64_t index, size_t size, Shape shape, uint8_t* dst) const;
  // True if `got` holds exactly message `index` of `size` bytes. Flat messages are compared with
  // the pool in place; LL/LL128 ones are regenerated into scratch (resized as needed) first.
  bool matches(uint64_t index, size_t size, Shape shape, const uint8_t* got, std::vector<uint8_t>& scratch) const;
  size_t pool_bytes() const { return pool_.size(); }
  const std::string& description() const { return description_; }

 private:
  void copy_data(uint64_t offset, size_t n, uint8_t* dst) const;  // cyclic read of the pool
  std::vector<uint8_t> pool_;
  std::string description_;
};

}  // namespace zipperf
