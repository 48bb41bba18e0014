#include "agent/output.hpp"

#include <cerrno>
#include <cstring>

#include "util/error.hpp"

namespace ks::agent {

Output::Output(const std::string& path) : path_(path.empty() ? "stdout" : path) {
  if (path.empty()) {
    file_ = stdout;
    return;
  }
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    throw UserError("cannot open --out " + path + " for writing: " + std::strerror(errno),
                    "give a path in an existing, writable directory");
}

Output::~Output() {
  if (file_ && file_ != stdout) std::fclose(file_);
}

void Output::write(const Json& line) {
  std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0)
    throw SystemError("write JSON line to " + path_, errno);
}

}  // namespace ks::agent
