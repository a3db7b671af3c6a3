// A Triton Inference Server model repository, read and run the way Triton
// would run it, without a Triton server: from the config.pbtxt files and the
// model files only (never plan.json).
//
//  1. parseTextProto: protobuf text format (what config.pbtxt is written in)
//     into a generic tree; readModelConfig maps that tree onto the part of
//     Triton's ModelConfig this runner needs (name, platform, inputs,
//     outputs, instance groups, ensemble steps). Unknown fields are skipped,
//     as they do not change how tensors flow.
//  2. loadTritonRepository: every <model>/config.pbtxt, the one ensemble,
//     and the model file of each step (<model>/<version>/model.onnx). A
//     batching config (max_batch_size > 0, its dims without the batch) gets
//     the batch back as a leading -1, so both forms are checked and run
//     alike; a request's batch must then be within max_batch_size.
//  3. checkRepository: what Triton checks when it loads the ensemble (every
//     model input mapped exactly once, map keys name real inputs/outputs,
//     each ensemble tensor's type and dims agree wherever it appears), what
//     its ONNX Runtime backend checks against the model (names, types, dims),
//     and that every ensemble tensor has one producer and the steps form no
//     cycle.
//  4. runEnsemble: one request. A step runs when every ensemble tensor its
//     input_map reads exists (the ready steps in the order the config lists
//     them); its output_map names the ensemble tensors it produces. Inputs
//     and outputs are reshaped as their `reshape` says.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { badInput } from './errors.mjs';
import { numel } from './dtypes.mjs';

// ---------------------------------------------------------------------------
// 1. Protobuf text format
// ---------------------------------------------------------------------------

const SIMPLE_ESCAPES = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '\\': 92, "'": 39, '"': 34, '?': 63 };

/** Tokens of protobuf text format: {t: 'id'|'num'|'str'|'sym', v, line, col}; a string's v is its bytes. */
function tokenize(text) {
  const tokens = [];
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const fail = (msg, at = i) => {
    throw new Error(`line ${line} column ${at - lineStart + 1}: ${msg}`);
  };
  while (i < text.length) {
    const c = text[i];
    if (c === '\n') {
      line++;
      lineStart = ++i;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v') {
      i++;
      continue;
    }
    if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
      continue;
    }
    const start = i;
    const at = { line, col: i - lineStart + 1 };
    if ('{}<>[]:,;'.includes(c)) {
      tokens.push({ t: 'sym', v: c, ...at });
      i++;
      continue;
    }
    if (c === '"' || c === "'") {
      const bytes = [];
      i++;
      while (true) {
        if (i >= text.length || text[i] === '\n') fail('unterminated string', start);
        const ch = text[i];
        if (ch === c) {
          i++;
          break;
        }
        if (ch !== '\\') {
          const cp = text.codePointAt(i);
          const s = String.fromCodePoint(cp);
          bytes.push(...Buffer.from(s, 'utf8'));
          i += s.length;
          continue;
        }
        const e = text[i + 1];
        if (e === undefined) fail('unterminated string', start);
        if (e in SIMPLE_ESCAPES) {
          bytes.push(SIMPLE_ESCAPES[e]);
          i += 2;
        } else if (e >= '0' && e <= '7') {
          let j = i + 1;
          let v = 0;
          while (j < i + 4 && text[j] >= '0' && text[j] <= '7') v = v * 8 + Number(text[j++]);
          if (v > 255) fail('octal escape above \\377', i);
          bytes.push(v);
          i = j;
        } else if (e === 'x' || e === 'X') {
          const m = /^[0-9a-fA-F]{1,2}/.exec(text.slice(i + 2, i + 4));
          if (!m) fail('\\x needs hex digits', i);
          bytes.push(parseInt(m[0], 16));
          i += 2 + m[0].length;
        } else if (e === 'u' || e === 'U') {
          const n = e === 'u' ? 4 : 8;
          const h = text.slice(i + 2, i + 2 + n);
          if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(h)) fail(`\\${e} needs ${n} hex digits`, i);
          const cp = parseInt(h, 16);
          if (cp > 0x10ffff) fail('code point out of range', i);
          bytes.push(...Buffer.from(String.fromCodePoint(cp), 'utf8'));
          i += 2 + n;
        } else {
          fail(`unknown escape \\${e}`, i);
        }
      }
      tokens.push({ t: 'str', v: Buffer.from(bytes), ...at });
      continue;
    }
    const m = /^-?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fF]?|inf(?:inity)?|nan)/i.exec(text.slice(i, i + 64));
    if (m && (c === '-' || (c >= '0' && c <= '9') || c === '.')) {
      tokens.push({ t: 'num', v: m[0], ...at });
      i += m[0].length;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i, i + 256));
    if (id) {
      tokens.push({ t: 'id', v: id[0], ...at });
      i += id[0].length;
      continue;
    }
    fail(`unexpected character '${c}'`);
  }
  return tokens;
}

