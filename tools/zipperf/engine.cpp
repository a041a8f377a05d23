#include "engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace zipperf {

size_t TransferSpec::max_size() const {
  size_t m = 0;
  for (size_t s : sizes) m = std::max(m, s);
  return m;
}

std::string TransferSpec::check() const {
  if (sizes.empty()) return "no message sizes";
  if (inflight < 1 || inflight > NCCL_NET_MAX_REQUESTS)
    return fmt::format("inflight {} is outside 1..{}", inflight, NCCL_NET_MAX_REQUESTS);
  for (size_t s : sizes) {
    if (s != whole_lines(shape, s))
      return fmt::format("{} messages must be whole lines; {} bytes is not", shape_name(shape), s);
    if (s > (1ull << 31) - 1) return fmt::format("message size {} does not fit test()'s int", s);
  }
  return {};
}

// Marks a buffer cheaply: the first 64 bytes of every 4 KiB and the last 64 bytes. Any read of a
// stale region of 4 KiB or more, or any write that skips one, crosses a mark.
static void poison_stripes(uint8_t* p, size_t n, uint8_t value) {
  for (size_t off = 0; off < n; off += 4096) std::memset(p + off, value, std::min<size_t>(64, n - off));
  if (n > 64) std::memset(p + n - 64, value, 64);
}

SlotBuffers::SlotBuffers(int slots, size_t slot_bytes) {
  stride_ = (std::max<size_t>(slot_bytes, 1) + 4095) / 4096 * 4096;
  total_ = stride_ * static_cast<size_t>(slots);
  base_ = static_cast<uint8_t*>(std::aligned_alloc(4096, total_));
  if (base_ == nullptr) throw std::bad_alloc();
  std::memset(base_, 0, total_);
}

SlotBuffers::~SlotBuffers() { std::free(base_); }

Engine::Engine(Plugin& plugin, void* comm, const TransferSpec& spec, const Payload& payload, const char* role)
    : plugin_(plugin),
      comm_(comm),
      spec_(spec),
      payload_(payload),
      role_(role),
      buffers_(spec.inflight, spec.max_size() + spec.posted_extra),
      requests_(spec.inflight, nullptr) {}

Engine::~Engine() = default;

void Engine::fail(std::string what) {
  if (error_.empty()) error_ = fmt::format("{}: {}", role_, what);
}

std::string Engine::register_buffers() {
  ncclResult_t r = plugin_.reg_mr(comm_, buffers_.base(), buffers_.total(), NCCL_PTR_HOST, &buffers_.mhandle);
  if (r != ncclSuccess) return fmt::format("{}: regMr({} bytes, NCCL_PTR_HOST) returned {}", role_, buffers_.total(), result_name(r));
  if (buffers_.mhandle == nullptr) return fmt::format("{}: regMr succeeded but left mhandle NULL", role_);
  return {};
}

std::string Engine::deregister_buffers() {
  if (buffers_.mhandle == nullptr) return {};
  ncclResult_t r = plugin_.dereg_mr(comm_, buffers_.mhandle);
  buffers_.mhandle = nullptr;
  if (r != ncclSuccess) return fmt::format("{}: deregMr returned {}", role_, result_name(r));
  return {};
}

void Engine::start(uint64_t first, uint64_t count) {
  first_ = first;
  count_ = count;
  posted_ = completed_ = 0;
  std::fill(requests_.begin(), requests_.end(), nullptr);
}

ncclResult_t Engine::test_request(void* req, int* done, int* size) {
  ++counters_.test_calls;
  *done = 0;
  *size = -1;
  return plugin_.test(req, done, size);
}

std::string Engine::progress_text() const {
  return fmt::format("{} posted {}/{} completed {}/{} (NULL-request retries {})", role_, posted_, count_,
                     completed_, count_, counters_.null_requests);
}

// ---------------------------------------------------------------- sender

SendEngine::SendEngine(Plugin& plugin, void* send_comm, const TransferSpec& spec, const Payload& payload)
    : Engine(plugin, send_comm, spec, payload, "sender"), filled_(spec.inflight, false) {}

bool SendEngine::try_post() {
  if (posted_ == count_ || posted_ - completed_ == static_cast<uint64_t>(spec_.inflight)) return false;
  const uint64_t index = first_ + posted_;
  const int slot = static_cast<int>(index % spec_.inflight);
  const size_t size = spec_.size_of(index);
  if (!filled_[slot]) {  // the GPU fills a slot once; NULL-request retries resend the same bytes
    payload_.fill(index, size, spec_.shape, buffers_.slot(slot));
    filled_[slot] = true;
    counters_.last_post = Clock::now();
  }
  if (posted_ == 0 && counters_.first_post == Clock::time_point{}) counters_.first_post = Clock::now();
  void* req = nullptr;
  ncclResult_t r = plugin_.isend(comm_, buffers_.slot(slot), size, spec_.tag, buffers_.mhandle, &req);
  if (r != ncclSuccess) {
    fail(fmt::format("isend(message {}, {} bytes) returned {}", index, size, result_name(r)));
    return false;
  }
  if (req == nullptr) {
    ++counters_.null_requests;
    return false;
  }
  requests_[slot] = req;
  ++posted_;
  return true;
}

uint64_t SendEngine::post_what_it_can() {
  uint64_t before = posted_;
  while (error_.empty() && try_post()) {
  }
  return posted_ - before;
}

