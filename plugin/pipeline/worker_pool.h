// Codec worker threads shared by every comm of the process (ZIPNET_THREADS). Jobs are intrusive
// (embedded in the sub-chunk slots that own them), so submitting one allocates nothing.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace zipnet::pipeline {

struct Job {
  void (*run)(Job*) = nullptr;
  Job* next = nullptr;
};

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();  // finishes queued jobs, joins every thread
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  void submit(Job* job);
  int threads() const { return int(threads_.size()); }

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  Job* head_ = nullptr;
  Job* tail_ = nullptr;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace zipnet::pipeline