/**
 * Parses protobuf text format into a tree: an object (null prototype) whose
 * keys are field names and whose values are arrays of {t: 'str'|'num'|'id',
 * v} scalars or {t: 'msg', v: tree} messages, in the order given. Throws an
 * Error naming the line and column of the first mistake.
 */
export function parseTextProto(text) {
  const tokens = tokenize(text);
  let k = 0;
  const where = (tok) => (tok ? `line ${tok.line} column ${tok.col}` : 'end of file');
  const fail = (msg, tok = tokens[k]) => {
    throw new Error(`${where(tok)}: ${msg}`);
  };
  const isSym = (v) => tokens[k]?.t === 'sym' && tokens[k].v === v;

  function scalar() {
    const tok = tokens[k];
    if (!tok || tok.t === 'sym') fail('expected a value');
    k++;
    if (tok.t !== 'str') return { t: tok.t, v: tok.v };
    // Adjacent string literals are one string: "ab" "cd" is "abcd". Bytes
    // are joined before decoding, as an escaped UTF-8 sequence may be split.
    const parts = [tok.v];
    while (tokens[k]?.t === 'str') parts.push(tokens[k++].v);
    return { t: 'str', v: Buffer.concat(parts).toString('utf8') };
  }
  function value() {
    if (isSym('{') || isSym('<')) {
      const close = tokens[k].v === '{' ? '}' : '>';
      k++;
      const v = message(close);
      k++;
      return { t: 'msg', v };
    }
    return scalar();
  }
  function message(close) {
    const fields = Object.create(null);
    while (true) {
      const tok = tokens[k];
      if (!tok) {
        if (close) fail(`missing '${close}'`);
        return fields;
      }
      if (tok.t === 'sym' && tok.v === close) return fields;
      if (tok.t !== 'id') fail(`expected a field name, found ${tok.t === 'str' ? 'a string' : `'${tok.v}'`}`);
      const name = tok.v;
      k++;
      const colon = isSym(':');
      if (colon) k++;
      const values = [];
      if (isSym('[')) {
        k++;
        while (!isSym(']')) {
          values.push(value());
          if (isSym(',')) k++;
          else if (!isSym(']')) fail("expected ',' or ']'");
        }
        k++;
      } else {
        if (!colon && !(isSym('{') || isSym('<'))) fail(`expected ':' after '${name}'`);
        values.push(value());
      }
      (fields[name] ??= []).push(...values);
      if (isSym(',') || isSym(';')) k++;
    }
  }
  const tree = message(null);
  return tree;
}

// ---------------------------------------------------------------------------
// Reading the tree as Triton's ModelConfig
// ---------------------------------------------------------------------------

