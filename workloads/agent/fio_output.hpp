#pragma once
// Reading fio's --output-format=json output. Pure: text in, values out.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/record.hpp"

namespace ks::agent {

// fio may print notes ("fio: ...") before its JSON object: returns the object fio printed,
// or nullopt when there is none or it does not parse.
std::optional<Json> parse_fio_output(std::string_view stdout_text);

struct FioSummary {
  uint64_t total_ios = 0;  // sum of jobs[].write.total_ios
  uint64_t io_bytes = 0;   // sum of jobs[].write.io_bytes
  double iops = 0;         // sum of jobs[].write.iops
  double bw_bytes = 0;     // sum of jobs[].write.bw_bytes (bytes/s)
  uint64_t jobs = 0;
  uint64_t jobs_with_error = 0;  // jobs[].error != 0
  std::string first_error;       // "job 'test': error 5" for the first failed job
};

// Throws std::runtime_error when the JSON lacks the fields fio always prints.
FioSummary summarize_fio(const Json& fio);

}  // namespace ks::agent
