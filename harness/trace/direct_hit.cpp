#include "trace/direct_hit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "analysis/gate_kind.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::trace {
namespace {

using nlohmann::json;

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

bool parse_count(std::string_view word, uint64_t& value) {
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  return ec == std::errc() && end == word.data() + word.size();
}

// GCC and clang clones that replace a function's body (interprocedural SRA, constant
// propagation, LTO renames). ".part" and ".cold" are pieces called from the function
// itself: counting them too would count one call twice.
bool is_clone_suffix(std::string_view rest) {
  for (std::string_view kind : {".isra.", ".constprop.", ".lto_priv.", ".llvm."})
    if (rest.substr(0, kind.size()) == kind) return true;
  return false;
}

// trace_stat prints names cut to 30 characters: NAME (as printed) stands for SYMBOL.
bool profile_name_matches(const std::string& printed, const std::string& symbol) {
  if (printed == symbol) return true;
  return printed.size() == kProfileNameWidth && symbol.size() > kProfileNameWidth &&
         symbol.compare(0, kProfileNameWidth, printed) == 0;
}

size_t sharing_profile_prefix(const std::string& symbol, const std::map<std::string, int>& available) {
  if (symbol.size() <= kProfileNameWidth) return 0;
  std::string prefix = symbol.substr(0, kProfileNameWidth);
  size_t n = 0;
  for (auto it = available.lower_bound(prefix); it != available.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    if (it->first != symbol) ++n;
  }
  return n;
}

void add_note(std::string& note, const std::string& more) {
  if (!note.empty()) note += "; ";
  note += more;
}

}  // namespace

std::map<std::string, int> parse_function_list(std::string_view text) {
  std::map<std::string, int> names;
  for (auto line : lines_of(text)) {
    auto words = words_of(line);
    if (words.empty() || words[0].front() == '#') continue;
    if (words[0].find(':') != std::string_view::npos) continue;  // a trigger, not a function
    ++names[std::string(words[0])];
  }
  return names;
}

std::vector<std::string> symbols_for(const std::string& function,
                                     const std::map<std::string, int>& available) {
  std::vector<std::string> symbols;
  if (available.count(function)) symbols.push_back(function);
  std::string prefix = function + ".";
  for (auto it = available.lower_bound(prefix); it != available.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    if (is_clone_suffix(std::string_view(it->first).substr(function.size())))
      symbols.push_back(it->first);
  }
  return symbols;
}

std::vector<std::pair<std::string, ProfileLine>> parse_function_profile_lines(std::string_view text) {
  std::vector<std::pair<std::string, ProfileLine>> lines;
  for (auto line : lines_of(text)) {
    auto words = words_of(line);
    ProfileLine p;
    if (words.size() < 2 || !parse_count(words[1], p.calls)) continue;  // headers, "---" rules
    // With the graph tracer: total time "123.456 us" (whole us from 7 digits on).
    double us = 0;
    if (words.size() >= 4 && words[3] == "us") {
      auto [end, ec] = std::from_chars(words[2].data(), words[2].data() + words[2].size(), us);
      if (ec == std::errc() && end == words[2].data() + words[2].size() && us >= 0)
        p.own_ns = static_cast<uint64_t>(std::llround(us * 1000));
    }
    lines.emplace_back(std::string(words[0]), p);
  }
  return lines;
}

std::map<std::string, uint64_t> parse_function_profile(std::string_view text) {
  std::map<std::string, uint64_t> hits;
  for (auto& [name, line] : parse_function_profile_lines(text)) hits[name] += line.calls;
  return hits;
}

std::map<std::string, uint64_t> count_trace_lines(std::string_view trace) {
  std::map<std::string, uint64_t> lines;
  for (auto line : lines_of(trace)) {
    if (line.empty() || line.front() == '#') continue;
    // The timestamp ends with the last ": " of the line; task names may hold ':' but
    // function names and "<-parent" never hold ": ".
    size_t colon = line.rfind(": ");
    if (colon == std::string_view::npos) continue;
    auto words = words_of(line.substr(colon + 2));
    if (!words.empty()) ++lines[std::string(words[0])];
  }
  return lines;
}

uint64_t lost_trace_events(std::string_view trace) {
  constexpr std::string_view key = "entries-in-buffer/entries-written:";
  for (auto line : lines_of(trace)) {
    if (line.empty() || line.front() != '#') {
      if (!line.empty()) break;  // the header is over
      continue;
    }
    size_t at = line.find(key);
    if (at == std::string_view::npos) continue;
    auto words = words_of(line.substr(at + key.size()));
    if (words.empty()) return 0;
    auto slash = words[0].find('/');
    uint64_t in_buffer = 0, written = 0;
    if (slash == std::string_view::npos || !parse_count(words[0].substr(0, slash), in_buffer) ||
        !parse_count(words[0].substr(slash + 1), written))
      return 0;
    return written > in_buffer ? written - in_buffer : 0;
  }
  return 0;
}

