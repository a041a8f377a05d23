#include "plugin/pipeline/worker_pool.h"

namespace zipnet::pipeline {

WorkerPool::WorkerPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::submit(Job* job) {
  job->next = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (tail_) tail_->next = job;
    else head_ = job;
    tail_ = job;
  }
  cv_.notify_one();
}

void WorkerPool::loop() {
  for (;;) {
    Job* job;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [this] { return head_ || stop_; });
      if (!head_) return;  // stop requested and nothing left to run
      job = head_;
      head_ = job->next;
      if (!head_) tail_ = nullptr;
    }
    job->run(job);
  }
}

}  // namespace zipnet::pipeline
