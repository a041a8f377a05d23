// Raw-socket tools for the fault tests: find the plugin's listening sockets in this process, play a
// stray client against them, and turn a process's exit into TCP resets.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <vector>

namespace rel {

// Addresses (connectable: a wildcard bind is reported as loopback) of this process's TCP sockets in
// LISTEN state, from /proc/self/fd and /proc/net/tcp{,6}.
std::vector<sockaddr_storage> own_listen_addrs();
std::string to_string(const sockaddr_storage& a);

// Connects a plain TCP socket to `addr` (blocking, bounded by timeout_s); -1 on failure.
int tcp_connect(const sockaddr_storage& addr, double timeout_s);
// Writes everything or fails (MSG_NOSIGNAL: a stray client must not die of SIGPIPE either).
bool send_bytes(int fd, const void* p, size_t n);
// Writes what the socket takes without blocking; returns the bytes written.
size_t send_some(int fd, const void* p, size_t n);

// Sets SO_LINGER {on, 0} on every TCP socket of this process, so closing them (or exiting) sends
// RST instead of FIN. Returns how many sockets it armed.
int arm_reset_on_close();

// Shuts down the sending direction (FIN) of this process's first connected TCP socket, leaving
// every other socket open: a peer that closes one stream of a connection. Returns false if there
// was none.
bool half_close_one_socket();

}  // namespace rel
