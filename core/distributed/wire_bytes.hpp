#pragma once
// The bytes this process has written to its TCP sockets, read from the kernel's own
// count for each (TCP_INFO: sent, less retransmitted, plus still queued): what gloo and
// the store really put on the wire, which `plait verify` sets against what the core counted ([debug]
// count_wire_bytes). Sockets closed since are not in it; gloo keeps its connections.
#include <cstdint>

namespace plait {

int64_t tcp_bytes_sent();

}  // namespace plait
