#include "transport/tcp/interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>

namespace zipnet::tcp {

bool ifname_matches(std::string_view spec, std::string_view ifname) {
  bool exclude = false, exact = false;
  if (!spec.empty() && spec[0] == '^') { exclude = true; spec.remove_prefix(1); }
  if (!spec.empty() && spec[0] == '=') { exact = true; spec.remove_prefix(1); }
  bool hit = false;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    // NCCL allows "name:port"; the port part does not apply to sockets, ignore it.
    item = item.substr(0, item.find(':'));
    if (!item.empty() && (exact ? ifname == item : ifname.substr(0, item.size()) == item)) hit = true;
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return exclude ? !hit : hit;
}

std::string format_address(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN + 8] = "?";
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

namespace {

int read_speed(const std::string& ifname) {
  // stdio rather than iostreams: keeps libstdc++'s stream statics out of the plugin.
  int speed = 0;
  if (FILE* f = std::fopen(("/sys/class/net/" + ifname + "/speed").c_str(), "r")) {
    if (std::fscanf(f, "%d", &speed) != 1) speed = 0;
    std::fclose(f);
  }
  return speed > 0 ? speed : 10000;  // virtual NICs and lo report nothing useful; NCCL's default
}

std::vector<Interface> scan(std::string_view spec, bool include_lo, size_t max_count) {
  std::vector<Interface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (int pass = 0; pass < 2; ++pass) {  // pass 0: IPv4, pass 1: IPv6 for names not yet taken
    for (ifaddrs* ia = list; ia; ia = ia->ifa_next) {
      if (!ia->ifa_addr || !(ia->ifa_flags & IFF_UP)) continue;
      int family = ia->ifa_addr->sa_family;
      if (family != (pass == 0 ? AF_INET : AF_INET6)) continue;
      if (family == AF_INET6 &&
          IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(ia->ifa_addr)->sin6_addr))
        continue;
      std::string_view name = ia->ifa_name;
      if (spec.empty()) {
        bool is_lo = name.substr(0, 2) == "lo";
        if (name.substr(0, 6) == "docker" || is_lo != include_lo) continue;
      } else if (!ifname_matches(spec, name)) {
        continue;
      }
      bool taken = false;
      for (const Interface& i : out) taken |= i.name == name;
      if (taken || out.size() >= max_count) continue;
      Interface itf;
      itf.name = std::string(name);
      itf.addr_len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      std::memcpy(&itf.addr, ia->ifa_addr, itf.addr_len);
      itf.printable = format_address(ia->ifa_addr);
      itf.speed_mbps = read_speed(itf.name);
      out.push_back(std::move(itf));
    }
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

std::vector<Interface> find_interfaces(std::string_view spec, size_t max_count) {
  std::vector<Interface> out = scan(spec, false, max_count);
  if (out.empty() && spec.empty()) out = scan(spec, true, max_count);
  return out;
}

}  // namespace zipnet::tcp