/** Triton data types and the ORT tensor type names the runner uses. */
export const TRITON_TYPES = {
  TYPE_BOOL: 'bool', TYPE_UINT8: 'uint8', TYPE_UINT16: 'uint16', TYPE_UINT32: 'uint32', TYPE_UINT64: 'uint64',
  TYPE_INT8: 'int8', TYPE_INT16: 'int16', TYPE_INT32: 'int32', TYPE_INT64: 'int64',
  TYPE_FP16: 'float16', TYPE_FP32: 'float32', TYPE_FP64: 'float64', TYPE_STRING: 'string', TYPE_BF16: 'bfloat16',
};
const TRITON_TYPE_NUMBERS = ['TYPE_INVALID', 'TYPE_BOOL', 'TYPE_UINT8', 'TYPE_UINT16', 'TYPE_UINT32', 'TYPE_UINT64', 'TYPE_INT8',
  'TYPE_INT16', 'TYPE_INT32', 'TYPE_INT64', 'TYPE_FP16', 'TYPE_FP32', 'TYPE_FP64', 'TYPE_STRING', 'TYPE_BF16'];
const KINDS = ['KIND_AUTO', 'KIND_GPU', 'KIND_CPU', 'KIND_MODEL'];

class Reader {
  constructor(tree, path) {
    this.tree = tree;
    this.path = path;
  }
  fail(field, msg) {
    throw new Error(`${this.path ? `${this.path}.` : ''}${field}: ${msg}`);
  }
  all(field, t) {
    const vs = this.tree[field] ?? [];
    for (const v of vs) {
      if (v.t !== t) this.fail(field, t === 'msg' ? 'expected a message { ... }' : `expected a ${t === 'str' ? 'string' : t === 'num' ? 'number' : 'name'}, found '${v.v}'`);
    }
    return vs.map((v) => v.v);
  }
  one(field, t) {
    const vs = this.tree[field] ?? [];
    if (vs.length > 1) this.fail(field, 'given more than once');
    return this.all(field, t)[0];
  }
  str(field, dflt = '') {
    return this.one(field, 'str') ?? dflt;
  }
  int(field, dflt = 0) {
    const vs = this.ints(field);
    if (vs.length > 1) this.fail(field, 'given more than once');
    return vs.length ? vs[0] : dflt;
  }
  ints(field) {
    return this.all(field, 'num').map((v) => {
      const n = Number(v);
      if (!Number.isSafeInteger(n) && !/^-?0[xX]/.test(v)) this.fail(field, `'${v}' is not an integer`);
      return n;
    });
  }
  bool(field) {
    const vs = this.tree[field] ?? [];
    if (vs.length > 1) this.fail(field, 'given more than once');
    if (!vs.length) return false;
    const v = vs[0];
    if (v.t === 'id' && (v.v === 'true' || v.v === 'True' || v.v === 't')) return true;
    if (v.t === 'id' && (v.v === 'false' || v.v === 'False' || v.v === 'f')) return false;
    if (v.t === 'num' && (v.v === '0' || v.v === '1')) return v.v === '1';
    return this.fail(field, `'${v.v}' is not true or false`);
  }
  enumOf(field, names) {
    const vs = this.tree[field] ?? [];
    if (vs.length > 1) this.fail(field, 'given more than once');
    if (!vs.length) return names[0];
    const v = vs[0];
    if (v.t === 'id' && names.includes(v.v)) return v.v;
    if (v.t === 'num' && names[Number(v.v)] !== undefined) return names[Number(v.v)];
    return this.fail(field, `'${v.v}' is not one of ${names.join(', ')}`);
  }
  msgs(field) {
    return this.all(field, 'msg').map((t, i) => new Reader(t, `${this.path ? `${this.path}.` : ''}${field}[${i}]`));
  }
  msg(field) {
    const vs = this.tree[field] ?? [];
    if (vs.length > 1) this.fail(field, 'given more than once');
    return vs.length ? this.msgs(field)[0] : null;
  }
  has(field) {
    return (this.tree[field] ?? []).length > 0;
  }
  /** A map<string, string> field: repeated {key, value} entries; a later key replaces an earlier one. */
  stringMap(field) {
    const m = new Map();
    for (const e of this.msgs(field)) m.set(e.str('key'), e.str('value'));
    return m;
  }
}

