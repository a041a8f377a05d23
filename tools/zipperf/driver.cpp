#include "driver.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "netns.h"
#include "oob.h"

namespace zipperf {

// ------------------------------------------------------------------ shared steps

std::string connect_and_accept(Plugin& plugin, void* send_ctx, int dev, void* handle, void** send_comm,
                               void* listen_comm, void** recv_comm, Clock::time_point deadline) {
  const bool want_send = send_comm != nullptr, want_recv = recv_comm != nullptr;
  if (want_send) *send_comm = nullptr;
  if (want_recv) *recv_comm = nullptr;
  uint64_t polls = 0;
  while ((want_send && *send_comm == nullptr) || (want_recv && *recv_comm == nullptr)) {
    if (want_send && *send_comm == nullptr) {
      void* dev_comm = nullptr;
      ncclResult_t r = plugin.connect(send_ctx, dev, handle, send_comm, &dev_comm);
      if (r != ncclSuccess) return fmt::format("connect returned {} (after {} polls)", result_name(r), polls);
      if (dev_comm != nullptr) return "connect set *sendDevComm, but no device offload was asked for";
    }
    if (want_recv && *recv_comm == nullptr) {
      void* dev_comm = nullptr;
      ncclResult_t r = plugin.accept(listen_comm, recv_comm, &dev_comm);
      if (r != ncclSuccess) return fmt::format("accept returned {} (after {} polls)", result_name(r), polls);
      if (dev_comm != nullptr) return "accept set *recvDevComm, but no device offload was asked for";
    }
    ++polls;
    if (Clock::now() > deadline)
      return fmt::format("connect/accept did not finish before the deadline ({} polls; sendComm {}, recvComm {})", polls,
                         want_send ? (*send_comm ? "set" : "NULL") : "-", want_recv ? (*recv_comm ? "set" : "NULL") : "-");
    if ((polls & 63) == 0) sched_yield();
  }
  return {};
}

std::string drive_all(std::span<Engine* const> engines, Clock::time_point deadline) {
  unsigned idle = 0;
  for (;;) {
    bool all_done = true, moved = false;
    for (Engine* e : engines) {
      if (!e->error().empty()) return e->error();
      if (e->done()) continue;
      all_done = false;
      moved |= e->step();
    }
    if (all_done) return {};
    if (moved) {
      idle = 0;
      continue;
    }
    if (++idle % 32 == 0) {
      if (Clock::now() > deadline) {
        std::string where;
        for (Engine* e : engines) where += (where.empty() ? "" : "; ") + e->progress_text();
        return "timed out: " + where;
      }
      sched_yield();  // NCCL's proxy yields when idle; on few cores the plugin's threads need the CPU
    }
  }
}

std::string drive(Engine* a, Engine* b, Clock::time_point deadline) {
  Engine* both[2];  // no allocation: latency mode calls this once per message
  size_t n = 0;
  if (a) both[n++] = a;
  if (b) both[n++] = b;
  return drive_all(std::span<Engine* const>(both, n), deadline);
}

double RunReport::gbps() const {
  return receiver.seconds > 0 ? static_cast<double>(receiver.bytes) * 8 / receiver.seconds / 1e9 : 0;
}

double RunReport::median_latency_us() const {
  if (receiver.latencies_us.empty()) return 0;
  std::vector<double> v = receiver.latencies_us;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// ------------------------------------------------------------------ child processes

namespace {

void apply_env(const EnvList& env) {
  for (const auto& [name, value] : env) {
    if (value)
      setenv(name.c_str(), value->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
}

// Children must die with their parent (no orphaned ends holding namespaces) and crash plainly
// (a test framework's fatal-signal handler must not run in a forked child).
void become_child() {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT}) signal(sig, SIG_DFL);
}

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t w = ::write(fd, s.data() + off, s.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    off += static_cast<size_t>(w);
  }
}

struct Child {
  pid_t pid = -1;
  int fd = -1;  // read end of its result pipe
  std::string out;
  bool eof = false;
  int status = 0;
  bool reaped = false;
};

// Forks a child that runs fn and writes its JSON to a pipe; `keep_fd` stays open in the child.
Child spawn(const EnvList& env, const std::function<nlohmann::json()>& fn, const std::vector<int>& close_in_child) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe failed: {}", std::strerror(errno)));
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    become_child();
    ::close(p[0]);
    for (int fd : close_in_child) ::close(fd);
    apply_env(env);
    nlohmann::json out;
    try {
      out = fn();
    } catch (const std::exception& e) {
      out = {{"ok", false}, {"error", std::string("exception: ") + e.what()}};
    }
    out["warnings"] = captured_warnings();
    write_all(p[1], out.dump());
    std::fflush(nullptr);
    _exit(0);  // no atexit handlers or static destructors of the parent's program in the child
  }
  ::close(p[1]);
  Child c;
  c.pid = pid;
  c.fd = p[0];
  return c;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended oddly";
}

