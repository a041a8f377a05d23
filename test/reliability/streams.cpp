#include "streams.h"

#include <cstring>
#include <deque>
#include <memory>
#include <vector>

namespace rel {
namespace {

struct Slot {
  std::unique_ptr<uint8_t[]> buf;
  void* mh = nullptr;
};

struct Pending {
  int slot;
  void* request;
  uint64_t seq;
};

// Shared loop: `post` starts message seq in a slot (false: back-pressure, try later); `finish`
// handles a completed message (size reported by test()).
template <class Post, class Finish, class Close>
StreamResult run(zipperf::Plugin& p, void* comm, const StreamSpec& spec, const char* post_step, Post post,
                 Finish finish, Close close) {
  StreamResult res;
  std::vector<Slot> slots(size_t(spec.inflight));
  std::vector<int> free_slots;
  for (int i = 0; i < spec.inflight; ++i) {
    slots[size_t(i)].buf.reset(new uint8_t[spec.size ? spec.size : 1]);
    const ncclResult_t r = p.reg_mr(comm, slots[size_t(i)].buf.get(), spec.size, NCCL_PTR_HOST, &slots[size_t(i)].mh);
    if (r != ncclSuccess) {
      res.result = r, res.step = "regMr", res.end = Clock::now();
      for (int j = 0; j < i; ++j) p.dereg_mr(comm, slots[size_t(j)].mh);
      const auto c0 = Clock::now();
      res.close_result = close();
      res.close_seconds = seconds_since(c0);
      return res;
    }
    free_slots.push_back(i);
  }
  std::deque<Pending> pending;
  uint64_t next_seq = 0;
  auto last_progress = Clock::now();
  while (spec.count == 0 || res.completed < spec.count) {
    while (!free_slots.empty() && (spec.count == 0 || next_seq < spec.count)) {
      const int s = free_slots.back();
      void* request = nullptr;
      const ncclResult_t r = post(slots[size_t(s)], next_seq, &request);
      if (r != ncclSuccess) {
        res.result = r, res.step = post_step, res.end = Clock::now();
        goto out;
      }
      if (!request) break;  // back-pressure: NCCL retries later
      free_slots.pop_back();
      pending.push_back({s, request, next_seq++});
    }
    if (!pending.empty()) {
      int done = 0, size = -1;
      const ncclResult_t r = p.test(pending.front().request, &done, &size);
      if (r != ncclSuccess) {
        res.result = r, res.step = "test", res.end = Clock::now();
        goto out;
      }
      if (done) {
        const Pending d = pending.front();
        pending.pop_front();
        if (!finish(slots[size_t(d.slot)], d.seq, size)) ++res.corrupted;
        free_slots.push_back(d.slot);
        ++res.completed;
        res.end = last_progress = Clock::now();
        if (spec.on_complete) spec.on_complete(res.completed);
        continue;
      }
    }
    if (seconds_since(last_progress) > spec.stall_s) {
      res.result = ncclTimeout, res.step = pending.empty() ? post_step : "test", res.end = Clock::now();
      goto out;
    }
    std::this_thread::yield();
  }
out:
  if (spec.before_close) spec.before_close();
  // Requests still pending after an error are abandoned, as NCCL does before it closes the comm.
  for (Slot& s : slots) p.dereg_mr(comm, s.mh);
  const auto c0 = Clock::now();
  res.close_result = close();
  res.close_seconds = seconds_since(c0);
  return res;  // the buffers are freed only now
}

}  // namespace

StreamResult stream_send(zipperf::Plugin& p, void* send_comm, const StreamSpec& spec) {
  return run(
      p, send_comm, spec, "isend",
      [&](Slot& s, uint64_t seq, void** request) {
        fill_message(s.buf.get(), spec.size, spec.content, seq);
        *request = nullptr;
        return p.isend(send_comm, s.buf.get(), spec.size, /*tag=*/0, s.mh, request);
      },
      [&](Slot&, uint64_t, int) { return true; }, [&] { return p.close_send(send_comm); });
}

StreamResult stream_recv(zipperf::Plugin& p, void* recv_comm, const StreamSpec& spec) {
  std::unique_ptr<uint8_t[]> expected(new uint8_t[spec.size ? spec.size : 1]);
  return run(
      p, recv_comm, spec, "irecv",
      [&](Slot& s, uint64_t, void** request) {
        std::memset(s.buf.get(), 0xA5, spec.size);  // stale bytes must not pass for the message
        *request = reinterpret_cast<void*>(0x1);
        void* bufs[1] = {s.buf.get()};
        size_t sizes[1] = {spec.size};
        int tags[1] = {0};
        void* mhs[1] = {s.mh};
        return p.irecv(recv_comm, 1, bufs, sizes, tags, mhs, request);
      },
      [&](Slot& s, uint64_t seq, int size) {
        fill_message(expected.get(), spec.size, spec.content, seq);
        return size == int(spec.size) && std::memcmp(s.buf.get(), expected.get(), spec.size) == 0;
      },
      [&] { return p.close_recv(recv_comm); });
}

}  // namespace rel
