// Two network namespaces joined by a veth pair, shaped with tc, for running the two ends of a
// zipperf run as if on two hosts behind a RATE link (e.g. 10gbit).
//
// Names carry our pid and a random tag so parallel runs never collide. Addresses are a private
// /30 (10.213.x.1 and .2) that exists only inside the two namespaces; nothing is routed anywhere
// else. The destructor always removes both namespaces (which removes the veth pair); a SIGINT or
// SIGTERM handler does the same before the process exits.
#pragma once

#include <memory>
#include <string>

namespace zipperf {

class NetnsPair {
 public:
  // Empty error and a pair on success. Needs root, `ip` and `tc`. On failure, whatever was created
  // is removed again before returning.
  static std::unique_ptr<NetnsPair> create(const std::string& rate, std::string* error);
  ~NetnsPair();
  const std::string& sender_ns() const { return ns_[0]; }
  const std::string& receiver_ns() const { return ns_[1]; }
  const std::string& sender_ip() const { return ip_[0]; }
  const std::string& receiver_ip() const { return ip_[1]; }
  static const char* ifname() { return "zpveth0"; }  // the same name inside both namespaces
  // Bytes the sender's veth has transmitted (wire bytes incl. headers); -1 if unreadable.
  long long sender_tx_bytes() const;
  // Why namespaces cannot be used here (not root, no ip/tc), or empty if they can.
  static std::string unavailable_reason();
  // Moves the calling thread into namespace `name` (empty: stays); sockets it opens, and processes
  // it forks, live there. Returns an error text, or empty on success.
  static std::string enter(const std::string& name);
  // Sets the veth end inside namespace `side` (0: sender, 1: receiver) down or up: with it down,
  // that end's host is gone without a FIN or RST. Returns an error text, or empty on success.
  std::string set_link(int side, bool up) const;

 private:
  NetnsPair() = default;
  void remove();
  std::string ns_[2];
  std::string ip_[2];
  bool created_[2] = {false, false};
};

}  // namespace zipperf