// Reads every child's report until all are in or the deadline passes; once one reports failure,
// the others get a short grace period (they are probably waiting on it), then are killed.
void collect(std::vector<Child>& kids, Clock::time_point deadline) {
  Clock::time_point kill_at = deadline;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Child*> who;
    for (Child& c : kids)
      if (!c.eof) {
        fds.push_back({c.fd, POLLIN, 0});
        who.push_back(&c);
      }
    if (fds.empty()) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(kill_at - Clock::now()).count();
    if (left <= 0) {
      for (Child* c : who) kill(c->pid, SIGKILL);
      for (Child* c : who) {
        ::close(c->fd);
        c->eof = true;
      }
      break;
    }
    int r = ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left, 200)));
    if (r < 0 && errno != EINTR) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        who[i]->out.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(who[i]->fd);
        who[i]->eof = true;
        auto j = nlohmann::json::parse(who[i]->out, nullptr, false);
        bool failed = j.is_discarded() || !j.value("ok", false);
        if (failed) kill_at = std::min(kill_at, Clock::now() + std::chrono::seconds(2));
      }
    }
  }
  for (Child& c : kids) {
    if (waitpid(c.pid, &c.status, 0) == c.pid) c.reaped = true;
  }
}

// The JSON a child wrote, or an error object saying why there is none.
nlohmann::json report_of(const Child& c, const char* role, bool timed_out) {
  auto j = nlohmann::json::parse(c.out, nullptr, false);
  if (!c.out.empty() && !j.is_discarded()) return j;
  std::string why = c.reaped ? describe_status(c.status) : "could not be reaped";
  if (timed_out && WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGKILL)
    why = "was stopped: the run went past its deadline, or its peer had failed";
  return {{"ok", false}, {"error", fmt::format("the {} process {} before reporting", role, why)}};
}

SideReport side_from_json(const nlohmann::json& j) {
  SideReport s;
  s.ok = j.value("ok", false);
  s.error = j.value("error", std::string());
  s.abi = j.value("abi", 0);
  s.plugin_name = j.value("plugin_name", std::string());
  s.messages = j.value("messages", uint64_t{0});
  s.bytes = j.value("bytes", uint64_t{0});
  s.bytes_verified = j.value("bytes_verified", uint64_t{0});
  s.null_requests = j.value("null_requests", uint64_t{0});
  s.seconds = j.value("seconds", 0.0);
  s.failed_at_ns = j.value("failed_at_ns", int64_t{0});
  if (j.contains("latencies_us")) s.latencies_us = j["latencies_us"].get<std::vector<double>>();
  if (j.contains("warnings")) s.warnings = j["warnings"].get<std::vector<std::string>>();
  return s;
}

