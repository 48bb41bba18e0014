#pragma once
// The error policy, in one place:
// - UserError: bad input or environment. Caught only in main; exit 2; nothing touched.
// - SystemError: a system call or command failed; carries the operation and errno.
// - Interrupted: SIGINT/SIGTERM arrived; everything unwinds through its cleanups.
// Recoverable per-point failures are data in the bundle, not exceptions.
#include <stdexcept>
#include <string>

namespace ks {

enum ExitCode : int {
  kExitOk = 0,
  kExitRegression = 1,  // the run worked and found a material regression (CI gates on it)
  kExitBadInput = 2,    // bad input or environment: clear message, nothing touched
  kExitPointFailed = 3, // no regression shown and some workload INVALID (a point failed and
                        // left it without data, a semantic or health check failed)
  kExitInconclusive = 4,  // no regression shown and some workload INCONCLUSIVE
  kExitInternal = 70,     // a path the code did not foresee: a bug to report (sysexits' EX_SOFTWARE)
};

// What was wrong and what to do about it.
class UserError : public std::runtime_error {
 public:
  UserError(const std::string& what, std::string hint = {})
      : std::runtime_error(what), hint_(std::move(hint)) {}
  const std::string& hint() const { return hint_; }

 private:
  std::string hint_;
};

class SystemError : public std::runtime_error {
 public:
  SystemError(const std::string& operation, int err);
  SystemError(const std::string& operation, const std::string& detail);
  int error_number() const { return errno_; }

 private:
  int errno_ = 0;
};

class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("interrupted by signal") {}
};

}  // namespace ks
