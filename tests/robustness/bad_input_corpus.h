// The bad-input corpus: inputs a user can hand
// onnx-autopar that are broken (empty, truncated, random or cyclic models,
// dangling or duplicate names, external data out of range, invalid cluster,
// cost-graph and placement files) or merely unusual (odd names, names the
// rewriter generates, unknown ops, new opsets, FLOP counts past 64 bits), each
// with what every command must do with it. Everything is built in code; no
// opaque binary is checked in.
#ifndef AUTOPAR_TESTS_ROBUSTNESS_BAD_INPUT_CORPUS_H_
#define AUTOPAR_TESTS_ROBUSTNESS_BAD_INPUT_CORPUS_H_

#include <map>
#include <string>
#include <vector>

namespace autopar::testing {

/// What one run of the CLI must end in: exit 0 with a correct result, or a
/// clean error (one line containing `needle`) with `exit_code`.
struct Outcome {
  int exit_code = 0;
  std::string needle;
  /// For a successful split: also run the deployment in ONNX Runtime
  /// (tools/runner --check) where the runner is installed.
  bool run_in_ort = false;
};

/// One command line. In `args`, "{dir}" is the case's folder (its files lie
/// there; the model is {dir}/model.onnx) and "{out}" the output folder a split
/// writes, {dir}/out.
struct CorpusRun {
  std::string label;  // "info", "split", "place --costgraph", ...
  std::vector<std::string> args;
  Outcome outcome;
};

/// One input: files, written into a fresh folder, and the runs on them.
struct CorpusCase {
  std::string name;
  std::map<std::string, std::string> files;  // file name -> bytes
  std::vector<CorpusRun> runs;
};

/// Every case of the corpus, in a fixed order.
std::vector<CorpusCase> BadInputCorpus();

}  // namespace autopar::testing

#endif  // AUTOPAR_TESTS_ROBUSTNESS_BAD_INPUT_CORPUS_H_