// One end of run_pair, inside its own process.
class End {
 public:
  End(const RunConfig& cfg, const Payload& payload, bool sender, int oob_fd)
      : cfg_(cfg), payload_(payload), sender_(sender), oob_(oob_fd),
        deadline_(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg.timeout_s))) {}

  nlohmann::json run() {
    std::string e = run_steps();
    out_["ok"] = e.empty();
    if (!e.empty()) {
      const char* role = sender_ ? "sender" : "receiver";
      out_["error"] = e.rfind(role, 0) == 0 ? e : fmt::format("{}: {}", role, e);
      // When both ends fail, the earlier failure is the cause (one host clock for both).
      out_["failed_at_ns"] = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
    }
    return out_;
  }

 private:
  std::string run_steps() {
    if (auto e = NetnsPair::enter(sender_ ? cfg_.netns_sender : cfg_.netns_receiver); !e.empty()) return e;
    std::string err;
    plugin_ = Plugin::open(cfg_.plugin_path, cfg_.abi, &err);
    if (!plugin_) return err;
    out_["abi"] = plugin_->abi_version();
    out_["plugin_name"] = plugin_->name();
    ncclResult_t r = plugin_->init(&ctx_, cfg_.comm_id, NCCL_NET_TRAFFIC_CLASS_UNDEF, nccl_logger());
    if (r != ncclSuccess) return fmt::format("init returned {}", result_name(r));
    int ndev = 0;
    if ((r = plugin_->devices(&ndev)) != ncclSuccess) return fmt::format("devices returned {}", result_name(r));
    if (ndev <= 0 || cfg_.dev >= ndev) return fmt::format("device {} asked for, the plugin has {}", cfg_.dev, ndev);
    Properties props;
    if ((r = plugin_->get_properties(cfg_.dev, &props)) != ncclSuccess)
      return fmt::format("getProperties returned {}", result_name(r));
    if (!(props.ptr_support & NCCL_PTR_HOST)) return "the device does not support host memory (ptrSupport lacks NCCL_PTR_HOST)";
    if (auto e = connect(); !e.empty()) return e;
    if (auto e = transfer(); !e.empty()) return e;
    return teardown();
  }

  // One connection per channel, as NCCL opens them: listen/accept (receiver) or connect (sender)
  // cfg_.conns times, each with its own handle out of band; then an engine per connection.
  std::string connect() {
    for (int k = 0; k < std::max(cfg_.conns, 1); ++k) {
      void* comm = nullptr;
      if (auto e = connect_one(&comm); !e.empty()) return e;
      comms_.push_back(comm);
      if (sender_)
        engines_.push_back(std::make_unique<SendEngine>(*plugin_, comm, cfg_.spec, payload_));
      else
        engines_.push_back(std::make_unique<RecvEngine>(*plugin_, comm, cfg_.spec, payload_));
      if (auto e = engines_.back()->register_buffers(); !e.empty()) return e;
    }
    return oob_.barrier(deadline_);
  }

  std::string connect_one(void** comm) {
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
    if (!sender_) {
      void* listen_comm = nullptr;
      ncclResult_t r = plugin_->listen(ctx_, cfg_.dev, handle, &listen_comm);
      if (r != ncclSuccess) return fmt::format("listen returned {}", result_name(r));
      if (listen_comm == nullptr) return "listen succeeded but left listenComm NULL";
      if (auto e = oob_.send(handle, sizeof handle, deadline_); !e.empty()) return e;
      if (auto e = connect_and_accept(*plugin_, nullptr, cfg_.dev, nullptr, nullptr, listen_comm, comm, deadline_);
          !e.empty())
        return e;
      if ((r = plugin_->close_listen(listen_comm)) != ncclSuccess) return fmt::format("closeListen returned {}", result_name(r));
    } else {
      if (auto e = oob_.recv(handle, sizeof handle, deadline_); !e.empty()) return e;
      if (auto e = connect_and_accept(*plugin_, ctx_, cfg_.dev, handle, comm, nullptr, nullptr, deadline_); !e.empty())
        return e;
    }
    return {};
  }

  std::vector<Engine*> engines() const {
    std::vector<Engine*> v;
    for (const auto& e : engines_) v.push_back(e.get());
    return v;
  }

  std::string run_messages(uint64_t first, uint64_t count, bool first_phase) {
    for (const auto& e : engines_) e->start(first, count);
    if (first_phase && cfg_.isend_before_irecv) {
      // The sender posts every isend it can before the receiver has posted a single irecv.
      char token = 'P';
      if (sender_) {
        for (const auto& e : engines_) {
          static_cast<SendEngine*>(e.get())->post_what_it_can();
          if (!e->error().empty()) return e->error();
        }
        if (auto e = oob_.send(&token, 1, deadline_); !e.empty()) return e;
      } else if (auto e = oob_.recv(&token, 1, deadline_); !e.empty()) {
        return e;
      }
    }
    return drive_all(engines(), deadline_);
  }

  std::string transfer() {
    if (cfg_.mode == Mode::Latency) return latency();
    if (cfg_.warmup > 0) {
      if (auto e = run_messages(0, cfg_.warmup, true); !e.empty()) return e;
      if (auto e = oob_.barrier(deadline_); !e.empty()) return e;
    }
    for (const auto& e : engines_) e->reset_counters();
    Clock::time_point start = Clock::now();
    if (auto e = run_messages(cfg_.warmup, cfg_.iters, cfg_.warmup == 0); !e.empty()) return e;
    EngineCounters sum;  // all connections together; the run ends with the last completion
    Clock::time_point last_done = start;
    for (const auto& e : engines_) {
      const EngineCounters& c = e->counters();
      sum.completed += c.completed;
      sum.bytes += c.bytes;
      sum.bytes_verified += c.bytes_verified;
      sum.null_requests += c.null_requests;
      last_done = std::max(last_done, c.last_done);
    }
    out_["messages"] = sum.completed;
    out_["bytes"] = sum.bytes;
    out_["bytes_verified"] = sum.bytes_verified;
    out_["null_requests"] = sum.null_requests;
    out_["seconds"] = std::chrono::duration<double>(last_done - start).count();
    return oob_.barrier(deadline_);
  }

  // One message at a time: the receiver posts its irecv, says "ready"; the sender stamps the time,
  // isends and reports the stamp; the receiver stamps completion. Both ends share one host clock.
  std::string latency() {
    Engine* const engine = engines_.front().get();  // latency runs on the first connection
    std::vector<double> lat;
    uint64_t verified = 0;
    for (uint64_t i = 0; i < cfg_.warmup + cfg_.iters; ++i) {
      engine->start(i, 1);
      int64_t t0_ns = 0;
      char token = 'R';
      if (sender_) {
        if (auto e = oob_.recv(&token, 1, deadline_); !e.empty()) return e;
        if (auto e = drive(engine, nullptr, deadline_); !e.empty()) return e;
        t0_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(engine->counters().last_post.time_since_epoch()).count();
        if (auto e = oob_.send(&t0_ns, sizeof t0_ns, deadline_); !e.empty()) return e;
      } else {
        engine->step();  // posts the irecv
        if (!engine->error().empty()) return engine->error();
        if (auto e = oob_.send(&token, 1, deadline_); !e.empty()) return e;
        if (auto e = drive(engine, nullptr, deadline_); !e.empty()) return e;
        if (auto e = oob_.recv(&t0_ns, sizeof t0_ns, deadline_); !e.empty()) return e;
        const int64_t t1_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(engine->counters().last_test_done.time_since_epoch()).count();
        if (i >= cfg_.warmup) lat.push_back(static_cast<double>(t1_ns - t0_ns) / 1e3);
      }
    }
    const EngineCounters& c = engine->counters();
    verified = c.bytes_verified;
    out_["messages"] = c.completed;
    out_["bytes"] = c.bytes;
    out_["bytes_verified"] = verified;
    out_["null_requests"] = c.null_requests;
    if (!sender_) out_["latencies_us"] = lat;
    return oob_.barrier(deadline_);
  }

  std::string teardown() {
    for (const auto& e : engines_)
      if (auto err = e->deregister_buffers(); !err.empty()) return err;
    engines_.clear();
    for (void* comm : comms_) {
      ncclResult_t r = sender_ ? plugin_->close_send(comm) : plugin_->close_recv(comm);
      if (r != ncclSuccess) return fmt::format("{} returned {}", sender_ ? "closeSend" : "closeRecv", result_name(r));
    }
    ncclResult_t r;
    if ((r = plugin_->finalize(ctx_)) != ncclSuccess) return fmt::format("finalize returned {}", result_name(r));
    plugin_.reset();  // dlclose, as NCCL does when its last communicator goes
    return {};
  }

  const RunConfig& cfg_;
  const Payload& payload_;
  const bool sender_;
  Oob oob_;
  Clock::time_point deadline_;
  std::unique_ptr<Plugin> plugin_;
  void* ctx_ = nullptr;
  std::vector<void*> comms_;                       // every connection, in order
  std::vector<std::unique_ptr<Engine>> engines_;   // one per connection (latency mode uses the first)
  nlohmann::json out_ = nlohmann::json::object();
};

}  // namespace

