// The two ends of a fault test: this process (under test, asserting with Catch2) and a forked peer.
// The peer reports what it saw back over the channel as one line, "RESULT step completed corrupted".
#pragma once

#include <string>
#include <vector>

#include "harness.h"
#include "streams.h"

namespace rel {

// Forks a peer that connects to the handle this process sends it, then streams `spec` messages
// (count 0: until an error or until it is killed). If `before_exit` is given, the peer sends its
// report and runs it when the stream ends, with the comm still open (e.g. to reset it); otherwise
// it closes the comm and then reports.
Peer spawn_sender(const StreamSpec& spec, const std::vector<std::string>& env = {},
                  std::function<void()> before_exit = {});
// Forks a peer that listens, sends its handle here, accepts and receives `spec` messages.
Peer spawn_receiver(const StreamSpec& spec, const std::vector<std::string>& env = {},
                    std::function<void()> before_exit = {});

// This side of the connection to a peer from spawn_sender: listen, ship the handle, accept.
// Returns the accept result; *recv_comm is set on success.
ncclResult_t accept_from(Net& net, Peer& peer, void** recv_comm, double timeout_s = 20);
// This side of the connection to a peer from spawn_receiver: get its handle, connect.
ncclResult_t connect_to(Net& net, Peer& peer, void** send_comm, double timeout_s = 20);

// The peer's one-line report (empty if it sent none within timeout_s).
std::string peer_report(Peer& peer, double timeout_s);

// One line per fault for the record (docs/reliability.md), printed to stdout:
// FAULT <name>: <result> at <step> after <seconds> s; completed <n>, corrupted <n>; WARN: <last warning>
void record(const std::string& name, const StreamResult& r, double detect_s);

// True when `r` is an error a plugin may give for a broken peer connection.
bool is_peer_error(ncclResult_t r);

}  // namespace rel
