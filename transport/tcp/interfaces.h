// Network interface discovery and NCCL's interface-list syntax (NCCL_SOCKET_IFNAME):
// "eth,ib" = name prefixes; "^docker,lo" = exclude prefixes; "=eth0" = exact names ("^=" too).
#pragma once

#include <sys/socket.h>

#include <string>
#include <string_view>
#include <vector>

namespace zipnet::tcp {

// True when ifname is selected by spec. An empty spec selects nothing (callers apply defaults).
bool ifname_matches(std::string_view spec, std::string_view ifname);

struct Interface {
  std::string name;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::string printable;
  int speed_mbps = 10000;
};

// Up interfaces with an address (IPv4 preferred, else a global IPv6), in system order.
// spec empty: all except lo* and docker*, falling back to lo when nothing else exists.
std::vector<Interface> find_interfaces(std::string_view spec, size_t max_count);

std::string format_address(const sockaddr* sa);

}  // namespace zipnet::tcp