function readIo(r) {
  const reshape = r.msg('reshape');
  return {
    name: r.str('name'),
    dataType: r.enumOf('data_type', TRITON_TYPE_NUMBERS),
    dims: r.ints('dims'),
    reshape: reshape ? reshape.ints('shape') : null,
    optional: r.bool('optional'),
  };
}

/**
 * The fields of a ModelConfig tree the runner uses:
 * { name, platform, backend, maxBatchSize, defaultModelFilename,
 *   inputs: [{name, dataType, dims, reshape, optional}], outputs: [...],
 *   instanceGroups: [{kind, count, gpus}],
 *   ensemble: null | {steps: [{modelName, modelVersion, inputMap: Map, outputMap: Map}]} }.
 * Throws an Error naming the field on a value of the wrong kind.
 */
export function readModelConfig(tree) {
  const r = new Reader(tree, '');
  const ens = r.msg('ensemble_scheduling');
  return {
    name: r.str('name'),
    platform: r.str('platform'),
    backend: r.str('backend'),
    maxBatchSize: r.int('max_batch_size'),
    defaultModelFilename: r.str('default_model_filename'),
    inputs: r.msgs('input').map(readIo),
    outputs: r.msgs('output').map(readIo),
    instanceGroups: r.msgs('instance_group').map((g) => ({ kind: g.enumOf('kind', KINDS), count: g.has('count') ? g.int('count') : 1, gpus: g.ints('gpus') })),
    batching: r.has('dynamic_batching') || r.has('sequence_batching'),
    ensemble: ens && {
      steps: ens.msgs('step').map((s) => ({
        modelName: s.str('model_name'),
        modelVersion: s.int('model_version'),
        inputMap: s.stringMap('input_map'),
        outputMap: s.stringMap('output_map'),
      })),
    },
  };
}

// ---------------------------------------------------------------------------
// 2. Loading a repository
// ---------------------------------------------------------------------------

const isDir = (p) => existsSync(p) && statSync(p).isDirectory();

/** Whether `dir` looks like a Triton model repository: a folder with a <model>/config.pbtxt and no plan.json. */
export function isTritonRepository(dir) {
  if (!isDir(dir) || existsSync(join(dir, 'plan.json'))) return false;
  return readdirSync(dir).some((m) => existsSync(join(dir, m, 'config.pbtxt')));
}

/** Numeric version folders of a model folder, ascending. */
function versions(modelDir) {
  return readdirSync(modelDir)
    .filter((v) => /^[0-9]+$/.test(v) && isDir(join(modelDir, v)))
    .map(Number)
    .filter((v) => v > 0)
    .sort((a, b) => a - b);
}

/**
 * A batching config (max_batch_size > 0) leaves the batch dim out of its
 * inputs' and outputs' dims (and reshapes): this puts it back as a leading
 * -1, so that every check and the request runner see full shapes whatever
 * the config's form. Marks the config `batched`.
 */
function withBatchDim(config) {
  config.batched = config.maxBatchSize > 0;
  if (!config.batched) return;
  for (const io of [...config.inputs, ...config.outputs]) {
    io.dims = [-1, ...io.dims];
    if (io.reshape) io.reshape = [-1, ...io.reshape];
  }
}

/**
 * Reads every <model>/config.pbtxt of `dir`. Returns { dir, models: Map(name ->
 * {name, dir, config}), ensemble: the one ensemble's model, steps: [{index,
 * modelName, model, modelPath, inputMap, outputMap}] }. A repository with no
 * ensemble or more than one, a config that does not parse, a step naming a
 * model the repository lacks or a version it does not hold, and a missing
 * model file are RunnerError(BAD_INPUT) naming the file.
 */
