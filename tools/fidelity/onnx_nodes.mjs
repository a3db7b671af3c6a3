// The top-level nodes of an ONNX model file — name, op type, input and output
// tensor names, in the file's (topological) order — read straight from the
// protobuf wire format, so that measure.mjs can relate ONNX Runtime's
// optimised nodes to the model's own without a protobuf dependency.
// Subgraphs (Loop/If/Scan bodies) are not descended into: their nodes are
// profiled and placed as part of the node that holds them.
import { readFileSync } from 'node:fs';
import { Reader } from '../runner/tensor_pb.mjs';
import { badInput } from '../runner/errors.mjs';

// Field numbers of onnx.proto.
const MODEL_GRAPH = 7;
const GRAPH_NODE = 1;
const NODE_INPUT = 1;
const NODE_OUTPUT = 2;
const NODE_NAME = 3;
const NODE_OP_TYPE = 4;
const LENGTH_DELIMITED = 2;

const utf8 = new TextDecoder('utf-8');

/** Calls fn(field, wireType, reader) for each field of the message in `bytes`. */
function fields(bytes, fn) {
  const r = new Reader(bytes);
  while (!r.done()) {
    const key = Number(r.varint());
    const field = key >>> 3;
    const wireType = key & 7;
    if (!fn(field, wireType, r)) r.skip(wireType);
  }
}

function decodeNode(bytes) {
  const node = { name: '', op: '', inputs: [], outputs: [] };
  fields(bytes, (field, wireType, r) => {
    if (wireType !== LENGTH_DELIMITED) return false;
    if (field === NODE_INPUT) node.inputs.push(utf8.decode(r.bytes()));
    else if (field === NODE_OUTPUT) node.outputs.push(utf8.decode(r.bytes()));
    else if (field === NODE_NAME) node.name = utf8.decode(r.bytes());
    else if (field === NODE_OP_TYPE) node.op = utf8.decode(r.bytes());
    else return false;
    return true;
  });
  return node;
}

/** [{name, op, inputs, outputs}] of the model's main graph; a file that is not a model is a bad-input error. */
export function decodeModelNodes(bytes, label = 'model') {
  const nodes = [];
  try {
    let graph = null;
    fields(bytes, (field, wireType, r) => {
      if (field !== MODEL_GRAPH || wireType !== LENGTH_DELIMITED) return false;
      graph = r.bytes();
      return true;
    });
    if (!graph) throw new Error('no graph');
    fields(graph, (field, wireType, r) => {
      if (field !== GRAPH_NODE || wireType !== LENGTH_DELIMITED) return false;
      nodes.push(decodeNode(r.bytes()));
      return true;
    });
  } catch (e) {
    throw badInput(`${label}: not an ONNX model (${e.message})`);
  }
  return nodes;
}

export function readModelNodes(path) {
  return decodeModelNodes(readFileSync(path), path);
}
