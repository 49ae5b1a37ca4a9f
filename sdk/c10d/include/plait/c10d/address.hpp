#pragma once
// The address of this host on the route to another (the job's store host): what the
// other ranks can reach this one by, for a c10d backend's device (gloo's
// createDeviceForHostname). Header-only, for comm plugins.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "plait/sdk/error.hpp"

namespace plait::c10d_comm {

// Opens a UDP socket towards `host` (no packet is sent) and reads the local end's address.
inline std::string local_address_towards(const std::string& host, int port, const std::string& plugin) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  PLAIT_CHECK(rc == 0 && found != nullptr, concat(plugin, ": cannot resolve ", host, ": ", gai_strerror(rc)),
              "check MASTER_ADDR");
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  std::string address;
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char buf[INET_ADDRSTRLEN];
      address = ::inet_ntop(AF_INET, &local.sin_addr, buf, sizeof(buf));
    }
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  PLAIT_CHECK(!address.empty(), concat(plugin, ": no local interface routes to ", host),
              "set the plugin's network interface option, if it has one, to the interface to use");
  return address;
}

}  // namespace plait::c10d_comm
