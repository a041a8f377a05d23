#include "plugin/pipeline/link_policy.h"

#include <map>
#include <mutex>
#include <utility>

namespace zipnet::pipeline {

std::string peer_host(const std::string& describe) {
  // The TCP transport describes a peer as address + ":" + port (IPv6 without brackets).
  const size_t colon = describe.rfind(':');
  return colon == std::string::npos ? describe : describe.substr(0, colon);
}

namespace {
// Weak references: the connections own their policy; a link nobody uses any more is forgotten
// (and a later connection to that host starts measuring afresh).
struct Registry {
  std::mutex mu;
  std::map<std::pair<std::string, bool>, std::weak_ptr<Adaptive>> links;
};
Registry& registry() {
  static Registry r;  // destroyed with the plugin at dlclose, after every comm is gone
  return r;
}
}  // namespace

std::shared_ptr<Adaptive> link_policy(const std::string& host, bool enabled) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  for (auto it = r.links.begin(); it != r.links.end();)  // drop expired entries as we go
    it = it->second.expired() ? r.links.erase(it) : std::next(it);
  std::weak_ptr<Adaptive>& slot = r.links[{host, enabled}];
  std::shared_ptr<Adaptive> p = slot.lock();
  if (!p) {
    p = std::make_shared<Adaptive>(enabled, host);
    slot = p;
  }
  return p;
}

}  // namespace zipnet::pipeline
