#include "runtime/test_support.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace booster::runtime::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string RunCapture(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

Subprocess::Subprocess(Options options) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
  char tmpl[] = "/tmp/booster-stderr-XXXXXX";
  int err = mkstemp(tmpl);
  if (err < 0) return;
  stderr_path_ = tmpl;

  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // The test runner's own sanitizer preload (if any) must not leak into the child.
  env.erase("LD_PRELOAD");
  // Hermetic: only the Booster knobs a test sets reach the child.
  for (auto it = env.begin(); it != env.end();) {
    it = it->first.rfind("BOOSTER_", 0) == 0 ? env.erase(it) : std::next(it);
  }
  for (const auto& name : options.unset_env) env.erase(name);
  for (const auto& [k, v] : options.env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& a : options.argv) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = fork();
  if (pid == 0) {
    // Its own process group, so the destructor ends what it forked too (nginx's workers
    // outlive a killed master otherwise).
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err, 2);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) _exit(126);
    if (!options.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : options.cpus) CPU_SET(c, &set);
      if (sched_setaffinity(0, sizeof(set), &set) != 0) _exit(125);
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err);
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    return;
  }
  pid_ = pid;
  in_ = in[1];
  out_ = out[0];
}

Subprocess::~Subprocess() {
  if (in_ >= 0) close(in_);
  if (out_ >= 0) close(out_);
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);  // the child and everything it forked (its process group)
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (!stderr_path_.empty()) unlink(stderr_path_.c_str());
}

bool Subprocess::Send(const std::string& line) {
  if (in_ < 0) return false;
  std::string data = line + "\n";
  return write(in_, data.data(), data.size()) == static_cast<ssize_t>(data.size());
}

std::optional<std::string> Subprocess::ReadLine(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (out_ < 0) return std::nullopt;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = read(out_, buf, sizeof(buf));
    if (n <= 0) {
      close(out_);
      out_ = -1;
      continue;
    }
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

std::string Subprocess::Ask(const std::string& command) {
  if (!Send(command)) return "";
  return ReadLine().value_or("");
}

int Subprocess::CloseAndWait(std::chrono::milliseconds timeout) {
  if (in_ >= 0) {
    close(in_);
    in_ = -1;
  }
  int status = 0;
  bool exited = WaitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
  if (!exited) return -1;
  pid_ = -1;
  return status;
}

void Subprocess::Kill(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

std::string Subprocess::Stderr() const { return ReadFile(stderr_path_); }

bool WaitFor(const std::function<bool()>& predicate, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (predicate()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int ListenBacklog(int port) {
  std::string out = RunCapture("ss -ltnH 'sport = :" + std::to_string(port) + "' 2>/dev/null");
  std::istringstream lines(out);
  std::string state, local;
  long recv_q = 0, send_q = 0;
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    if (!(fields >> state >> recv_q >> send_q >> local)) continue;
    if (state == "LISTEN" && local == "127.0.0.1:" + std::to_string(port)) {
      return static_cast<int>(send_q);
    }
  }
  return -1;
}

int Somaxconn() { return std::atoi(ReadFile("/proc/sys/net/core/somaxconn").c_str()); }

std::map<pid_t, std::string> ThreadCpus(pid_t pid) {
  std::map<pid_t, std::string> result;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::ifstream status(entry.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) {
        std::string value = line.substr(strlen("Cpus_allowed_list:"));
        value.erase(0, value.find_first_not_of(" \t"));
        result[std::atoi(entry.path().filename().c_str())] = value;
      }
    }
  }
  return result;
}

std::vector<pid_t> ChildPids(pid_t pid) {
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = ReadFile(entry.path() / "stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) == 2 && ppid == pid) {
      children.push_back(std::atoi(name.c_str()));
    }
  }
  return children;
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> out;
  std::istringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    int a = 0, b = 0;
    if (sscanf(item.c_str(), "%d-%d", &a, &b) == 2) {
      for (int c = a; c <= b; ++c) out.push_back(c);
    } else if (sscanf(item.c_str(), "%d", &a) == 1) {
      out.push_back(a);
    } else {
      return {};
    }
  }
  return out;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::optional<int> PeerSocketOption(pid_t pid, int peer_fd, int level, int option) {
  sockaddr_in mine{};
  socklen_t len = sizeof(mine);
  if (getsockname(peer_fd, reinterpret_cast<sockaddr*>(&mine), &len) != 0) return std::nullopt;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return std::nullopt;
  std::optional<int> result;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (ec || target.rfind("socket:", 0) != 0) continue;
    int remote = std::atoi(entry.path().filename().c_str());
    int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, remote, 0));
    if (fd < 0) continue;
    sockaddr_in peer{};
    socklen_t plen = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) == 0 &&
        peer.sin_family == AF_INET && peer.sin_port == mine.sin_port &&
        peer.sin_addr.s_addr == mine.sin_addr.s_addr) {
      int value = 0;
      socklen_t vlen = sizeof(value);
      if (getsockopt(fd, level, option, &value, &vlen) == 0) result = value;
    }
    close(fd);
    if (result) break;
  }
  close(pidfd);
  return result;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/booster-test-XXXXXX";
  if (mkdtemp(tmpl) != nullptr) path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

ControlFile::ControlFile(const std::string& path, bool create) : path_(path) {
  if (create) Create();
}

void ControlFile::Create() {
  int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (ftruncate(fd, BOOSTER_CONTROL_FILE_SIZE) == 0) {
    void* map = mmap(nullptr, BOOSTER_CONTROL_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) map_ = map;
  }
  close(fd);
}

ControlFile::~ControlFile() {
  if (map_ != nullptr) munmap(map_, BOOSTER_CONTROL_FILE_SIZE);
}

void ControlFile::Publish(const ::booster_control& page) {
  if (map_ == nullptr) return;
  booster_control_publish(static_cast<volatile booster_control*>(map_), &page);
}

std::string LibPath() {
  const char* p = getenv("BOOSTER_LIB");
  return p != nullptr ? p : "";
}

std::string ProbePath() {
  const char* p = getenv("BOOSTER_PROBE");
  return p != nullptr ? p : "";
}

std::string PreloadValue() {
  const char* prefix = getenv("BOOSTER_PRELOAD_PREFIX");
  if (prefix == nullptr || prefix[0] == '\0') return LibPath();
  return std::string(prefix) + ":" + LibPath();
}

std::map<std::string, long> Fields(const std::string& line) {
  std::map<std::string, long> out;
  std::istringstream words(line);
  std::string w;
  while (words >> w) {
    size_t eq = w.find('=');
    if (eq != std::string::npos) out[w.substr(0, eq)] = std::atol(w.c_str() + eq + 1);
  }
  return out;
}

}  // namespace booster::runtime::testing
