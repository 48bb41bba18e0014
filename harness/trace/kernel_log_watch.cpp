#include "trace/kernel_log_watch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include <fmt/format.h>

#include "util/error.hpp"

namespace ks::trace {
namespace {

constexpr const char* kKmsg = "/dev/kmsg";

void write_kmsg(const std::string& line) {
  int fd = ::open(kKmsg, O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError(std::string("open ") + kKmsg + " for writing", errno);
  ssize_t n;
  do n = ::write(fd, line.data(), line.size());
  while (n < 0 && errno == EINTR);
  int err = errno;
  ::close(fd);
  if (n < 0) throw SystemError(std::string("write the marker to ") + kKmsg, err);
}

std::string random_hex() {
  std::random_device rd;
  uint64_t r = (uint64_t{rd()} << 32) ^ rd();
  return fmt::format("{:016x}", r);
}

}  // namespace

KmsgRead read_kmsg() {
  int fd = ::open(kKmsg, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw SystemError(std::string("open ") + kKmsg, errno);
  KmsgRead out;
  std::string buf(64 * 1024, '\0');  // one record per read; records are < 8 KiB
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      if (auto r = parse_kmsg_record(std::string_view(buf.data(), static_cast<size_t>(n))))
        out.records.push_back(std::move(*r));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) {  // the record we were at was overwritten; go on
      ++out.overwritten;
      continue;
    }
    if (n == 0 || errno == EAGAIN) break;
    int err = errno;
    ::close(fd);
    throw SystemError(std::string("read ") + kKmsg, err);
  }
  ::close(fd);
  return out;
}

void KernelLogWatch::begin(const std::string& tag) {
  marker_ = fmt::format("ksandwich: begin {} {}", tag, random_hex());
  marker_seq_.reset();
  error_.clear();
  try {
    write_kmsg("<5>" + marker_ + "\n");
    for (auto& r : read_kmsg().records)
      if (r.message == marker_) marker_seq_ = r.seq;
    if (!marker_seq_) error_ = "the marker written to /dev/kmsg was not found in the kernel log";
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

nlohmann::json KernelLogWatch::end() {
  if (marker_.empty()) error_ = "KernelLogWatch::end() called without begin()";
  if (!error_.empty()) return {{"marker", marker_}, {"error", error_}};
  KmsgRead log;
  try {
    log = read_kmsg();
  } catch (const std::exception& e) {
    return {{"marker", marker_}, {"error", e.what()}};
  }
  // Sequence numbers are contiguous: a gap after the marker is records nobody will read.
  std::vector<std::string> lines;
  uint64_t expected = *marker_seq_ + 1, lost = 0;
  for (auto& r : log.records) {
    if (r.seq <= *marker_seq_) continue;
    if (r.seq > expected) lost += r.seq - expected;
    expected = r.seq + 1;
    for (auto& line : split_log_lines(r.message)) lines.push_back(line);
  }
  auto health = kernel_health(marker_, lines);
  health["source"] = kKmsg;
  if (lost > 0) {
    std::string line = fmt::format(
        "the kernel log overflowed: {} records after the marker were overwritten before they "
        "could be scanned",
        lost);
    nlohmann::json finding = {
        {"kind", "lost records"}, {"line", line}, {"excerpt", line + "\n"}, {"line_number", 0}};
    health["findings"].insert(health["findings"].begin(), finding);
    health["lost_records"] = lost;
  }
  return health;
}

}  // namespace ks::trace
