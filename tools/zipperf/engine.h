// The data path of one connection, driven the way NCCL's proxy progress thread drives a plugin.
//
// Sender (sendProxyProgress): as soon as a slot is filled, isend it (a NULL request means "not now":
// retry on the next step); at most `inflight` sends outstanding; test only the OLDEST; when it is
// done, the slot is reused at once (we poison it, so a plugin still reading it sends garbage that
// the receiver then catches).
// Receiver (recvProxyProgress): pre-post irecv for every free slot (up to `inflight`), with
// *request preset to 0x1 as NCCL does for LL/LL128, so a plugin that forgets to write it is caught;
// test in order; on done check the reported size and every byte, and that nothing past the sent
// size was written; then poison the slot and post it again.
// Engines never block: step() does what can be done now, so one thread can drive both ends of a
// loopback pair, or each process drives its own end.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "payload.h"
#include "plugin_api.h"

namespace zipperf {

struct TransferSpec {
  std::vector<size_t> sizes{1 << 20};  // message i carries sizes[i % sizes.size()] bytes
  size_t posted_extra = 0;             // irecv posts max(sizes) + this (a receive larger than the send)
  int inflight = 8;                    // NCCL_STEPS
  Shape shape = Shape::Flat;
  int tag = 0;                         // NCCL uses the sender's rank
  bool verify = true;                  // compare every received byte (off only to measure the driver)
  size_t max_size() const;
  size_t size_of(uint64_t index) const { return sizes[index % sizes.size()]; }
  // Empty when fine; otherwise why the spec cannot be run (e.g. LL sizes not whole lines).
  std::string check() const;
};

using Clock = std::chrono::steady_clock;

// Host buffers for `slots` messages of `slot_bytes`, registered as NCCL_PTR_HOST in one regMr call
// (NCCL registers each protocol buffer once, then sends from slices of it).
class SlotBuffers {
 public:
  SlotBuffers(int slots, size_t slot_bytes);
  ~SlotBuffers();
  uint8_t* slot(int i) { return base_ + static_cast<size_t>(i) * stride_; }
  size_t total() const { return total_; }
  uint8_t* base() { return base_; }
  void* mhandle = nullptr;

 private:
  uint8_t* base_ = nullptr;
  size_t stride_ = 0;
  size_t total_ = 0;
};

struct EngineCounters {
  uint64_t completed = 0;      // messages done
  uint64_t bytes = 0;          // payload bytes of completed messages
  uint64_t bytes_verified = 0; // bytes compared equal (receiver)
  uint64_t null_requests = 0;  // isend/irecv returned NULL and were retried
  uint64_t test_calls = 0;
  Clock::time_point first_post{};
  Clock::time_point last_done{};
  Clock::time_point last_post{};       // just before the first isend/irecv attempt of the newest message
  Clock::time_point last_test_done{};  // when test() last said done, before any checking
  double seconds() const { return std::chrono::duration<double>(last_done - first_post).count(); }
};

class Engine {
 public:
  virtual ~Engine();
  // regMr the slot buffers on the comm. Returns an error text, empty on success.
  std::string register_buffers();
  std::string deregister_buffers();
  // Runs messages [first, first + count) next; call step() until done() or error().
  void start(uint64_t first, uint64_t count);
  virtual bool step() = 0;  // true if something moved
  bool done() const { return completed_ == count_ && error_.empty(); }
  const std::string& error() const { return error_; }
  const EngineCounters& counters() const { return counters_; }
  void reset_counters() { counters_ = EngineCounters{}; }
  // Where things stand, for timeout messages.
  std::string progress_text() const;

 protected:
  Engine(Plugin& plugin, void* comm, const TransferSpec& spec, const Payload& payload, const char* role);
  ncclResult_t test_request(void* req, int* done, int* size);
  void fail(std::string what);
  Plugin& plugin_;
  void* comm_;
  TransferSpec spec_;
  const Payload& payload_;
  const char* role_;
  SlotBuffers buffers_;
  std::vector<void*> requests_;  // per slot, NULL when free
  uint64_t first_ = 0, count_ = 0, posted_ = 0, completed_ = 0;
  EngineCounters counters_;
  std::string error_;
};

class SendEngine : public Engine {
 public:
  SendEngine(Plugin& plugin, void* send_comm, const TransferSpec& spec, const Payload& payload);
  bool step() override;
  // Tries to post everything it may before any irecv exists (the "isend before irecv" case);
  // returns how many isends the plugin accepted.
  uint64_t post_what_it_can();

 private:
  bool try_post();
  std::vector<bool> filled_;  // slot holds message posted_ (kept across NULL retries)
};

class RecvEngine : public Engine {
 public:
  RecvEngine(Plugin& plugin, void* recv_comm, const TransferSpec& spec, const Payload& payload);
  bool step() override;

 private:
  bool try_post();
  bool check_message(uint64_t index, int slot, int reported);
  std::vector<uint8_t> expected_;
  static constexpr uint8_t kPoison = 0xA5;
};

}  // namespace zipperf
