#include "distributed/wire_bytes.hpp"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace plait {

int64_t tcp_bytes_sent() {
  int64_t sent = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string name = entry.path().filename().string();
    char* end = nullptr;
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (end == name.c_str() || *end != '\0') continue;
    tcp_info info{};
    socklen_t length = sizeof(info);
    // Anything but a TCP socket (a file, a pipe, the directory's own fd) refuses it.
    if (getsockopt(static_cast<int>(fd), IPPROTO_TCP, TCP_INFO, &info, &length) != 0) continue;
    if (length >= offsetof(tcp_info, tcpi_bytes_retrans) + sizeof(info.tcpi_bytes_retrans)) {
      // Written by the process, sent or still queued: a backend's send is done when its
      // bytes are in the kernel's queue, which may go out after the operation ended.
      sent += static_cast<int64_t>(info.tcpi_bytes_sent - info.tcpi_bytes_retrans + info.tcpi_notsent_bytes);
    }
  }
  return sent;
}

}  // namespace plait
