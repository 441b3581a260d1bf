// Third-party servers from Debian run under LD_PRELOAD=libbooster.so, each next to a
// baseline run of the same server, asserting what a user would see: the backlog in
// `ss -ltn`, TCP_NODELAY on the server's own socket (read from the peer side through
// pidfd_getfd), thread and worker affinity in /proc, and that the server still answers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "booster/control.h"
#include "runtime/test_support.h"

namespace booster::runtime {
namespace {

using testing::AllowedCpus;
using testing::ChildPids;
using testing::ConnectLoopback;
using testing::ListenBacklog;
using testing::ParseList;
using testing::PeerSocketOption;
using ::testing::StartsWith;
using testing::Subprocess;
using testing::TempDir;
using testing::ThreadCpus;
using testing::WaitFor;

using Env = std::map<std::string, std::string>;

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// Sends `request` on a fresh connection and returns the first line of the answer.
std::string Exchange(int port, const std::string& request) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string answer;
  char buf[512];
  ssize_t n;
  while (answer.find("\r\n") == std::string::npos && (n = read(fd, buf, sizeof(buf))) > 0) {
    answer.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return answer.substr(0, answer.find("\r\n"));
}

// TCP_NODELAY as the server sees it on the connection we open (searched in `pids`).
std::optional<int> ServerNodelay(const std::vector<pid_t>& pids, int client) {
  std::optional<int> value;
  WaitFor([&] {
    for (pid_t pid : pids) {
      value = PeerSocketOption(pid, client, IPPROTO_TCP, TCP_NODELAY);
      if (value) return true;
    }
    return false;
  });
  return value;
}

// Every thread of pid pinned to a single CPU; returns the CPUs used (empty if not).
std::set<int> PinnedCpus(pid_t pid) {
  std::set<int> used;
  for (const auto& [tid, list] : ThreadCpus(pid)) {
    std::vector<int> cpus = ParseList(list);
    if (cpus.size() != 1) return {};
    used.insert(cpus[0]);
  }
  return used;
}

class ThirdPartyTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(testing::LibPath().empty()) << "BOOSTER_LIB not set"; }
  static Env Boosted(Env env) {
    env["LD_PRELOAD"] = testing::LibPath();
    return env;
  }
  TempDir dir_;
};

// ---------------------------------------------------------------------------------------
// Python's http.server: listens with a backlog of 5 and never sets TCP_NODELAY.

constexpr char kPython[] = "/usr/bin/python3";

struct Server {
  std::unique_ptr<Subprocess> process;
  int port = -1;
};

