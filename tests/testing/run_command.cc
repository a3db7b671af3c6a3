#include "tests/testing/run_command.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "tests/testing/temp_dir.h"

namespace autopar::testing {

CommandResult RunCommand(const std::vector<std::string>& argv, int timeout_seconds) {
  TempDir dir;
  const std::filesystem::path out = dir / "stdout";
  const std::filesystem::path err = dir / "stderr";
  CommandResult result;
  pid_t pid = fork();
  if (pid == 0) {
    int in_fd = open("/dev/null", O_RDONLY);
    int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (timeout_seconds > 0) {
    // Polls, so that the deadline needs no signal handler or extra thread.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
    while (wait4(pid, &status, WNOHANG, &usage) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        kill(pid, SIGKILL);
        result.timed_out = true;
        wait4(pid, &status, 0, &usage);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  } else {
    wait4(pid, &status, 0, &usage);
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is KiB
  result.stdout_text = ReadFile(out);
  result.stderr_text = ReadFile(err);
  return result;
}

}  // namespace autopar::testing
