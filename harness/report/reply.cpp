// The reply block: the quoted patch, a summary a maintainer can read in a mail client,
// and the trailers that mailing-list etiquette allows for this verdict.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include "analysis/analyze.hpp"
#include "report/builder.hpp"
#include "report/format.hpp"
#include "util/error.hpp"
#include "util/files.hpp"
#include "util/message_id.hpp"

namespace ks::report::detail {

namespace {

// TEXT with every line b4 could take for a trailer behind "| ", as the 0-day robot writes the
// Reported-by: it does not want collected: TEXT quotes the bundle and the patch mail (one_line
// has made every Unicode space a plain one). FIRST_LINE_OURS: the first line starts with one of
// our own keys ("Machine: ..."), kept unless TEXT holds an address anywhere (b4 joins lines:
// "Fixes: abc (x" takes the next). The reply's own trailers come after.
std::string without_trailers(std::string_view text, bool first_line_ours = false) {
  const bool keep_first = first_line_ours && !holds_address(text);
  std::string out;
  bool first = true;
  for (auto& line : split(text, '\n')) {
    if (!first) out += '\n';
    out += (reads_as_trailer(line) && !(first && keep_first) ? "| " : "") + line;
    first = false;
  }
  return out;
}

// Which trailers a reply may carry, by overall verdict. b4 collects a Tested-by: from the
// replies onto the patch, so it is given only where the patch did no harm; a regression
// is reported (Reported-by: and a Link: to the thread), never "tested".
struct Trailers {
  const char* verdict;
  bool tested_by, reported_by;
};
constexpr Trailers kTrailers[] = {
    {"NO_CHANGE", true, false},     {"IMPROVEMENT", true, false}, {"REGRESSION", false, true},
    {"INCONCLUSIVE", false, false}, {"INVALID", false, false},
};

Trailers trailers_for(const std::string& verdict) {
  for (auto& t : kTrailers)
    if (verdict == t.verdict) return t;
  return {"", false, false};
}

// The longest author name the attribution quotes: a longer one is its address.
constexpr size_t kMaxQuotedName = 64;
// The longest value of a Backend:, Kernels:, Source: or Machine: line of the reply: two lines.
constexpr size_t kMaxWhereValue = 2 * kReplyWidth;

// A patch mail's Date: as RFC 5322 writes it ("Mon, 4 May 2026 10:00:00 +0200", optionally
// without the day or the seconds, a zone name after it in parentheses), read by strptime; ""
// for anything else, which the attribution calls "an unknown date" (eighteenth attack: free
// prose of any length).
std::string mail_date(const std::string& date) {
  if (date.size() > 64) return "";
  for (const char* format : {"%a, %d %b %Y %H:%M:%S %z", "%d %b %Y %H:%M:%S %z", "%a, %d %b %Y %H:%M %z", "%d %b %Y %H:%M %z"}) {
    std::tm tm{};
    const char* end = ::strptime(date.c_str(), format, &tm);
    if (!end) continue;
    std::string_view rest(end);
    const bool zone_name = rest.size() >= 3 && rest.size() <= 12 && rest.starts_with(" (") && rest.ends_with(")") &&
                           std::all_of(rest.begin() + 2, rest.end() - 1, [](unsigned char c) { return std::isalpha(c); });
    if (rest.empty() || zone_name) return one_line(date);  // strptime takes a newline for a space
  }
  return "";
}

// "Name <a@b>" -> "a@b"; "a@b" stays.
std::string address_of(const std::string& author) {
  auto lt = author.find('<'), gt = author.rfind('>');
  if (lt != std::string::npos && gt != std::string::npos && gt > lt)
    return author.substr(lt + 1, gt - lt - 1);
  return author.find('@') != std::string::npos ? author : "";
}



// The bare addresses of an address-list header ("A <a@x>, \"B, C\" <b@x>, c@x (C)"):
// split at commas outside quotes, angle brackets and comments; what lacks an @ or holds
// a space or a control character is left out.
std::vector<std::string> addresses_in(const std::string& header) {
  std::vector<std::string> items(1);
  bool quoted = false;
  int angle = 0, comment = 0;
  for (char c : header) {
    if (c == '"' && comment == 0) quoted = !quoted;
    if (!quoted) {
      angle += c == '<' ? 1 : c == '>' && angle > 0 ? -1 : 0;
      comment += c == '(' ? 1 : c == ')' && comment > 0 ? -1 : 0;
      if (c == ',' && angle == 0 && comment == 0) {
        items.emplace_back();
        continue;
      }
    }
    items.back() += c;
  }
  std::vector<std::string> out;
  for (auto& item : items) {
    std::string a = address_of(item);
    if (auto paren = a.find('('); paren != std::string::npos) a.erase(paren);  // "c@x (C)"
    if (a = clean_address(a); !a.empty()) out.push_back(a);
  }
  return out;
}

bool starts_with_re(const std::string& subject) { return subject.size() >= 3 && lower(subject.substr(0, 3)) == "re:"; }

}  // namespace

std::string Builder::thread_id() const {
  if (!options_.in_reply_to.empty()) return bare_message_id(options_.in_reply_to);
  for (auto& p : patches(patched_))
    if (auto id = first_of(p, {"message_id"}); !id.empty()) return bare_message_id(id);
  return "";
}

void Builder::reply() {
  std::vector<json> quoted;
  for (auto& p : patches(patched_))
    if (!first_of(p, {"message_id"}).empty()) quoted.push_back(p);
  const std::string thread = thread_id();
  if (thread.empty()) return;
  if (!options_.no_reply.empty()) {
    heading("Reply");
    paragraph(one_line("No reply: " + options_.no_reply + "."), "ks-send");
    return;
  }
  ReplyMail mail;
  mail.in_reply_to = thread;
  for (auto& p : patches(patched_))
    if (mail.subject.empty()) mail.subject = one_line(first_of(p, {"subject"}));
  if (!mail.subject.empty() && !starts_with_re(mail.subject)) mail.subject = "Re: " + mail.subject;
  mail.from = one_line(options_.from.empty() ? options_.tester : options_.from);
  // Whom it goes to: the command line's, else the patch's author, and everyone the patch
  // mail went to (the list) on Cc: the reply stays in the thread.
  // Each address once, ours not at all (a patch mail Cc'ing 20,000 took 13 s compared pairwise).
  std::set<std::string> seen{lower(clean_address(address_of(mail.from)))};
  auto add = [&](std::vector<std::string>& list, std::string address) {
    address = clean_address(address);
    if (!address.empty() && seen.insert(lower(address)).second) list.push_back(address);
  };
  for (auto& a : options_.to) add(mail.to, address_of(a));
  for (auto& a : options_.cc) add(mail.cc, address_of(a));
  if (options_.to.empty() && !quoted.empty()) add(mail.to, address_of(first_of(quoted[0], {"author"})));
  if (options_.cc.empty())
    for (auto& p : quoted)
      for (const char* field : {"to", "cc"})
        for (auto& a : addresses_in(first_of(p, {field}))) add(mail.cc, a);

  std::string body;
  for (size_t i = 0; i < quoted.size(); ++i) {
    auto& p = quoted[i];
    std::string date = mail_date(first_of(p, {"date"}));
    std::string author = one_line(display_name(first_of(p, {"author"})));
    // A name, not a paragraph in the tester's voice ("..., so please apply it. Thanks,").
    if (author.size() > kMaxQuotedName) author = clean_address(address_of(first_of(p, {"author"})));
    if (i > 0) body += "\n";
    // Our words first, continued lines indented: an author cannot start a line ("Tested-by: ...").
    if (!author.empty())
      body += wrap("On " + (date.empty() ? std::string("an unknown date") : date) + ", " + author + " wrote:",
                   kTextWidth, "", "  ") +
              "\n";
    std::string patch_subject = one_line(first_of(p, {"subject"}));
    if (!patch_subject.empty()) body += wrap(patch_subject, kTextWidth, "> Subject: ", ">   ") + "\n";
    body += "> Message-ID: <" + bare_message_id(first_of(p, {"message_id"})) + ">\n";
  }
  body += (quoted.empty() ? "" : "\n") + wrap(reply_summary(), kReplyWidth) + "\n";
  if (auto table = reply_table(); !table.empty()) body += "\n" + table;
  if (auto where = reply_profile(); !where.empty()) body += "\n" + where;
  std::string where;
  // Facts, not prose: the backend without the accelerator's reason, and each value at most two
  // lines (a CPU model, a source path or a release of a paragraph read as the tester's words).
  auto bounded = [](std::string value) {
    if (value.size() <= kMaxWhereValue) return value;
    auto space = value.rfind(' ', kMaxWhereValue);
    return value.substr(0, space == std::string::npos ? kMaxWhereValue : space) + " ...";
  };
  const auto backend = backend_line();
  for (auto [key, value] : {std::pair{"Backend", backend.substr(0, backend.find(" ("))}, {"Clock", clock_line()}, {"Kernels", kernels()},
                            {"Source", source_line()}, {"Machine", machine_line()}})
    if (!value.empty()) where += without_trailers(wrap(one_line(bounded(value)), kReplyWidth, std::string(key) + ": ", "  "), true) + "\n";
  if (auto why = claim_out_of_reach())
    where += without_trailers(wrap(one_line("The effect the thread reported cannot appear in this run: " + *why + "."), kReplyWidth)) + "\n";
  body = without_trailers(printable_lines(body));  // it quotes the bundle and the mail: no trailer
  if (!where.empty()) body += "\n" + where;  // its lines were guarded as they were made
  if (options_.attachment) {
    auto& a = *options_.attachment;
    body += "\n" + wrap(fmt::format("The evidence bundle is attached as {} ({} bytes); "
                                    "`ksandwich validate {}` recomputes every figure above from it.",
                                    a.name, thousands(a.bytes), a.name),
                        kReplyWidth) +
            "\nSHA-256: " + a.sha256 + "\n";
  }
  auto allowed = trailers_for(b_.verdict);
  const std::string tester = one_line(options_.tester);
  std::string tags;
  // Only a run that decided every workload and found no harm (exit 0): an IMPROVEMENT beside
  // an INCONCLUSIVE workload is no Tested-by: (thirty-seventh attack).
  if (!tester.empty() && allowed.tested_by && analysis::exit_code_for(b_) == kExitOk)
    tags += "Tested-by: " + tester + "\n";
  // A regression in the 0-day robot's form: b4 would collect a bare Reported-by: onto the
  // regressing patch itself, and drop a Link:.
  if (allowed.reported_by)
    tags += "If you fix the issue in a separate patch/commit, kindly add:\n" +
            (tester.empty() ? std::string() : "| Reported-by: " + tester + "\n") +
            "| Closes: https://lore.kernel.org/r/" + thread + "\n";
  if (!tags.empty()) body += "\n" + tags;
  mail.body = printable_lines(body);  // bundle text (a machine's name, a workload's) sent as it is

  heading("Reply");
  std::string shown = options_.attachment ? "--- reply (reply.eml beside the report; the bundle is attached there) ---\n"
                                          : "--- reply (reply.eml beside the report) ---\n";
  if (!mail.from.empty()) shown += wrap(mail.from, kTextWidth, "From: ", " ") + "\n";
  if (!mail.to.empty()) shown += wrap(join(mail.to, ", "), kTextWidth, "To: ", " ") + "\n";
  if (!mail.cc.empty()) shown += wrap(join(mail.cc, ", "), kTextWidth, "Cc: ", " ") + "\n";
  if (!mail.subject.empty()) shown += wrap(mail.subject, kTextWidth, "Subject: ", " ") + "\n";
  shown += "In-Reply-To: <" + thread + ">\nReferences: <" + thread + ">\n\n" + body;
  preformatted(shown, "ks-reply");
  // Only a Message-ID a header can carry makes a mail (the text above shows what there is).
  const bool sendable = thread.size() <= 250 && thread.find('@') != std::string::npos &&
                        std::all_of(thread.begin(), thread.end(), [](unsigned char c) {
                          return c > ' ' && c < 0x7f && c != '<' && c != '>';
                        });
  if (!sendable) {
    paragraph("The Message-ID is not one a mail header can carry: no reply.eml.", "ks-send");
    return;
  }
  paragraph(std::string("reply.eml (`ksandwich report BUNDLE --format eml` writes it again) is this reply as a MIME mail") +
                (options_.attachment ? " with the bundle attached" : "") +
                ": send it with `sendmail -oi -t < reply.eml` or `msmtp -t < reply.eml`, or edit it first with "
                "`mutt -H reply.eml`.",
            "ks-send");
  doc_.reply = std::move(mail);
}

// Per workload, LKP's shape: control mean +-%stddev, %change, patched mean +-%stddev over
// the points' best rounds (what the verdict reads), within 72 columns.
std::string Builder::reply_table() const {
  if (!b_.analysis || b_.analysis->workloads.empty()) return "";
  auto arm_figures = [&](const WorkloadAnalysis& w, const std::string& arm) -> std::pair<double, double> {
    std::vector<double> best;
    for (auto& p : w.points)
      if (p.arm == arm) best.push_back(w.higher_is_better ? p.max : p.min);
    if (best.empty()) return {std::nan(""), std::nan("")};
    double mean = 0, ss = 0;
    for (double v : best) mean += v / static_cast<double>(best.size());
    for (double v : best) ss += (v - mean) * (v - mean);
    const double sd = best.size() > 1 ? std::sqrt(ss / static_cast<double>(best.size() - 1)) : 0;
    return {mean, mean != 0 ? 100 * sd / mean : std::nan("")};
  };
  auto figure = [](std::pair<double, double> f, double scale) {
    f.first *= scale;
    if (!std::isfinite(f.first)) return fmt::format("{:>18}", "n/a");
    return fmt::format("{:>11} +-{:>3.0f}%", fixed(f.first, f.first >= 100 ? 0 : 2), f.second);
  };
  std::string out = fmt::format("{:>18} {:>9} {:>18}\n", control_, "%change", patched_);
  for (auto& w : b_.analysis->workloads) {
    const double change = w.ratio_ci ? 100 * (w.ratio_ci->estimate - 1) : w.delta_pct;
    const auto unit = unit_for(w.metric, clock_);
    out += fmt::format("{} {:>+8.1f}% {}  {} {}\n", figure(arm_figures(w, control_), unit.scale), change,
                       figure(arm_figures(w, patched_), unit.scale), w.workload, unit.name);
  }
  return out;
}

std::string Builder::reply_summary() const {
  std::string setup = "I ran ";
  setup += confirm_scheme() ? "a randomised-block comparison" : "a sandwich";
  std::string order = order_phrase();
  if (!order.empty()) setup += " (" + order + ")";
  setup += " with ksandwich";
  if (!b_.backend.empty()) setup += " on the " + b_.backend + " backend";
  std::string kind;
  for (auto* p : points_)
    if (kind.empty()) kind = first_of(p->storage, {"kind"});
  if (!kind.empty()) setup += ", with a fresh btrfs on " + kind + " for every point";
  setup += ". Rounds were timed in " + clock_.measures + ".";
  if (!clock_.cannot_see.empty()) setup += " Note: " + clock_.cannot_see + ".";

  std::vector<std::string> effects;
  if (b_.analysis)
    for (auto& w : b_.analysis->workloads) {
      std::string e = w.workload + " " + effect(w) + " " + unit_for(w.metric, clock_).name;
      std::vector<std::string> inside;
      if (w.ratio_ci) inside.push_back(ci_phrase(*w.ratio_ci));
      inside.push_back(verdict_prose(w));
      effects.push_back(e + " (" + join(inside, ", ") + ")");
    }
  std::string text = setup;
  if (!effects.empty())
    text += " " + capitalised(patched_) + " vs " + control_ + ": " + english_list(effects) + ".";

  size_t total = 0, bad = 0;
  for (auto& r : b_.rows)
    if (is_timing_row(r)) {
      ++total;
      bad += row_problem(r).empty() ? 0 : 1;
    }
  if (total > 0 && bad == 0)
    text += fmt::format(" All {} timing rows passed the semantic checks.", thousands(total));
  else if (bad > 0)
    text += fmt::format(" {} of {} timing rows failed the semantic checks.", thousands(bad),
                        thousands(total));
  if (b_.verdict == "INVALID") {
    auto failed = failed_gate_names();
    text += " The run is INVALID" +
            (failed.empty() ? std::string() : " (failed: " + join(failed, ", ") + ")") +
            ", so these figures are not evidence either way.";
  } else {
    text += " Verdict: " + b_.verdict + ".";
  }
  return one_line(text);  // one paragraph: no bundle text starts a line of its own
}

}  // namespace ks::report::detail