RunReport run_pair(const RunConfig& config, const Payload& payload) {
  RunReport report;
  if (std::string e = config.spec.check(); !e.empty()) {
    report.error = e;
    return report;
  }
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) {
    report.error = fmt::format("socketpair failed: {}", std::strerror(errno));
    return report;
  }
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(config.timeout_s + 5));
  std::vector<Child> kids;
  try {
    kids.push_back(spawn(config.env, [&] { return End(config, payload, false, sp[0]).run(); }, {sp[1]}));
    kids.push_back(spawn(config.env, [&] { return End(config, payload, true, sp[1]).run(); }, {sp[0]}));
  } catch (const std::exception& e) {
    report.error = e.what();
  }
  ::close(sp[0]);
  ::close(sp[1]);
  if (kids.size() < 2) {
    for (Child& c : kids) kill(c.pid, SIGKILL);
  }
  collect(kids, deadline);
  if (kids.size() < 2) return report;
  const bool timed_out = Clock::now() >= deadline;
  report.receiver = side_from_json(report_of(kids[0], "receiver", timed_out));
  report.sender = side_from_json(report_of(kids[1], "sender", timed_out));
  report.ok = report.receiver.ok && report.sender.ok;
  if (!report.ok) {
    // The end that failed first names the cause; the other usually only saw its peer vanish. An
    // end that died without a report (crash, kill) sorts last unless it is the only failure.
    const SideReport* first = !report.receiver.ok ? &report.receiver : &report.sender;
    if (!report.receiver.ok && !report.sender.ok) {
      auto when = [](const SideReport& s) { return s.failed_at_ns ? s.failed_at_ns : INT64_MAX; };
      first = when(report.sender) < when(report.receiver) ? &report.sender : &report.receiver;
      if (when(report.sender) == INT64_MAX && when(report.receiver) == INT64_MAX &&
          report.receiver.error.find("before reporting") != std::string::npos)
        first = &report.sender;
    }
    report.error = first->error;
  }
  return report;
}