export function loadTritonRepository(dirArg) {
  const dir = resolve(dirArg);
  if (!isDir(dir)) throw badInput(`${dirArg}: no such model repository`);
  const models = new Map();
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name, 'config.pbtxt');
    if (!existsSync(path)) continue;
    let config;
    try {
      config = readModelConfig(parseTextProto(readFileSync(path, 'utf8')));
    } catch (e) {
      throw badInput(`${path}: ${e.message}`);
    }
    // Triton: the name, when given, is the folder's.
    if (config.name && config.name !== name) throw badInput(`${path}: name '${config.name}' is not the folder's name '${name}'`);
    config.name = name;
    withBatchDim(config);
    if (versions(join(dir, name)).length === 0) throw badInput(`${join(dir, name)}: no version folder (1/, 2/, ...); Triton would not load '${name}'`);
    models.set(name, { name, dir: join(dir, name), config, path });
  }
  if (models.size === 0) throw badInput(`${dirArg}: no <model>/config.pbtxt (not a Triton model repository)`);
  const ensembles = [...models.values()].filter((m) => m.config.platform === 'ensemble');
  if (ensembles.length !== 1) {
    throw badInput(`${dirArg}: ${ensembles.length === 0 ? 'no ensemble model' : `${ensembles.length} ensemble models (${ensembles.map((e) => e.name).join(', ')})`}; the runner runs a repository through its one ensemble`);
  }
  const ensemble = ensembles[0];
  if (!ensemble.config.ensemble) throw badInput(`${ensemble.path}: platform "ensemble" without ensemble_scheduling`);
  const steps = ensemble.config.ensemble.steps.map((s, index) => {
    const where = `${ensemble.path}: step ${index}`;
    const model = models.get(s.modelName);
    if (!model) throw badInput(`${where}: model '${s.modelName}' is not in the repository`);
    if (model === ensemble) throw badInput(`${where}: the ensemble runs itself`);
    const { platform, backend } = model.config;
    if (platform !== 'onnxruntime_onnx' && !(platform === '' && backend === 'onnxruntime')) {
      throw badInput(`${model.path}: platform '${platform || backend}' is not one the runner executes (onnxruntime_onnx)`);
    }
    const have = versions(model.dir);
    let version = s.modelVersion;
    if (version === -1) version = have.at(-1);
    else if (!have.includes(version)) throw badInput(`${where}: model '${s.modelName}' has no version ${version} (it has ${have.join(', ')}; -1 means the latest)`);
    const modelPath = join(model.dir, String(version), model.config.defaultModelFilename || 'model.onnx');
    if (!existsSync(modelPath)) throw badInput(`${where}: ${modelPath} does not exist`);
    return { index, modelName: s.modelName, model, modelPath, inputMap: s.inputMap, outputMap: s.outputMap };
  });
  if (steps.length === 0) throw badInput(`${ensemble.path}: the ensemble has no steps`);
  return { dir, models, ensemble, steps };
}

// ---------------------------------------------------------------------------
// 3. Checks
// ---------------------------------------------------------------------------

const dimsText = (d) => `[${d.join(', ')}]`;

/** Triton's CompareDimsWithWildcard: same rank, each dim equal or either -1. */
export function dimsMatch(a, b) {
  return a.length === b.length && a.every((d, i) => d === -1 || b[i] === -1 || d === b[i]);
}

/** The shape a config input or output has at the backend: its reshape when given, else its dims. */
const backendShape = (io) => io.reshape ?? io.dims;

/**
 * What Triton and its ONNX Runtime backend would refuse, as a list of error
 * lines (empty: the repository is consistent). `meta`: Map(step index ->
 * {inputs, outputs}) from the loaded ONNX models ([{name, type, shape}];
 * shape entries are numbers, or names for symbolic dims).
 */
