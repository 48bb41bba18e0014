#include <fmt/format.h>

#include "cli/commands.hpp"
#include "history/store.hpp"
#include "history/trend.hpp"
#include "util/error.hpp"
#include "util/files.hpp"

namespace ks::cli {
namespace {

std::string percent_of(const std::optional<double>& ratio) {
  return ratio ? fmt::format("{:+.2f}%", 100 * (*ratio - 1)) : "n/a";
}

}  // namespace

void set_history_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("history", "the history of runs in one SQLite file: add bundles, list, show");
  set_exit_status(cmd, {{0, "done"}});
  cmd->require_subcommand(1);
  auto db = std::make_shared<std::string>();
  auto bundles = std::make_shared<std::vector<std::string>>();
  auto experiment = std::make_shared<std::string>();
  auto run_id = std::make_shared<int64_t>(0);
  auto json_out = std::make_shared<bool>(false);

  auto* add = cmd->add_subcommand("add", "record bundles (each checked like `validate`; one transaction each)");
  set_exit_status(add, {{0, "done"}});
  add->add_option("--history", *db, "the history file (created when missing)")->required();
  add->add_option("bundles", *bundles, "bundle.json of finished runs")->required();
  add->callback([db, bundles, &context] {
    check_output_file(*db, "--history", true);
    history::Store store(*db);
    for (auto& b : *bundles) {
      check_bundle_file(b);
      auto added = history::add_bundle_file(store, b);
      fmt::print("{}: {} run {}\n", one_line(b), added.already ? "already in the history as" : "added as", added.id);
    }
    context.exit_code = 0;
  });

  auto* list = cmd->add_subcommand("list", "one line per run, oldest first");
  set_exit_status(list, {{0, "done"}});
  list->add_option("--history", *db, "the history file")->required();
  list->add_option("--experiment", *experiment, "only this experiment");
  add_text_or_json(list, *json_out, "one line per run, or JSON");
  list->callback([db, experiment, json_out, &context] {
    history::Store store(*db, history::Store::Open::kExisting);
    auto runs = store.runs(*experiment);
    if (*json_out) {
      fmt::print("{}\n", nlohmann::json(runs).dump(2, ' ', true, nlohmann::json::error_handler_t::replace));
    } else {
      fmt::print("{:>4}  {:<20}  {:<16}  {:<14}  {}\n", "run", "created", "experiment", "verdict", "tip");
      for (auto& r : runs)
        fmt::print("{:>4}  {:<20}  {:<16}  {:<14}  {}\n", r.id, one_line(r.created_at), one_line(r.experiment),
                   one_line(r.verdict), one_line(r.patched_source));
    }
    context.exit_code = 0;
  });

  auto* show = cmd->add_subcommand("show", "one run: where it ran, what it measured, its bundle");
  set_exit_status(show, {{0, "done"}});
  show->add_option("--history", *db, "the history file")->required();
  show->add_option("run", *run_id, "the run number `history list` shows")->required();
  add_text_or_json(show, *json_out, "the run as text or JSON");
  show->callback([db, run_id, json_out, &context] {
    history::Store store(*db, history::Store::Open::kExisting);
    auto run = store.run(*run_id);
    if (!run) throw UserError(fmt::format("the history has no run {}", *run_id), "`ksandwich history list` shows them");
    auto workloads = store.workloads(run->id);
    if (*json_out) {
      nlohmann::json j = *run;
      j["workloads"] = workloads;
      fmt::print("{}\n", j.dump(2, ' ', true, nlohmann::json::error_handler_t::replace));
      context.exit_code = 0;
      return;
    }
    std::pair<const char*, const std::string*> facts[] = {
        {"experiment", &run->experiment},       {"created", &run->created_at},
        {"added", &run->added_at},              {"backend", &run->backend},
        {"baseline", &run->control_source},     {"tip", &run->patched_source},
        {"machine", &run->machine},             {"fingerprint", &run->machine_fingerprint},
        {"tool", &run->tool_version},           {"revision", &run->tool_revision},
        {"verdict", &run->verdict},             {"bundle", &run->bundle_path},
        {"sha256", &run->bundle_sha256},        {"clock", &run->clock}};
    fmt::print("run {}\n", run->id);
    for (auto& [key, value] : facts) fmt::print("  {:<12} {}\n", key, one_line(*value));
    fmt::print("\n  {:<16} {:>10}  {:<22}  {:>8}  {}\n", "workload", "ratio", "interval", "MDE", "verdict");
    for (auto& w : workloads)
      fmt::print("  {:<16} {:>10}  {:<22}  {:>8}  {}{}\n", one_line(w.workload), percent_of(w.ratio),
                 fmt::format("[{}, {}]", percent_of(w.ratio_low), percent_of(w.ratio_high)),
                 w.mde_pct ? fmt::format("{:.2f}%", *w.mde_pct) : "n/a", one_line(w.verdict), w.material ? " (material)" : "");
    context.exit_code = 0;
  });
}

void set_trend_command(CLI::App& app, Context& context) {
  auto* cmd = app.add_subcommand("trend", "the tip/baseline ratio night by night from a history, with change "
                                          "points and the commits between the nights either side");
  set_exit_status(cmd, {{0, "the trend was printed"}});
  struct Args {
    std::string db, experiment, format = "text", out;
    double material_pct = 1.0;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("--history", args->db, "the history file")->required();
  cmd->add_option("--experiment", args->experiment, "only this experiment");
  cmd->add_option("--material-pct", args->material_pct,
                  "smallest move of the ratio that makes a change point (default 1%)")
      ->check(material_pct());
  cmd->add_option("--format", args->format, "text | markdown | html | json")
      ->check(CLI::IsMember({"text", "markdown", "html", "json"}));
  cmd->add_option("--out", args->out, "write the trend here instead of standard output")->check(non_empty_path());
  cmd->callback([args, &context] {
    if (!args->out.empty()) check_output_file(args->out, "--out");
    history::Store store(args->db, history::Store::Open::kExisting);
    auto trend = history::render_trend(history::trend_of(store, args->experiment, args->material_pct), args->format);
    if (args->out.empty())
      fmt::print("{}", trend);
    else
      write_file_atomic(args->out, trend);
    context.exit_code = 0;
  });
}

}  // namespace ks::cli
