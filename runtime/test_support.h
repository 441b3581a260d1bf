// runtime/test_support.h: what the runtime tests need to run programs under
// libbooster.so and observe them from outside, the way a user would: a child process with
// pipes, the backlog `ss -ltn` reports, thread affinities from /proc, and a peer's socket
// options read through pidfd_getfd. Test-only.
#ifndef BOOSTER_RUNTIME_TEST_SUPPORT_H_
#define BOOSTER_RUNTIME_TEST_SUPPORT_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "booster/control.h"

namespace booster::runtime::testing {

// A child process with stdin/stdout pipes (stderr captured to a file).
class Subprocess {
 public:
  struct Options {
    std::vector<std::string> argv;
    std::map<std::string, std::string> env;  // added to (or replacing) the parent's
    std::vector<std::string> unset_env;      // removed from the parent's
    std::string cwd;
    std::vector<int> cpus;  // if non-empty, the child starts with this affinity
  };
  explicit Subprocess(Options options);
  // Kills (SIGKILL) the child and every process it forked (the child leads its own process
  // group), and reaps the child.
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Writes a line (a newline is added).
  bool Send(const std::string& line);
  // Reads one line without the newline; nullopt on EOF or after `timeout`.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Sends `command` and returns the answer line ("" on timeout/EOF).
  std::string Ask(const std::string& command);
  // Closes stdin, then waits up to `timeout` for exit; returns the exit status or -1.
  int CloseAndWait(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  void Kill(int signal);
  // Everything the child wrote to stderr so far.
  std::string Stderr() const;

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string stderr_path_;
  std::string buffer_;
};

// Polls `predicate` every 20 ms until it holds or `timeout` passes.
bool WaitFor(const std::function<bool()>& predicate,
             std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The Send-Q column of `ss -ltn` for the TCP listener on 127.0.0.1:port (for a listening
// socket: its backlog), or -1 if there is no such listener.
int ListenBacklog(int port);

// /proc/sys/net/core/somaxconn.
int Somaxconn();

// tid -> "Cpus_allowed_list" of every thread of pid.
std::map<pid_t, std::string> ThreadCpus(pid_t pid);

// Direct children of pid (from /proc/*/stat).
std::vector<pid_t> ChildPids(pid_t pid);

// The CPUs the calling thread may run on.
std::vector<int> AllowedCpus();

// "0,2-3" -> {0,2,3}; empty on error.
std::vector<int> ParseList(const std::string& text);

// A loopback TCP port that was free a moment ago (for programs that cannot take port 0).
int FreePort();

// Connects a TCP socket to 127.0.0.1:port; returns the fd or -1.
int ConnectLoopback(int port);

// Reads an int socket option of the socket in process `pid` whose peer is the local
// socket `peer_fd` (the server's side of our connection), through pidfd_getfd. nullopt
// when the socket cannot be found.
std::optional<int> PeerSocketOption(pid_t pid, int peer_fd, int level, int option);

// A temporary directory removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A control page file of BOOSTER_CONTROL_FILE_SIZE zero bytes, mapped read-write, as the
// agent keeps it.
class ControlFile {
 public:
  explicit ControlFile(const std::string& path, bool create = true);
  ~ControlFile();
  ControlFile(const ControlFile&) = delete;
  ControlFile& operator=(const ControlFile&) = delete;
  // Creates and maps the file if it was not created in the constructor.
  void Create();
  const std::string& path() const { return path_; }
  // Publishes a page that enables `features` with the given parameters.
  void Publish(const ::booster_control& page);

 private:
  std::string path_;
  void* map_ = nullptr;
};

// Paths handed to the tests by CMake (BOOSTER_LIB, BOOSTER_PROBE); empty when unset.
// Runs `command` through the shell and returns its stdout.
std::string RunCapture(const std::string& command);

std::string LibPath();
std::string ProbePath();
// The LD_PRELOAD value that loads LibPath(): BOOSTER_PRELOAD_PREFIX (the sanitizer
// runtimes, in the instrumented configuration) first, then the library.
std::string PreloadValue();

// Splits "key=value" fields of a probe answer: "accepted 5 nodelay=1" -> {nodelay: 1}.
std::map<std::string, long> Fields(const std::string& line);

}  // namespace booster::runtime::testing

#endif  // BOOSTER_RUNTIME_TEST_SUPPORT_H_
