// The pod sandbox's PID 1: holds the pod's namespaces open, reaps orphaned children and
// exits cleanly on SIGINT/SIGTERM. Built static (`cc -static`) into the local
// booster.local/pause image so no pause image is pulled from a registry.
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  int saved = errno;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    puts("booster pause 3.9");
    return 0;
  }
  if (getpid() != 1) {
    fputs("pause: warning: not running as PID 1\n", stderr);
  }
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) {
    pause();
  }
}
