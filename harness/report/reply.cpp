// The reply block: the quoted patch, a summary a maintainer can read in a mail client,
// and the trailers that mailing-list etiquette allows for this verdict.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "report/builder.hpp"
#include "report/format.hpp"
#include "util/files.hpp"

namespace ks::report::detail {

constexpr size_t kReplyWidth = 72;

namespace {

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

// "<id@host>" or "id@host" -> "id@host".
// A Message-ID without its angle brackets, on one line whatever the mail or the command line
// held (a newline in it would start a header of its own in the reply).
std::string bare_message_id(std::string id) {
  id = one_line(id);
  while (!id.empty() && (id.front() == '<' || id.front() == ' ')) id.erase(id.begin());
  while (!id.empty() && (id.back() == '>' || id.back() == ' ')) id.pop_back();
  return id;
}

// "Name <a@b>" -> "a@b"; "a@b" stays.
std::string address_of(const std::string& author) {
  auto lt = author.find('<'), gt = author.rfind('>');
  if (lt != std::string::npos && gt != std::string::npos && gt > lt)
    return author.substr(lt + 1, gt - lt - 1);
  return author.find('@') != std::string::npos ? author : "";
}

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
  heading("Reply");
  // The block is a mail git send-email can send: headers, a blank line, the body.
  std::string subject;
  for (auto& p : patches(patched_))
    if (subject.empty()) subject = one_line(first_of(p, {"subject"}));
  std::string out = "--- reply (save from the next line on as reply.eml) ---\n";
  if (!subject.empty()) out += wrap("Re: " + subject, kTextWidth, "Subject: ", " ") + "\n";
  out += "In-Reply-To: <" + thread + ">\nReferences: <" + thread + ">\n\n";
  for (size_t i = 0; i < quoted.size(); ++i) {
    auto& p = quoted[i];
    std::string date = one_line(first_of(p, {"date"}));
    std::string author = one_line(display_name(first_of(p, {"author"})));
    if (i > 0) out += "\n";
    if (!date.empty() && !author.empty())
      out += wrap("On " + date + ", " + author + " wrote:", kTextWidth) + "\n";
    else if (!author.empty())
      out += author + " wrote:\n";
    std::string patch_subject = one_line(first_of(p, {"subject"}));
    if (!patch_subject.empty()) out += wrap(patch_subject, kTextWidth, "> Subject: ", ">   ") + "\n";
    out += "> Message-ID: <" + bare_message_id(first_of(p, {"message_id"})) + ">\n";
  }
  out += (quoted.empty() ? "" : "\n") + wrap(reply_summary(), kReplyWidth) + "\n";
  if (options_.attachment) {
    auto& a = *options_.attachment;
    out += "\n" + wrap(fmt::format("The evidence bundle is attached as {} ({} bytes); "
                                   "`ksandwich validate {}` recomputes every figure above from it.",
                                   a.name, thousands(a.bytes), a.name),
                       kReplyWidth) +
           "\nSHA-256: " + a.sha256 + "\n";
  }
  auto allowed = trailers_for(b_.verdict);
  std::string tags;
  const std::string tester = one_line(options_.tester);
  if (!tester.empty() && allowed.tested_by) tags += "Tested-by: " + tester + "\n";
  if (!tester.empty() && allowed.reported_by) tags += "Reported-by: " + tester + "\n";
  if (allowed.reported_by) tags += "Link: https://lore.kernel.org/r/" + thread + "\n";
  if (!tags.empty()) out += "\n" + tags;
  preformatted(out, "ks-reply");

  // How to send it: not part of the mail. Pasted into a shell, so every value is quoted.
  std::string to;
  if (!quoted.empty())
    if (auto address = one_line(address_of(first_of(quoted[0], {"author"}))); !address.empty())
      to = " --to=" + shell_quote(address);
  std::string send = "  git send-email \\\n    --in-reply-to=" + shell_quote("<" + thread + ">") + " \\\n";
  if (!to.empty()) send += "   " + to + " \\\n";
  paragraph("To send it in the thread, save the block above as reply.eml and run:", "ks-send");
  preformatted(send + "    reply.eml\n", "ks-send-command");
  if (options_.attachment)
    paragraph("git send-email sends text only: attach " + options_.attachment->name +
                  " from a mail client, or publish it and give its address instead.",
              "ks-send");
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
  return text;
}

}  // namespace ks::report::detail
