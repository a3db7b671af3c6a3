// The two-layer perceptron the training command tests train: logits [4,3],
// 3 initializers (w1 [8,5], b1 [5], w2 [5,3]). The text format leaves its
// nodes unnamed, so the importer names them MatMul_0, Add_1, Relu_2,
// MatMul_3. Tests replace `Relu(hb)` to put other operators on the path.
#ifndef AUTOPAR_TESTS_TOOLS_CLI_COMMANDS_TRAINING_MLP_H_
#define AUTOPAR_TESTS_TOOLS_CLI_COMMANDS_TRAINING_MLP_H_

namespace autopar::testing {

inline constexpr char kTrainingMlp[] = R"(
  <ir_version: 8, opset_import: ["" : 17]>
  mlp (float[4,8] x) => (float[4,3] logits)
  <float[8,5] w1 = {1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40},
   float[5] b1 = {1,2,3,4,5},
   float[5,3] w2 = {1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}> {
    h = MatMul(x, w1)
    hb = Add(h, b1)
    a = Relu(hb)
    logits = MatMul(a, w2)
  }
)";

}  // namespace autopar::testing

#endif  // AUTOPAR_TESTS_TOOLS_CLI_COMMANDS_TRAINING_MLP_H_
