#pragma once
// JSON lines to stdout or --out FILE: one object per line, flushed at once, so the harness
// (or a crash) never sees half a round.
#include <cstdio>
#include <string>

#include "agent/record.hpp"

namespace ks::agent {

class Output {
 public:
  // Empty PATH: stdout. Throws UserError when PATH cannot be opened for writing.
  explicit Output(const std::string& path);
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  void write(const Json& line);  // throws SystemError when the write fails

 private:
  std::string path_;
  FILE* file_ = nullptr;
};

}  // namespace ks::agent
