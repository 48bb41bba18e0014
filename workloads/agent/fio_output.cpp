#include "agent/fio_output.hpp"

#include <stdexcept>

namespace ks::agent {

std::optional<Json> parse_fio_output(std::string_view text) {
  // The object starts at the first '{' that begins a line and ends at the last '}'.
  size_t begin = text.starts_with("{") ? 0 : text.find("\n{");
  if (begin == std::string_view::npos) return std::nullopt;
  if (text[begin] == '\n') ++begin;
  size_t end = text.rfind('}');
  if (end == std::string_view::npos || end < begin) return std::nullopt;
  auto parsed = Json::parse(text.substr(begin, end - begin + 1), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
  return parsed;
}

FioSummary summarize_fio(const Json& fio) {
  if (!fio.contains("jobs") || !fio["jobs"].is_array())
    throw std::runtime_error("fio's JSON has no \"jobs\" array");
  FioSummary s;
  for (const auto& job : fio["jobs"]) {
    ++s.jobs;
    int64_t error = job.value("error", 0);
    if (error != 0) {
      if (s.jobs_with_error == 0)
        s.first_error = "job '" + job.value("jobname", std::string("?")) + "': error " + std::to_string(error);
      ++s.jobs_with_error;
    }
    if (!job.contains("write") || !job["write"].is_object())
      throw std::runtime_error("fio's JSON job '" + job.value("jobname", std::string("?")) +
                               "' has no \"write\" object");
    const auto& w = job["write"];
    s.total_ios += w.value("total_ios", uint64_t{0});
    s.io_bytes += w.value("io_bytes", uint64_t{0});
    s.iops += w.value("iops", 0.0);
    s.bw_bytes += w.value("bw_bytes", 0.0);
  }
  return s;
}

}  // namespace ks::agent
