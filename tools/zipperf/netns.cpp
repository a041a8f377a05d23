#include "netns.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace zipperf {
namespace {

// Runs a command without a shell; returns its exit status (127 if it could not start). Output
// goes to /dev/null unless the command fails, in which case stderr is kept for the message.
int run(const std::vector<std::string>& argv, std::string* err_text = nullptr) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char tmpl[] = "/tmp/zipperf-netns-XXXXXX";
  int errfd = mkstemp(tmpl);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  if (errfd >= 0) posix_spawn_file_actions_adddup2(&fa, errfd, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  int status = 127 << 8;
  if (rc == 0) waitpid(pid, &status, 0);
  if (errfd >= 0) {
    if (err_text) {
      char buf[512] = {};
      ssize_t n = pread(errfd, buf, sizeof buf - 1, 0);
      *err_text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
      while (!err_text->empty() && err_text->back() == '\n') err_text->pop_back();
    }
    close(errfd);
    unlink(tmpl);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Names of live namespaces, for the signal handler (fixed storage: no allocation in a handler).
char g_live[2][64];
std::atomic<bool> g_handler_installed{false};

void delete_ns_raw(const char* name) {
  if (name[0] == '\0') return;
  pid_t pid = fork();
  if (pid == 0) {
    execlp("ip", "ip", "netns", "delete", name, static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid > 0) waitpid(pid, nullptr, 0);
}

void on_signal(int sig) {
  delete_ns_raw(g_live[0]);
  delete_ns_raw(g_live[1]);
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

std::string NetnsPair::unavailable_reason() {
  if (geteuid() != 0) return "network namespaces need root (run as root, as CI does)";
  if (run({"ip", "-V"}) != 0) return "the `ip` command (iproute2) is not installed";
  if (run({"tc", "-V"}) != 0) return "the `tc` command (iproute2) is not installed";
  std::string err;
  std::string probe = fmt::format("zpprobe{}", getpid());
  if (run({"ip", "netns", "add", probe}, &err) != 0) return "cannot create a network namespace: " + err;
  run({"ip", "netns", "delete", probe});
  return {};
}

std::unique_ptr<NetnsPair> NetnsPair::create(const std::string& rate, std::string* error) {
  std::unique_ptr<NetnsPair> p(new NetnsPair());
  std::random_device rd;
  const unsigned tag = rd() % 100000;
  const unsigned subnet = rd() % 64;  // 10.213.<subnet*4>.0/30: any value works, the pair is isolated
  p->ns_[0] = fmt::format("zipperf-{}-{}-s", getpid(), tag);
  p->ns_[1] = fmt::format("zipperf-{}-{}-r", getpid(), tag);
  p->ip_[0] = fmt::format("10.213.{}.1", subnet * 4);
  p->ip_[1] = fmt::format("10.213.{}.2", subnet * 4);
  const std::string veth_s = fmt::format("zps{}", tag), veth_r = fmt::format("zpr{}", tag);

  if (!g_handler_installed.exchange(true)) {
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
  }
  std::string err;
  auto step = [&](const std::vector<std::string>& cmd) {
    if (!error->empty()) return;
    if (run(cmd, &err) != 0) {
      std::string line;
      for (const std::string& a : cmd) line += (line.empty() ? "" : " ") + a;
      *error = fmt::format("`{}` failed: {}", line, err);
    }
  };
  error->clear();
  for (int i = 0; i < 2; ++i) {
    step({"ip", "netns", "add", p->ns_[i]});
    if (error->empty()) {
      p->created_[i] = true;
      std::snprintf(g_live[i], sizeof g_live[i], "%s", p->ns_[i].c_str());
    }
  }
  step({"ip", "link", "add", veth_s, "type", "veth", "peer", "name", veth_r});
  step({"ip", "link", "set", veth_s, "netns", p->ns_[0]});
  step({"ip", "link", "set", veth_r, "netns", p->ns_[1]});
  const std::string* vnames[2] = {&veth_s, &veth_r};
  // The burst must hold a whole GSO packet (64 KiB) and about a millisecond at the rate.
  for (int i = 0; i < 2; ++i) {
    step({"ip", "-n", p->ns_[i], "link", "set", *vnames[i], "name", ifname()});
    step({"ip", "-n", p->ns_[i], "addr", "add", p->ip_[i] + "/30", "dev", ifname()});
    step({"ip", "-n", p->ns_[i], "link", "set", ifname(), "up"});
    step({"ip", "-n", p->ns_[i], "link", "set", "lo", "up"});
    step({"tc", "-n", p->ns_[i], "qdisc", "add", "dev", ifname(), "root", "tbf", "rate", rate, "burst", "2mb",
          "latency", "20ms"});
  }
  if (!error->empty()) {
    p->remove();
    return nullptr;
  }
  return p;
}

std::string NetnsPair::enter(const std::string& name) {
  if (name.empty()) return {};
  std::string path = "/var/run/netns/" + name;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot open network namespace {}: {}", path, std::strerror(errno));
  int r = setns(fd, CLONE_NEWNET);
  int err = errno;
  ::close(fd);
  if (r != 0) return fmt::format("setns({}) failed: {}", name, std::strerror(err));
  return {};
}

std::string NetnsPair::set_link(int side, bool up) const {
  std::string err;
  if (run({"ip", "-n", ns_[side], "link", "set", ifname(), up ? "up" : "down"}, &err) != 0)
    return "`ip link set` failed: " + err;
  return {};
}

long long NetnsPair::sender_tx_bytes() const {
  // sysfs shows the namespace of the reader's mount, so ask `ip` inside the namespace.
  char tmpl[] = "/tmp/zipperf-tx-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 1);
    execlp("ip", "ip", "-n", ns_[0].c_str(), "-s", "-j", "link", "show", "dev", ifname(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  char buf[8192] = {};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  unlink(tmpl);
  if (n <= 0) return -1;
  // ip -s -j prints {"stats64":{"rx":{...},"tx":{"bytes":N,...}}}
  const char* tx = std::strstr(buf, "\"tx\":{\"bytes\":");
  if (tx == nullptr) return -1;
  return std::atoll(tx + std::strlen("\"tx\":{\"bytes\":"));
}

void NetnsPair::remove() {
  for (int i = 0; i < 2; ++i) {
    if (!created_[i]) continue;
    std::string err;
    if (run({"ip", "netns", "delete", ns_[i]}, &err) != 0)
      std::fprintf(stderr, "zipperf: could not delete network namespace %s: %s\n", ns_[i].c_str(), err.c_str());
    created_[i] = false;
    g_live[i][0] = '\0';
  }
}

NetnsPair::~NetnsPair() { remove(); }

}  // namespace zipperf
