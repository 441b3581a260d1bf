// For tests of HTTP clients: a TCP port on 127.0.0.1 that nothing listens on right now
// (bound to port 0, read, closed), for a server the test starts or for a refused connection.
#ifndef BOOSTER_OPERATOR_KUBE_TEST_PORT_H_
#define BOOSTER_OPERATOR_KUBE_TEST_PORT_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace booster::kube::testing {

inline int UnusedLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

}  // namespace booster::kube::testing

#endif  // BOOSTER_OPERATOR_KUBE_TEST_PORT_H_
