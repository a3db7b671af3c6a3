// ONNX Runtime's `com.microsoft` Send and Recv operators (the ones its
// pipeline-parallel runtime executes over MPI), registered with the installed
// ONNX library's schema registry so that device models with Send/Recv pass the
// checker and shape inference.
//
// The schemas follow ONNX Runtime's training op definitions:
//
//   Send(InputSignal: tensor(bool), Remote: tensor(int64), Data...: V)
//       -> OutputSignal: tensor(bool)
//   Recv(InputSignal: tensor(bool), Remote: tensor(int64))
//       -> OutputSignal: tensor(bool), Data...: V
//
// with `V` any tensor type (heterogeneous variadic), the required attributes
// `tag` (int: the message tag both ends share) and `element_types` (ints: the
// TensorProto data type of each Data tensor), and scalar signals and Remote
// (Send: the destination rank; Recv: the source rank). One difference: `V`
// admits bfloat16 too, so that bfloat16 models can be split.
//
// Shape inference types every Recv Data output from `element_types`; its shape
// is left unknown — the rewriter writes each received tensor's shape into the
// device model's value_info, which inference merges with the inferred type.
#ifndef AUTOPAR_ONNX_IO_SEND_RECV_SCHEMA_H_
#define AUTOPAR_ONNX_IO_SEND_RECV_SCHEMA_H_

namespace autopar::onnx_io {

/// The operator domain of Send and Recv, and the opset version a model must
/// import for it.
inline constexpr char kSendRecvDomain[] = "com.microsoft";
inline constexpr int kSendRecvOpsetVersion = 1;

/// Registers the Send and Recv schemas (and the `com.microsoft` domain, version
/// 1, when the library does not know it) with ONNX's global schema registry.
/// Idempotent and thread-safe; schemas somebody else registered already are
/// left as they are. Call it before checking or inferring shapes of a model
/// with Send/Recv; nothing registers them at static-initialisation time.
void RegisterSendRecvSchemas();

}  // namespace autopar::onnx_io

#endif  // AUTOPAR_ONNX_IO_SEND_RECV_SCHEMA_H_