ChildOutcome run_in_child(const EnvList& env, double timeout_s, const std::function<nlohmann::json()>& fn) {
  ChildOutcome out;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::vector<Child> kids;
  try {
    kids.push_back(spawn(env, [&] {
      nlohmann::json v = fn();
      return nlohmann::json{{"ok", true}, {"value", v}};
    }, {}));
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  collect(kids, deadline);
  nlohmann::json j = report_of(kids[0], "child", Clock::now() >= deadline);
  out.ok = j.value("ok", false);
  out.error = j.value("error", std::string());
  if (j.contains("value")) out.value = j["value"];
  if (j.contains("warnings")) out.warnings = j["warnings"].get<std::vector<std::string>>();
  return out;
}

// ------------------------------------------------------------------ in-process pair

std::unique_ptr<LocalPair> LocalPair::create(const std::string& plugin_path, Abi abi, double timeout_s,
                                             std::string* error) {
  std::unique_ptr<LocalPair> p(new LocalPair());
  p->plugin_ = Plugin::open(plugin_path, abi, error);
  if (!p->plugin_) return nullptr;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  Plugin& pl = *p->plugin_;
  ncclResult_t r;
  if ((r = pl.init(&p->recv_ctx_, 1, NCCL_NET_TRAFFIC_CLASS_UNDEF, nccl_logger())) != ncclSuccess) {
    *error = fmt::format("init (receiver context) returned {}", result_name(r));
    p->closed_ = true;
    return nullptr;
  }
  if ((r = pl.init(&p->send_ctx_, 2, NCCL_NET_TRAFFIC_CLASS_UNDEF, nccl_logger())) != ncclSuccess) {
    *error = fmt::format("init (sender context) returned {}", result_name(r));
    pl.finalize(p->recv_ctx_);
    p->closed_ = true;
    return nullptr;
  }
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  void* listen_comm = nullptr;
  if ((r = pl.listen(p->recv_ctx_, 0, handle, &listen_comm)) != ncclSuccess || listen_comm == nullptr) {
    *error = r != ncclSuccess ? fmt::format("listen returned {}", result_name(r)) : "listen left listenComm NULL";
    return nullptr;  // the destructor finalizes
  }
  *error = connect_and_accept(pl, p->send_ctx_, 0, handle, &p->send_comm_, listen_comm, &p->recv_comm_, deadline);
  ncclResult_t rl = pl.close_listen(listen_comm);
  if (!error->empty()) return nullptr;
  if (rl != ncclSuccess) {
    *error = fmt::format("closeListen returned {}", result_name(rl));
    return nullptr;
  }
  return p;
}

std::string LocalPair::transfer(const TransferSpec& spec, const Payload& payload, uint64_t count, double timeout_s,
                                bool isend_before_irecv, uint64_t* bytes_verified) {
  if (std::string e = spec.check(); !e.empty()) return e;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  SendEngine send(*plugin_, send_comm_, spec, payload);
  RecvEngine recv(*plugin_, recv_comm_, spec, payload);
  std::string e = send.register_buffers();
  if (e.empty()) e = recv.register_buffers();
  if (e.empty()) {
    send.start(0, count);
    recv.start(0, count);
    if (isend_before_irecv) send.post_what_it_can();
    e = send.error().empty() ? drive(&recv, &send, deadline) : send.error();
  }
  std::string e2 = send.deregister_buffers();
  std::string e3 = recv.deregister_buffers();
  if (bytes_verified) *bytes_verified = recv.counters().bytes_verified;
  return !e.empty() ? e : !e2.empty() ? e2 : e3;
}

std::string LocalPair::close() {
  if (closed_) return {};
  closed_ = true;
  std::string err;
  auto note = [&](const char* what, ncclResult_t r) {
    if (r != ncclSuccess && err.empty()) err = fmt::format("{} returned {}", what, result_name(r));
  };
  if (send_comm_) note("closeSend", plugin_->close_send(send_comm_));
  if (recv_comm_) note("closeRecv", plugin_->close_recv(recv_comm_));
  if (send_ctx_) note("finalize (sender context)", plugin_->finalize(send_ctx_));
  if (recv_ctx_) note("finalize (receiver context)", plugin_->finalize(recv_ctx_));
  send_comm_ = recv_comm_ = send_ctx_ = recv_ctx_ = nullptr;
  return err;
}

LocalPair::~LocalPair() {
  if (plugin_) close();
}

std::string default_plugin_path(const char* argv0) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string self = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string(argv0 ? argv0 : "");
  std::string dir = self.substr(0, self.find_last_of('/'));
  // build/tools/zipperf/zipperf -> build/plugin/libnccl-net-zipnet.so
  std::string path = dir + "/../../plugin/libnccl-net-zipnet.so";
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) ? std::string(resolved) : path;
}

}  // namespace zipperf
