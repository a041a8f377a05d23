#include "payload.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

namespace zipperf {

const char* shape_name(Shape s) {
  switch (s) {
    case Shape::Flat: return "flat";
    case Shape::LL: return "LL";
    case Shape::LL128: return "LL128";
  }
  return "?";
}

size_t whole_lines(Shape s, size_t size) {
  switch (s) {
    case Shape::Flat: return size;
    case Shape::LL: return size / 16 * 16;
    case Shape::LL128: return size / 128 * 128;
  }
  return size;
}

Payload Payload::from_files(const std::vector<std::string>& files, std::string* error) {
  Payload p;
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      *error = "cannot open input file " + f;
      return Payload{};
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.empty()) {
      *error = "input file " + f + " is empty";
      return Payload{};
    }
    p.pool_.insert(p.pool_.end(), bytes.begin(), bytes.end());
    p.description_ += (p.description_.empty() ? "" : " ") + f.substr(f.find_last_of('/') + 1);
  }
  if (p.pool_.empty()) *error = "no input files";
  return p;
}

Payload Payload::random(size_t bytes, uint64_t seed) {
  Payload p;
  p.pool_.resize(std::max<size_t>(bytes, 64));
  uint64_t x = seed;
  for (size_t i = 0; i < p.pool_.size(); i += 8) {
    // splitmix64: fast, and good enough that no codec finds structure in it
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::memcpy(&p.pool_[i], &z, std::min<size_t>(8, p.pool_.size() - i));
  }
  p.description_ = "random bytes";
  return p;
}

void Payload::copy_data(uint64_t offset, size_t n, uint8_t* dst) const {
  size_t pos = offset % pool_.size();
  while (n > 0) {
    size_t take = std::min(n, pool_.size() - pos);
    std::memcpy(dst, &pool_[pos], take);
    dst += take;
    n -= take;
    pos = 0;
  }
}

bool Payload::matches(uint64_t index, size_t size, Shape shape, const uint8_t* got,
                      std::vector<uint8_t>& scratch) const {
  if (size == 0) return true;
  if (shape != Shape::Flat || pool_.empty()) {
    if (scratch.size() < size) scratch.resize(size);
    fill(index, size, shape, scratch.data());
    return std::memcmp(got, scratch.data(), size) == 0;
  }
  size_t pos = (index * static_cast<uint64_t>(size)) % pool_.size() / 64 * 64;
  size_t n = size;
  while (n > 0) {
    size_t take = std::min(n, pool_.size() - pos);
    if (std::memcmp(got, &pool_[pos], take) != 0) return false;
    got += take;
    n -= take;
    pos = 0;
  }
  return true;
}

void Payload::fill(uint64_t index, size_t size, Shape shape, uint8_t* dst) const {
  if (size == 0 || pool_.empty()) return;
  uint64_t offset = (index * static_cast<uint64_t>(size)) % pool_.size() / 64 * 64;
  switch (shape) {
    case Shape::Flat:
      copy_data(offset, size, dst);
      return;
    case Shape::LL: {
      const uint32_t flag = static_cast<uint32_t>(index + 1) ? static_cast<uint32_t>(index + 1) : 1;
      for (size_t line = 0; line + 16 <= size; line += 16) {
        uint32_t d[2];
        copy_data(offset + line / 2, 8, reinterpret_cast<uint8_t*>(d));
        const uint32_t words[4] = {d[0], flag, d[1], flag};
        std::memcpy(dst + line, words, 16);
      }
      return;
    }
    case Shape::LL128: {
      const uint64_t flag = index + 1;
      for (size_t line = 0; line + 128 <= size; line += 128) {
        copy_data(offset + line / 128 * 120, 120, dst + line);
        std::memcpy(dst + line + 120, &flag, 8);
      }
      return;
    }
  }
}

}  // namespace zipperf
