#pragma once
// The confirm scheme's unit: a block, one point of each arm in a seeded order. Analysed
// paired by block: d = ln(patched / control) of the points' best rounds (point_best) within
// each whole block.
#include <string>
#include <vector>

#include "analysis/samples.hpp"
#include "evidence/bundle.hpp"

namespace ks::analysis {

struct Blocks {
  std::vector<evidence::BlockRatio> ratios;     // whole blocks, ascending block number
  std::vector<double> log_ratios;               // ln(ratios[i].ratio)
  // Per whole block: how much farther the patched point's mean round lies from its best
  // round than the control point's, in log units (each tail |ln mean - ln best| >= 0).
  std::vector<double> tail_shifts;
  std::vector<evidence::DroppedBlock> dropped;  // blocks left out, and why
};

// A block is whole when every point in it finished and each arm has a point with measured
// rounds of this workload. A block with a failed point is dropped whole, as is one where an
// arm lacks data or a point ran disturbed throughout (PointSample::disturbed_throughout); a
// block with a pending point is neither used nor dropped (the run goes on).
// When an arm ran twice in a block, its logs are averaged. `skip_first`: best rounds without
// each point's first round.
Blocks paired_blocks(const std::vector<evidence::Point>& points,
                     const std::vector<PointSample>& samples, const std::string& control_arm,
                     const std::string& patched_arm, bool higher_is_better,
                     bool skip_first = false);

}  // namespace ks::analysis