export function checkRepository(repo, meta) {
  const errors = [];
  const { ensemble, steps } = repo;
  const ecfg = ensemble.config;
  if (ecfg.maxBatchSize < 0) errors.push(`${ensemble.name}: max_batch_size ${ecfg.maxBatchSize} is negative`);

  // The ONNX Runtime backend: the config's tensors are the model's.
  const checked = new Set();
  for (const step of steps) {
    const { config } = step.model;
    if (checked.has(step.modelName)) continue;
    checked.add(step.modelName);
    const m = meta.get(step.index);
    const name = step.modelName;
    // Triton: a batching ensemble's steps batch at least as much; the
    // writer batches all models or none, so a mix is refused here too.
    if (ecfg.maxBatchSize > 0 && config.maxBatchSize < ecfg.maxBatchSize) errors.push(`${name}: max_batch_size ${config.maxBatchSize}, less than the ensemble's ${ecfg.maxBatchSize}`);
    if (ecfg.maxBatchSize === 0 && config.maxBatchSize !== 0) errors.push(`${name}: max_batch_size ${config.maxBatchSize} in an ensemble that does not batch (max_batch_size 0)`);
    if (config.batching && config.maxBatchSize === 0) errors.push(`${name}: dynamic_batching with max_batch_size 0`);
    const modelInputs = new Map(m.inputs.map((i) => [i.name, i]));
    const modelOutputs = new Map(m.outputs.map((o) => [o.name, o]));
    const compare = (io, what, model) => {
      if (!model) {
        errors.push(`${name}: config ${what} '${io.name}' is not ${what === 'input' ? 'an input' : 'an output'} of ${step.modelPath}`);
        return;
      }
      const type = TRITON_TYPES[io.dataType];
      if (type !== model.type) errors.push(`${name}: ${what} '${io.name}' is ${io.dataType} in the config but ${model.type} in the model`);
      const shape = backendShape(io);
      if (Array.isArray(model.shape)) {
        const modelDims = model.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : -1));
        const ok = shape.length === modelDims.length && shape.every((d, i) => modelDims[i] === -1 || d === modelDims[i]);
        if (!ok) errors.push(`${name}: ${what} '${io.name}' has dims ${dimsText(shape)}${io.reshape ? ' (reshape)' : ''} in the config but ${dimsText(modelDims)} in the model`);
      }
      if (io.dims.length === 0) errors.push(`${name}: ${what} '${io.name}' has empty dims (Triton wants at least one; a scalar is dims [1] with reshape { shape: [] })`);
      if (io.reshape && io.dims.every((d) => d >= 0) && io.reshape.every((d) => d >= 0) && numel(io.dims) !== numel(io.reshape)) {
        errors.push(`${name}: ${what} '${io.name}' reshapes ${dimsText(io.dims)} to ${dimsText(io.reshape)}, a different element count`);
      }
    };
    for (const io of config.inputs) compare(io, 'input', modelInputs.get(io.name));
    for (const io of config.outputs) compare(io, 'output', modelOutputs.get(io.name));
    for (const i of m.inputs) if (!config.inputs.some((io) => io.name === i.name)) errors.push(`${name}: model input '${i.name}' is not in the config`);
    for (const g of config.instanceGroups) {
      if (g.kind === 'KIND_GPU' && g.gpus.some((d) => d < 0)) errors.push(`${name}: instance_group gpus ${dimsText(g.gpus)} has a negative index`);
      if ((g.kind === 'KIND_CPU' || g.kind === 'KIND_MODEL') && g.gpus.length) errors.push(`${name}: instance_group of ${g.kind} lists gpus`);
      if (g.count < 1) errors.push(`${name}: instance_group count ${g.count}`);
    }
  }

  // Triton's ensemble checks: every ensemble tensor has one type and shape.
  const tensors = new Map(); // ensemble tensor -> {type, dims, from}
  const agree = (tensor, type, dims, from) => {
    const t = tensors.get(tensor);
    if (!t) {
      tensors.set(tensor, { type, dims, from });
      return;
    }
    if (t.type !== type) errors.push(`${ensemble.name}: ensemble tensor '${tensor}' is ${t.type} in ${t.from} but ${type} in ${from}`);
    else if (!dimsMatch(t.dims, dims)) errors.push(`${ensemble.name}: ensemble tensor '${tensor}' has dims ${dimsText(t.dims)} in ${t.from} but ${dimsText(dims)} in ${from}`);
  };
  const ensembleInputs = new Set(ecfg.inputs.map((i) => i.name));
  for (const io of ecfg.inputs) agree(io.name, io.dataType, backendShape(io), `${ensemble.name}'s input`);
  for (const io of ecfg.outputs) agree(io.name, io.dataType, backendShape(io), `${ensemble.name}'s output`);
  const producer = new Map(); // ensemble tensor -> step index
  for (const step of steps) {
    const { config } = step.model;
    const from = `step ${step.index} (${step.modelName})`;
    for (const key of step.inputMap.keys()) {
      if (!config.inputs.some((io) => io.name === key)) errors.push(`${ensemble.name}: ${from} maps ensemble tensor '${step.inputMap.get(key)}' to '${key}', which is not an input of ${step.modelName}`);
    }
    for (const io of config.inputs) {
      const tensor = step.inputMap.get(io.name);
      if (tensor === undefined) {
        if (!io.optional) errors.push(`${ensemble.name}: input '${io.name}' of ${from} is not mapped to any ensemble tensor`);
        continue;
      }
      agree(tensor, io.dataType, io.dims, from);
    }
    const mapped = new Set();
    for (const [key, tensor] of step.outputMap) {
      const io = config.outputs.find((o) => o.name === key);
      if (!io) {
        errors.push(`${ensemble.name}: ${from} maps '${key}', which is not an output of ${step.modelName}, to ensemble tensor '${tensor}'`);
        continue;
      }
      if (mapped.has(tensor)) errors.push(`${ensemble.name}: ${from} maps two outputs to ensemble tensor '${tensor}'`);
      mapped.add(tensor);
      if (ensembleInputs.has(tensor)) errors.push(`${ensemble.name}: ${from} produces '${tensor}', which is an input of the ensemble`);
      else if (producer.has(tensor)) errors.push(`${ensemble.name}: ensemble tensor '${tensor}' is produced by steps ${producer.get(tensor)} and ${step.index}`);
      else producer.set(tensor, step.index);
      agree(tensor, io.dataType, io.dims, from);
    }
  }
  // Data flow: what no one produces, what no one reads.
  const read = new Set(steps.flatMap((s) => [...s.inputMap.values()]));
  for (const step of steps) {
    for (const tensor of step.inputMap.values()) {
      if (!ensembleInputs.has(tensor) && !producer.has(tensor)) errors.push(`${ensemble.name}: step ${step.index} (${step.modelName}) reads '${tensor}', which is neither an ensemble input nor any step's output`);
    }
  }
  for (const io of ecfg.outputs) {
    if (!ensembleInputs.has(io.name) && !producer.has(io.name)) errors.push(`${ensemble.name}: ensemble output '${io.name}' is produced by no step`);
  }
  for (const io of ecfg.inputs) if (!read.has(io.name)) errors.push(`${ensemble.name}: ensemble input '${io.name}' is read by no step`);
  if (errors.length === 0) {
    const cycle = stepOrder(repo).stuck;
    if (cycle.length) errors.push(`${ensemble.name}: steps ${cycle.join(', ')} wait on each other (a cycle)`);
  }
  return errors;
}