bool SendEngine::step() {
  if (!error_.empty()) return false;
  bool moved = false;
  while (try_post()) moved = true;
  if (!error_.empty() || completed_ == posted_) return moved;
  // Test only the oldest outstanding send, as sendProxyProgress does.
  const uint64_t index = first_ + completed_;
  const int slot = static_cast<int>(index % spec_.inflight);
  int done = 0, size = -1;
  ncclResult_t r = test_request(requests_[slot], &done, &size);
  if (r != ncclSuccess) {
    fail(fmt::format("test(send message {}) returned {}", index, result_name(r)));
    return false;
  }
  if (!done) return moved;
  counters_.last_test_done = Clock::now();
  const size_t sent = spec_.size_of(index);
  if (size != static_cast<int>(sent)) {
    fail(fmt::format("test(send message {}) reported {} bytes; {} were sent", index, size, sent));
    return false;
  }
  // NCCL reuses the slot the moment the send is done: scribble over it, so a plugin that still
  // reads it sends marks the receiver will not match.
  poison_stripes(buffers_.slot(slot), sent, 0xEE);
  filled_[slot] = false;
  requests_[slot] = nullptr;
  ++completed_;
  ++counters_.completed;
  counters_.bytes += sent;
  counters_.last_done = Clock::now();
  return true;
}

// ---------------------------------------------------------------- receiver

RecvEngine::RecvEngine(Plugin& plugin, void* recv_comm, const TransferSpec& spec, const Payload& payload)
    : Engine(plugin, recv_comm, spec, payload, "receiver"), expected_(spec.max_size()) {}

bool RecvEngine::try_post() {
  if (posted_ == count_ || posted_ - completed_ == static_cast<uint64_t>(spec_.inflight)) return false;
  const uint64_t index = first_ + posted_;
  const int slot = static_cast<int>(index % spec_.inflight);
  const size_t posted_size = spec_.max_size() + spec_.posted_extra;
  // Marks in what the sender will fill (bytes the plugin never writes stay marked), and every
  // byte past it (the plugin must not write there).
  const size_t will_send = spec_.size_of(index);
  if (spec_.verify) {
    poison_stripes(buffers_.slot(slot), will_send, kPoison);
    std::memset(buffers_.slot(slot) + will_send, kPoison, posted_size - will_send);
  }
  if (posted_ == 0 && counters_.first_post == Clock::time_point{}) counters_.first_post = Clock::now();
  void* data = buffers_.slot(slot);
  size_t size = posted_size;
  int tag = spec_.tag;
  void* mh = buffers_.mhandle;
  // NCCL presets the request for LL/LL128 (optional receive completion) and treats non-NULL as
  // posted, so the plugin must always write it.
  void* req = reinterpret_cast<void*>(0x1);
  ncclResult_t r = plugin_.irecv(comm_, 1, &data, &size, &tag, &mh, &req);
  if (r != ncclSuccess) {
    fail(fmt::format("irecv(message {}, {} bytes) returned {}", index, posted_size, result_name(r)));
    return false;
  }
  if (req == reinterpret_cast<void*>(0x1)) {
    fail(fmt::format("irecv(message {}) returned success without writing *request (left NCCL's 0x1)", index));
    return false;
  }
  if (req == nullptr) {
    ++counters_.null_requests;
    return false;
  }
  requests_[slot] = req;
  ++posted_;
  return true;
}

bool RecvEngine::check_message(uint64_t index, int slot, int reported) {
  const size_t sent = spec_.size_of(index);
  if (reported != static_cast<int>(sent)) {
    fail(fmt::format("test(receive message {}) reported {} bytes; the sender sent {} (posted {})", index, reported,
                     sent, spec_.max_size() + spec_.posted_extra));
    return false;
  }
  if (!spec_.verify) return true;
  const uint8_t* got = buffers_.slot(slot);
  if (!payload_.matches(index, sent, spec_.shape, got, expected_)) {
    payload_.fill(index, sent, spec_.shape, expected_.data());  // to say where and how it differs
    size_t at = 0;
    while (got[at] == expected_[at]) ++at;
    size_t wrong = 0;
    for (size_t i = at; i < sent; ++i) wrong += got[i] != expected_[i];
    fail(fmt::format("message {} ({} bytes, {}): {} bytes differ, the first at offset {} (got 0x{:02x}, expected 0x{:02x})",
                     index, sent, shape_name(spec_.shape), wrong, at, got[at], expected_[at]));
    return false;
  }
  const size_t posted_size = spec_.max_size() + spec_.posted_extra;
  for (size_t i = sent; i < posted_size; ++i)
    if (got[i] != kPoison) {
      fail(fmt::format("message {}: the plugin wrote past the {} bytes sent (offset {} of the {}-byte receive buffer)",
                       index, sent, i, posted_size));
      return false;
    }
  counters_.bytes_verified += sent;
  return true;
}

bool RecvEngine::step() {
  if (!error_.empty()) return false;
  bool moved = false;
  while (try_post()) moved = true;
  if (!error_.empty() || completed_ == posted_) return moved;
  const uint64_t index = first_ + completed_;
  const int slot = static_cast<int>(index % spec_.inflight);
  int done = 0, size = -1;
  ncclResult_t r = test_request(requests_[slot], &done, &size);
  if (r != ncclSuccess) {
    fail(fmt::format("test(receive message {}) returned {}", index, result_name(r)));
    return false;
  }
  if (!done) return moved;
  counters_.last_test_done = Clock::now();
  if (!check_message(index, slot, size)) return false;
  requests_[slot] = nullptr;
  ++completed_;
  ++counters_.completed;
  counters_.bytes += spec_.size_of(index);
  counters_.last_done = Clock::now();
  return true;
}

}  // namespace zipperf