Server StartPython(const std::string& dir, const Env& env) {
  Server s;
  s.process = std::make_unique<Subprocess>(Subprocess::Options{
      .argv = {kPython, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", dir},
      .env = env});
  // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
  std::string line = s.process->ReadLine().value_or("");
  if (sscanf(line.c_str(), "Serving HTTP on 127.0.0.1 port %d", &s.port) != 1) {
    ADD_FAILURE() << "python did not start: " << line << s.process->Stderr();
  }
  return s;
}

class PythonHttpServerTest : public ThirdPartyTest {
 protected:
  void SetUp() override {
    ThirdPartyTest::SetUp();
    if (!Executable(kPython)) GTEST_SKIP() << kPython << " missing";
    std::ofstream(dir_.path() + "/index.html") << "hello\n";
  }
};

TEST_F(PythonHttpServerTest, BacklogFloorRaisesTheListenQueue) {
  Server plain = StartPython(dir_.path(), {});
  Server boosted = StartPython(dir_.path(), Boosted({{"BOOSTER_LISTEN_BACKLOG", "4096"}}));
  EXPECT_EQ(ListenBacklog(plain.port), 5);
  EXPECT_EQ(ListenBacklog(boosted.port), std::min(4096, testing::Somaxconn()));
  EXPECT_EQ(Exchange(boosted.port, "GET / HTTP/1.0\r\n\r\n"), "HTTP/1.0 200 OK");
}

TEST_F(PythonHttpServerTest, TcpNodelayOnTheServersAcceptedSocket) {
  Server plain = StartPython(dir_.path(), {});
  Server boosted = StartPython(dir_.path(), Boosted({{"BOOSTER_TCP_NODELAY", "1"}}));
  int a = ConnectLoopback(plain.port);
  int b = ConnectLoopback(boosted.port);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_EQ(ServerNodelay({plain.process->pid()}, a), 0);
  EXPECT_EQ(ServerNodelay({boosted.process->pid()}, b), 1);
  close(a);
  close(b);
}

TEST_F(PythonHttpServerTest, HandlerThreadsArePinned) {
  Server boosted = StartPython(dir_.path(), Boosted({{"BOOSTER_THREADS", "pin"}}));
  // A connection without a request keeps its handler thread alive.
  int client = ConnectLoopback(boosted.port);
  ASSERT_GE(client, 0);
  // A new thread starts with its creator's affinity and pins itself first thing, so the
  // observation waits for it.
  const size_t want = std::min<size_t>(2, AllowedCpus().size());
  EXPECT_TRUE(WaitFor([&] {
    return ThreadCpus(boosted.process->pid()).size() >= 2 &&
           PinnedCpus(boosted.process->pid()).size() == want;
  })) << "every thread pinned to one CPU, the handler thread to the next one";
  close(client);
}

TEST_F(PythonHttpServerTest, BacklogSwitchedOnAtRunTimeReListens) {
  std::string path = dir_.path() + "/control";
  testing::ControlFile control(path);
  Server boosted = StartPython(dir_.path(), Boosted({{"BOOSTER_CONTROL", path}}));
  EXPECT_EQ(ListenBacklog(boosted.port), 5);
  booster_control page;
  booster_control_init(&page);
  page.features = BOOSTER_FEATURE_LISTEN_BACKLOG;
  page.listen_backlog = 4096;
  control.Publish(page);
  // The server notices at its next interposed call: here, accepting a request.
  EXPECT_EQ(Exchange(boosted.port, "GET / HTTP/1.0\r\n\r\n"), "HTTP/1.0 200 OK");
  EXPECT_TRUE(
      WaitFor([&] { return ListenBacklog(boosted.port) == std::min(4096, testing::Somaxconn()); }));
  booster_control_init(&page);
  control.Publish(page);
  EXPECT_EQ(Exchange(boosted.port, "GET / HTTP/1.0\r\n\r\n"), "HTTP/1.0 200 OK");
  EXPECT_TRUE(WaitFor([&] { return ListenBacklog(boosted.port) == 5; }));
}

// ---------------------------------------------------------------------------------------
// redis-server: tcp-backlog from its configuration, background (bio) threads.

constexpr char kRedis[] = "/usr/bin/redis-server";

Server StartRedis(const std::string& dir, const std::string& name, const Env& env) {
  Server s;
  s.port = testing::FreePort();
  std::string conf = dir + "/" + name + ".conf";
  std::filesystem::create_directories(dir + "/" + name);
  std::ofstream(conf) << "port " << s.port << "\nbind 127.0.0.1\ntcp-backlog 16\n"
                      << "daemonize no\nsave \"\"\nappendonly no\nlogfile \"\"\n"
                      << "dir " << dir << "/" << name << "\n";
  s.process = std::make_unique<Subprocess>(Subprocess::Options{.argv = {kRedis, conf}, .env = env});
  if (!WaitFor([&] { return ListenBacklog(s.port) > 0; })) {
    ADD_FAILURE() << "redis did not start: " << s.process->Stderr();
  }
  return s;
}

class RedisTest : public ThirdPartyTest {
 protected:
  void SetUp() override {
    ThirdPartyTest::SetUp();
    if (!Executable(kRedis)) GTEST_SKIP() << kRedis << " missing";
  }
};

TEST_F(RedisTest, BacklogFloorAndPinnedBackgroundThreads) {
  Server plain = StartRedis(dir_.path(), "plain", {});
  Server boosted = StartRedis(dir_.path(), "boosted",
                              Boosted({{"BOOSTER_LISTEN_BACKLOG", "4096"},
                                       {"BOOSTER_THREADS", "pin"},
                                       {"BOOSTER_TCP_NODELAY", "1"},
                                       {"BOOSTER_CLOCK", "coarse"}}));
  EXPECT_EQ(ListenBacklog(plain.port), 16);
  EXPECT_EQ(ListenBacklog(boosted.port), std::min(4096, testing::Somaxconn()));
  EXPECT_EQ(Exchange(boosted.port, "PING\r\n"), "+PONG");
  EXPECT_EQ(Exchange(boosted.port, "SET k v\r\n"), "+OK");

  // Redis 7 starts its bio threads at start-up: each lands on its own CPU in turn.
  std::vector<int> allowed = AllowedCpus();
  EXPECT_TRUE(WaitFor([&] {
    return ThreadCpus(boosted.process->pid()).size() >= 4 &&
           PinnedCpus(boosted.process->pid()) == std::set<int>(allowed.begin(), allowed.end());
  })) << "every thread pinned to one CPU, all CPUs used";
  for (const auto& [tid, cpus] : ThreadCpus(plain.process->pid())) {
    EXPECT_EQ(ParseList(cpus), allowed) << "baseline thread " << tid;
  }
}

// ---------------------------------------------------------------------------------------
// nginx: listen ... backlog=16, a master forking two workers, no TCP_NODELAY on a fresh
// connection.

constexpr char kNginx[] = "/usr/sbin/nginx";

Server StartNginx(const std::string& dir, const std::string& name, const Env& env) {
  Server s;
  s.port = testing::FreePort();
  std::string root = dir + "/" + name;
  std::filesystem::create_directories(root);
  std::ofstream(root + "/nginx.conf")
      << "daemon off;\nmaster_process on;\nworker_processes 2;\nuser root;\n"
      << "pid " << root << "/nginx.pid;\nerror_log " << root << "/error.log;\n"
      << "events { worker_connections 64; }\nhttp {\n  access_log off;\n"
      << "  client_body_temp_path " << root << "/body;\n  proxy_temp_path " << root
      << "/proxy;\n  fastcgi_temp_path " << root << "/fastcgi;\n  uwsgi_temp_path " << root
      << "/uwsgi;\n  scgi_temp_path " << root << "/scgi;\n"
      << "  server { listen 127.0.0.1:" << s.port
      << " backlog=16; location / { return 200 \"ok\\n\"; } }\n}\n";
  s.process = std::make_unique<Subprocess>(Subprocess::Options{
      .argv = {kNginx, "-c", root + "/nginx.conf", "-p", root + "/", "-e", root + "/error.log"},
      .env = env});
  if (!WaitFor(
          [&] { return ListenBacklog(s.port) > 0 && ChildPids(s.process->pid()).size() == 2; })) {
    ADD_FAILURE() << "nginx did not start: " << s.process->Stderr();
  }
  return s;
}

class NginxTest : public ThirdPartyTest {
 protected:
  void SetUp() override {
    ThirdPartyTest::SetUp();
    if (!Executable(kNginx)) GTEST_SKIP() << kNginx << " missing";
  }
};

TEST_F(NginxTest, BacklogNodelayAndWorkersOnDistinctCpus) {
  Server plain = StartNginx(dir_.path(), "plain", {});
  Server boosted = StartNginx(dir_.path(), "boosted",
                              Boosted({{"BOOSTER_LISTEN_BACKLOG", "4096"},
                                       {"BOOSTER_TCP_NODELAY", "1"},
                                       {"BOOSTER_THREADS", "pin"}}));
  EXPECT_EQ(ListenBacklog(plain.port), 16);
  EXPECT_EQ(ListenBacklog(boosted.port), std::min(4096, testing::Somaxconn()));
  EXPECT_EQ(Exchange(boosted.port, "GET / HTTP/1.0\r\n\r\n"), "HTTP/1.1 200 OK");

  int a = ConnectLoopback(plain.port);
  int b = ConnectLoopback(boosted.port);
  EXPECT_EQ(ServerNodelay(ChildPids(plain.process->pid()), a), 0);
  EXPECT_EQ(ServerNodelay(ChildPids(boosted.process->pid()), b), 1);
  close(a);
  close(b);

  // Workers are forked: each takes the next CPU of the round-robin.
  std::vector<pid_t> workers = ChildPids(boosted.process->pid());
  ASSERT_EQ(workers.size(), 2u);
  const size_t want = std::min<size_t>(2, AllowedCpus().size());
  EXPECT_TRUE(WaitFor([&] {
    std::set<int> used;
    for (pid_t w : workers) {
      std::set<int> cpus = PinnedCpus(w);
      if (cpus.size() != 1) return false;
      used.insert(*cpus.begin());
    }
    return used.size() == want;
  })) << "each worker pinned to one CPU, distinct CPUs";
  for (pid_t w : ChildPids(plain.process->pid())) {
    EXPECT_EQ(ParseList(ThreadCpus(w)[w]), AllowedCpus()) << "baseline worker";
  }
}

}  // namespace
}  // namespace booster::runtime
