// The claim of the thread an experiment reproduces (experiment.claim): its figure beside the
// verdict, and, where the effect needs several CPUs working at once, whether this run had them.
#include <fmt/format.h>

#include <algorithm>

#include "report/builder.hpp"
#include "report/format.hpp"

namespace ks::report::detail {
namespace {

using nlohmann::json;

unsigned positive(const json& object, const char* key, unsigned fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer() || it->get<long long>() < 1 || it->get<long long>() > 1 << 20)
    return fallback;
  return it->get<unsigned>();
}

std::string cpus(unsigned n) { return fmt::format("{} CPU{}", n, n == 1 ? "" : "s"); }

json claim_of(const json& experiment) { return experiment.is_object() ? experiment.value("claim", json()) : json(); }

}  // namespace

Builder::Parallel Builder::parallel_cpus() const {
  const json& e = b_.experiment;
  unsigned cores = positive(b_.machine, "cores", 1);
  // Pinned, the workload (and a guest's every vCPU thread) has one host CPU.
  if (double cpu = field_or(e, "cpu", -1.0); cpu >= 0) return {1, fmt::format("the workload pinned to CPU {}", cpu)};
  if (b_.backend == "qemu") {
    if (clock_.name == "icount") return {1, "the instruction clock runs one vCPU"};
    unsigned vcpus = positive(e.is_object() ? e.value("qemu", json::object()) : json::object(), "vcpus", 1);
    auto accel = b_.machine.is_object() ? field_or(b_.machine.value("accelerator", json()), "used", std::string("?"))
                                        : std::string("?");
    return {std::min(vcpus, cores), fmt::format("{} vCPU{} under {} on {} host {}", vcpus, vcpus == 1 ? "" : "s",
                                                accel, cores, cores == 1 ? "core" : "cores")};
  }
  return {cores, fmt::format("this machine's {}", cpus(cores))};
}

std::optional<std::string> Builder::claim_out_of_reach() const {
  const json claim = claim_of(b_.experiment);
  unsigned needs = positive(claim, "parallel_cpus", 1);
  auto had = parallel_cpus();
  if (needs <= had.cpus) return std::nullopt;
  return fmt::format("it needs {} at once, this run had {}", cpus(needs), had.cpus);
}

void Builder::claim() {
  const json claim = claim_of(b_.experiment);
  if (!claim.is_object()) return;
  auto thread = first_of(claim, {"thread"}), figure = first_of(claim, {"figure"});
  if (thread.empty() || figure.empty()) return;
  std::string text = "The thread: " + thread + ". Its figure: " + figure + ".";
  if (unsigned needs = positive(claim, "parallel_cpus", 1); needs > 1) {
    auto had = parallel_cpus();
    auto words = first_of(claim, {"needs"});
    auto need = fmt::format("the effect needs {} running the workload at once{}", cpus(needs),
                            words.empty() ? "" : " (" + words + ")");
    text += needs <= had.cpus ? fmt::format(" This run can show it: {}; it had {} ({}).", need, had.cpus, had.reason)
                              : fmt::format(" This run cannot show it: {}; this run had {} ({}). Its verdicts measure "
                                            "the code path alone: a NO_CHANGE here neither confirms nor refutes the "
                                            "thread's figure.",
                                            need, had.cpus, had.reason);
  }
  paragraph(text, "ks-claim");
}

}  // namespace ks::report::detail