/**
 * The order Triton's ensemble scheduler would start the steps of one request
 * when each runs to its end before the next starts: repeatedly, the first
 * step (in config order) whose input tensors all exist. { order: [step
 * index], stuck: [step index] (steps that never become ready) }.
 */
export function stepOrder(repo) {
  const have = new Set(repo.ensemble.config.inputs.map((i) => i.name));
  const pending = [...repo.steps];
  const order = [];
  while (pending.length) {
    const k = pending.findIndex((s) => [...s.inputMap.values()].every((t) => have.has(t)));
    if (k < 0) break;
    const [s] = pending.splice(k, 1);
    order.push(s.index);
    for (const t of s.outputMap.values()) have.add(t);
  }
  return { order, stuck: pending.map((s) => s.index) };
}

// ---------------------------------------------------------------------------
// 4. Running a request
// ---------------------------------------------------------------------------

/** `dims` with one -1 resolved from the element count `n`. */
function resolveShape(dims, n) {
  const unknown = dims.filter((d) => d === -1).length;
  if (unknown === 0) return dims;
  if (unknown > 1) return null;
  const known = numel(dims.filter((d) => d !== -1));
  return known > 0 && n % known === 0 ? dims.map((d) => (d === -1 ? n / known : d)) : null;
}

/** The tensor with new dims of the same element count (shared data). */
function reshaped(t, dims, what) {
  const n = numel(t.dims);
  const target = resolveShape(dims, n);
  if (!target || numel(target) !== n) throw badInput(`${what}: cannot reshape [${t.dims}] to [${dims}]`);
  return { ...t, dims: target };
}

