#include "trace/profile.hpp"

#include <algorithm>
#include <cmath>

#include "trace/direct_hit.hpp"
#include "util/files.hpp"

namespace ks::trace {

using nlohmann::json;

const std::vector<std::string>& profile_filter() {
  static const std::vector<std::string> kFilter = {
      "btrfs_*", "__btrfs_*", "vfs_*", "__vfs_*", "do_clone_file_range", "generic_remap_*", "*xattr*",
      "security_*", "cap_*", "file_remove_privs", "file_modified", "iomap_*", "__iomap_*",
      "submit_bio*", "blk_mq_submit_bio", "io_issue_sqe", "io_write", "io_read", "io_submit_sqes",
      "io_uring_enter", "__x64_sys_io_uring_enter", "generic_perform_write", "filemap_*"};
  return kFilter;
}

std::vector<std::string> profile_words(const std::vector<std::string>& extra_functions) {
  std::vector<std::string> all = extra_functions;
  for (auto& glob : profile_filter()) {
    std::string longest;
    for (auto& piece : split(glob, '*'))
      if (piece.size() > longest.size()) longest = piece;
    all.push_back(longest);
  }
  std::vector<std::string> words;  // a word that holds another adds no candidate
  for (auto& w : all)
    if (std::none_of(all.begin(), all.end(), [&](auto& v) { return v != w && w.find(v) != std::string::npos; }) &&
        std::find(words.begin(), words.end(), w) == words.end())
      words.push_back(w);
  return words;
}

std::string profile_regex(const std::vector<std::string>& extra_functions) {
  std::string regex;
  for (auto& glob : profile_filter()) {
    if (!regex.empty()) regex += "|";
    for (char c : glob) regex += c == '*' ? std::string("[^ ]*") : std::string(1, c);
  }
  if (!extra_functions.empty()) regex += "|" + functions_regex(extra_functions);
  return regex;
}

std::string functions_regex(const std::vector<std::string>& functions) {
  std::string regex;
  for (auto& f : functions) regex += (regex.empty() ? "" : "|") + f + "(\\.[a-z_]+\\.[0-9]+)*";
  return regex;
}

std::map<std::string, ProfiledFunction> parse_profile(const std::vector<std::string>& per_cpu) {
  std::map<std::string, ProfiledFunction> functions;
  for (auto& text : per_cpu)
    for (auto& [name, line] : parse_function_profile_lines(text)) {
      auto& f = functions[name];
      f.calls += line.calls;
      if (line.own_ns) f.own_ns = f.own_ns.value_or(0) + *line.own_ns;
    }
  return functions;
}

json profile_entry(const ProfileCapture& capture) {
  json entry{{"workload", capture.workload}};
  if (capture.status != 0) {
    entry["failure"] = "the agent exited " + std::to_string(capture.status) + " in the profiling pass";
    return entry;
  }
  uint64_t ops = 0, elapsed_ns = 0;
  for (auto& line : split(capture.agent_output, '\n')) {
    auto r = json::parse(line, nullptr, false);
    if (r.is_object() && r.value("type", "") == "round" && !r.value("warmup", false)) {
      ops += r.value("ops", uint64_t{0});
      elapsed_ns += r.value("elapsed_ns", uint64_t{0});
    }
  }
  if (ops == 0) {
    entry["failure"] = "the profiling pass reported no ops";
    return entry;
  }
  auto parsed = parse_profile(capture.stats);
  if (parsed.empty()) {
    entry["failure"] = "the function profiler counted no calls";
    return entry;
  }
  std::vector<std::pair<std::string, ProfiledFunction>> functions(parsed.begin(), parsed.end());
  auto weight = [](const ProfiledFunction& f) { return f.own_ns ? *f.own_ns : f.calls; };
  std::stable_sort(functions.begin(), functions.end(),
                   [&](auto& a, auto& b) { return weight(a.second) > weight(b.second); });
  uint64_t calls = 0;
  for (auto& f : functions) calls += f.second.calls;
  entry["ops"] = ops;
  entry["elapsed_ns"] = elapsed_ns;
  entry["calls"] = calls;
  entry["functions"] = json::array();
  for (size_t i = 0; i < functions.size() && i < kProfileKeep; ++i) {
    json f{{"function", functions[i].first}, {"calls", functions[i].second.calls}};
    if (functions[i].second.own_ns) f["own_ns"] = *functions[i].second.own_ns;
    entry["functions"].push_back(std::move(f));
  }
  if (functions.size() > kProfileKeep) {
    auto& largest = functions[kProfileKeep].second;
    entry["left_out"] = {{"functions", functions.size() - kProfileKeep},
                         {largest.own_ns ? "max_own_ns" : "max_calls", weight(largest)}};
  }
  return entry;
}

}  // namespace ks::trace
