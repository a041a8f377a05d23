// The adaptive policy shared by every send connection of this process to one peer host.
//
// NCCL opens one connection per channel (often 8 or more to the same peer), and they share the
// path to it; compression pays when the shared path is the bottleneck, which no single
// connection can measure alone (adaptive.h says why). Connections to the same peer host, with
// the same tuning switch, get the same Adaptive; it lives while any of them does.
#pragma once

#include <memory>
#include <string>

#include "plugin/pipeline/adaptive.h"

namespace zipnet::pipeline {

// The host part of a transport description such as "10.0.0.2:43123" or "fe80::1:43123".
std::string peer_host(const std::string& describe);

// The policy for connections to `host`; the caller attach()es it and detach()es it when done.
std::shared_ptr<Adaptive> link_policy(const std::string& host, bool enabled);

}  // namespace zipnet::pipeline