/**
 * Runs one request through the ensemble. `request`: {ensemble input name:
 * tensor}; `runModel(stepIndex, feeds, fetches)` runs a step's ONNX model.
 * Returns { outputs: {ensemble output: tensor}, timeline: [{step, model,
 * start_us, end_us}] }. Tensor shapes are checked against the configs as
 * Triton checks them (request and response dims; each step's inputs).
 */
export async function runEnsemble(repo, request, runModel, now = () => performance.now() * 1000) {
  const ecfg = repo.ensemble.config;
  const values = new Map();
  const batches = new Set();
  for (const io of ecfg.inputs) {
    const t = request[io.name];
    if (!t) throw badInput(`no value for ensemble input '${io.name}'`);
    if (ecfg.batched) {
      if (t.dims.length === 0 || t.dims[0] < 1 || t.dims[0] > ecfg.maxBatchSize) throw badInput(`ensemble input '${io.name}' has shape [${t.dims}]: its batch is not in 1..${ecfg.maxBatchSize} (max_batch_size)`);
      batches.add(t.dims[0]);
      if (batches.size > 1) throw badInput(`ensemble inputs have different batches (${[...batches].join(', ')}); a request has one`);
    }
    if (!dimsMatch(io.dims, t.dims)) throw badInput(`ensemble input '${io.name}' has shape [${t.dims}], the config wants [${io.dims}]`);
    values.set(io.name, io.reshape ? reshaped(t, io.reshape, `ensemble input '${io.name}'`) : t);
  }
  const pending = [...repo.steps];
  const timeline = [];
  while (pending.length) {
    const k = pending.findIndex((s) => [...s.inputMap.values()].every((t) => values.has(t)));
    if (k < 0) throw badInput(`steps ${pending.map((s) => s.index).join(', ')} never get all their inputs`);
    const [step] = pending.splice(k, 1);
    const { config } = step.model;
    const feeds = {};
    for (const io of config.inputs) {
      const tensor = step.inputMap.get(io.name);
      if (tensor === undefined) continue;
      const t = values.get(tensor);
      if (!dimsMatch(io.dims, t.dims)) throw badInput(`step ${step.index} (${step.modelName}): input '${io.name}' gets shape [${t.dims}], the config wants [${io.dims}]`);
      feeds[io.name] = io.reshape ? reshaped(t, io.reshape, `step ${step.index} input '${io.name}'`) : t;
    }
    const fetches = [...step.outputMap.keys()];
    const start_us = now();
    const out = await runModel(step.index, feeds, fetches);
    timeline.push({ step: step.index, model: step.modelName, start_us, end_us: now() });
    for (const [key, tensor] of step.outputMap) {
      const io = config.outputs.find((o) => o.name === key);
      let t = out[key];
      if (!t) throw badInput(`step ${step.index} (${step.modelName}) returned no '${key}'`);
      if (io.reshape) t = reshaped(t, io.dims, `step ${step.index} output '${key}'`);
      if (!dimsMatch(io.dims, t.dims)) throw badInput(`step ${step.index} (${step.modelName}): output '${key}' has shape [${t.dims}], the config says [${io.dims}]`);
      values.set(tensor, t);
    }
  }
  const outputs = {};
  for (const io of ecfg.outputs) {
    let t = values.get(io.name);
    if (!t) throw badInput(`ensemble output '${io.name}' was produced by no step`);
    if (io.reshape) t = reshaped(t, io.dims, `ensemble output '${io.name}'`);
    outputs[io.name] = t;
  }
  return { outputs, timeline };
}