std::vector<FunctionCount> count_calls(const std::vector<Target>& targets,
                                       const TraceCapture& capture) {
  auto available = parse_function_list(capture.available_filter_functions);
  auto filtered = parse_function_list(capture.set_ftrace_filter);
  auto profiled = available;  // what trace_stat may print: a profiling pass filters more than the targets
  for (auto& [name, n] : filtered) profiled[name] = std::max(profiled[name], n);

  std::map<std::string, uint64_t> hits;
  uint64_t lost = 0;
  if (capture.method == kFunctionProfiler) {
    for (auto& cpu : capture.profile_stats)
      for (auto& [name, n] : parse_function_profile(cpu)) hits[name] += n;
  } else if (capture.method == kFunctionTracer) {
    hits = count_trace_lines(capture.trace);
    lost = lost_trace_events(capture.trace);
  }

  std::vector<FunctionCount> counts;
  for (auto& target : targets) {
    FunctionCount c;
    c.function = target.function;
    c.required = target.required;
    c.method = capture.method;
    c.symbols = symbols_for(target.function, available);
    c.available = !c.symbols.empty();
    if (capture.method == kNoTracing) {
      c.note = capture.failure.empty() ? "function tracing was not available" : capture.failure;
      counts.push_back(std::move(c));
      continue;
    }
    if (!c.available) {
      c.note = "not in available_filter_functions: inlined, marked notrace, or not built into "
               "this kernel";
      counts.push_back(std::move(c));
      continue;
    }
    c.filtered = true;
    for (auto& symbol : c.symbols) c.filtered = c.filtered && filtered.count(symbol) > 0;
    for (auto& [name, n] : hits)
      for (auto& symbol : c.symbols)
        if (capture.method == kFunctionProfiler ? profile_name_matches(name, symbol)
                                                : name == symbol) {
          c.calls += n;
          break;
        }
    for (auto& symbol : c.symbols) {
      if (available[symbol] > 1)
        add_note(c.note, fmt::format("{} functions are named {}: the count is their sum",
                                     available[symbol], symbol));
      if (capture.method == kFunctionProfiler)
        if (size_t others = sharing_profile_prefix(symbol, profiled))
          add_note(c.note, fmt::format("trace_stat cuts names at {} characters: the count may "
                                       "include {} other function{} starting with {}",
                                       kProfileNameWidth, others, others == 1 ? "" : "s",
                                       symbol.substr(0, kProfileNameWidth)));
    }
    if (!c.filtered)
      add_note(c.note, "set_ftrace_filter did not accept every symbol");
    if (lost > 0)
      add_note(c.note, fmt::format("the trace buffer lost {} events: the count is a lower bound",
                                   lost));
    counts.push_back(std::move(c));
  }
  return counts;
}

json to_json(const std::vector<FunctionCount>& counts) {
  json out = json::array();
  for (auto& c : counts) {
    json e{{"function", c.function}, {"required", c.required}, {"available", c.available},
           {"filtered", c.filtered}, {"calls", c.calls},       {"method", c.method}};
    if (!(c.symbols.size() == 1 && c.symbols[0] == c.function)) e["symbols"] = c.symbols;
    if (!c.note.empty()) e["note"] = c.note;
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

FunctionCount count_from_json(const json& e) {
  FunctionCount c;
  c.function = e.value("function", std::string());
  c.required = e.value("required", false);
  c.available = e.value("available", false);
  c.filtered = e.value("filtered", false);
  // A count: a whole number, never below 0 (forty-eighth attack: -1 read as 2^64 - 1 passed
  // the gate while the report's table said NOT HIT) nor a float cast out of range.
  if (e.contains("calls") && !e["calls"].is_number_unsigned() && !(e["calls"].is_number_integer() && e["calls"].get<int64_t>() >= 0))
    throw json::type_error::create(302, "calls is not a count of calls", &e["calls"]);
  c.calls = e.value("calls", uint64_t{0});
  c.method = e.value("method", std::string(kNoTracing));
  if (e.contains("symbols") && e["symbols"].is_array())
    c.symbols = e["symbols"].get<std::vector<std::string>>();
  else if (c.available)
    c.symbols = {c.function};
  c.note = e.value("note", std::string());
  return c;
}

}  // namespace

std::vector<FunctionCount> counts_from_json(const json& j) {
  std::vector<FunctionCount> counts;
  if (!j.is_array()) return counts;
  for (auto& e : j) {
    if (!e.is_object()) continue;
    // A record from a bundle someone else wrote: a field of the wrong type is their error.
    try {
      counts.push_back(count_from_json(e));
    } catch (const json::exception& err) {
      throw UserError(std::string("a direct_hit record is malformed: ") + err.what(),
                      "the bundle was edited or damaged; `ksandwich validate` lists what does not match its schema");
    }
  }
  return counts;
}

std::vector<evidence::Gate> direct_hit_gates(int point_id, const json& counts,
                                             const std::vector<std::string>& required) {
  std::vector<evidence::Gate> gates;
  std::set<std::string> counted;
  for (auto& c : counts_from_json(counts)) {
    if (std::find(required.begin(), required.end(), c.function) == required.end() || !counted.insert(c.function).second)
      continue;
    evidence::Gate g = analysis::make_gate(analysis::GateKind::direct_hit,
                                           analysis::point_scope(point_id), true, "");
    if (c.method == kNoTracing) {
      g.passed = false;
      g.detail = fmt::format("calls to {} could not be counted ({}): the patch is not shown to "
                             "have been exercised",
                             c.function, c.note.empty() ? "no function tracing" : c.note);
    } else if (!c.available) {
      g.passed = false;
      g.detail = fmt::format("{} is not a traceable function on this kernel: the patch cannot "
                             "have been exercised as claimed",
                             c.function);
    } else if (c.calls == 0) {
      g.passed = false;
      g.detail = fmt::format("{} was called 0 times during the direct-hit (or profiling) pass: the patch was "
                             "not exercised",
                             c.function);
    } else {
      g.detail = fmt::format("{} was called {} times ({})", c.function, c.calls, c.method);
    }
    gates.push_back(std::move(g));
  }
  for (auto& f : required)
    if (!counted.count(f))
      gates.push_back(analysis::make_gate(
          analysis::GateKind::direct_hit, analysis::point_scope(point_id), false,
          fmt::format("the point holds no count of calls to {}: the patch is not shown to have been exercised", f)));
  return gates;
}

}  // namespace ks::trace
