// Per-node times of the run that really happens. ONNX Runtime runs a model
// optimised (fusions such as Conv+BatchNorm+Relu, MatMul+Add -> Gemm, layer
// norm; constant folding; on CPU the NCHWc layout), and so does tools/runner.
// Its profile then names the optimised nodes, not the model's, while a plan
// places the model's nodes. attributeOptimisedTimes spreads the optimised
// nodes' measured times back over the model's nodes:
//
//  1. Anchor: an optimised node whose name is a model node's name, or starts
//     with the name (or an output tensor name) of a model node followed by
//     '/' or '_' (ORT names a fused node after the node it started from,
//     "<name>/MatMulAddFusion", or after the tensor it ends in,
//     "<tensor>_nchwc"), belongs to that node; the longest such name wins.
//  2. Group: every other model node joins a neighbouring group — the group
//     of its only consumer (a fusion only swallows a node whose result
//     nobody else reads; ORT names Conv+Relu after the Relu's output) or of
//     one of its producers (a residual Add and activation fused into the
//     Conv before them). Groups grow greedily: the group whose optimised time
//     is largest per µs of unoptimised time of its members so far (it has
//     the most time left to explain) takes a neighbour first.
//  3. Spread: a group's optimised time is split over its members in
//     proportion to their unoptimised times (all to the anchor if those are 0).
//  4. What no anchor claims — nodes ORT added (layout reorders, reshapes
//     around a Gemm) and the optimised time of nodes whose name says nothing —
//     is spread over every model node in proportion to its unoptimised time.
//
// Summed over any set of nodes that a fusion does not straddle, the result is
// the optimised run's time for that set; across a fused group it is split in
// the unoptimised proportions. The sum over all nodes equals the optimised
// profile's kernel sum.

/**
 * modelNodes: [{name, op, inputs, outputs}] in topological order (onnx_nodes.mjs);
 * unoptimisedUs / optimisedUs: {node name: µs} of the unoptimised and the
 * optimised profile. Returns { node_us: {model node: µs}, anchored (optimised
 * nodes with an anchor), unanchored_us (optimised time spread by step 4),
 * groups (anchored groups) }.
 */
export function attributeOptimisedTimes(modelNodes, unoptimisedUs, optimisedUs) {
  const n = modelNodes.length;
  const key = (node, i) => node.name || `${node.op}_${i}`;
  const names = modelNodes.map(key);
  // Step 1: anchors by name, then by name or output tensor prefix.
  const byName = new Map(names.map((name, i) => [name, i]));
  const byPrefix = new Map(byName);
  modelNodes.forEach((node, i) => {
    for (const out of node.outputs) if (out && !byPrefix.has(out)) byPrefix.set(out, i);
  });
  const anchorOf = (optName) => {
    if (byName.has(optName)) return byName.get(optName);
    for (let end = optName.length - 1; end > 0; end--) {
      const c = optName[end];
      if (c !== '/' && c !== '_') continue;
      const hit = byPrefix.get(optName.slice(0, end));
      if (hit !== undefined) return hit;
    }
    return -1;
  };
  const groupTime = new Map(); // anchor model node -> optimised µs
  let unanchored = 0;
  let anchored = 0;
  for (const [optName, us] of Object.entries(optimisedUs)) {
    const a = anchorOf(optName);
    if (a < 0) {
      unanchored += us;
      continue;
    }
    anchored++;
    groupTime.set(a, (groupTime.get(a) ?? 0) + us);
  }
  // Step 2: groups.
  const base = names.map((name) => Math.max(0, unoptimisedUs[name] ?? 0));
  const group = new Array(n).fill(-1);
  const producer = new Map();
  const consumers = new Array(n).fill(null).map(() => []);
  modelNodes.forEach((node, i) => node.outputs.forEach((t) => t && producer.set(t, i)));
  const producers = modelNodes.map((node) => [...new Set(node.inputs.map((t) => producer.get(t)).filter((p) => p !== undefined))]);
  producers.forEach((list, i) => list.forEach((p) => consumers[p].push(i)));
  const groupBase = new Map();
  const ratio = (g) => (groupBase.get(g) > 0 ? groupTime.get(g) / groupBase.get(g) : Infinity);
  const heap = new CandidateHeap();
  const join = (i, g) => {
    group[i] = g;
    groupBase.set(g, (groupBase.get(g) ?? 0) + base[i]);
    for (const p of producers[i]) if (group[p] < 0 && consumers[p].length === 1) heap.push({ ratio: ratio(g), g, i: p });
    for (const c of consumers[i]) if (group[c] < 0) heap.push({ ratio: ratio(g), g, i: c });
  };
  for (const a of [...groupTime.keys()].sort((x, y) => x - y)) group[a] = a;
  for (const a of [...groupTime.keys()].sort((x, y) => x - y)) join(a, a);
  while (heap.size() > 0) {
    const c = heap.pop();
    if (group[c.i] >= 0) continue;
    const now = ratio(c.g);
    if (now !== c.ratio) heap.push({ ...c, ratio: now }); // the group grew since: its place in line changed
    else join(c.i, c.g);
  }
  // Step 3: spread each group's time.
  const members = new Map();
  group.forEach((g, i) => g >= 0 && (members.get(g) ?? members.set(g, []).get(g)).push(i));
  const out = new Array(n).fill(0);
  for (const [g, list] of members) {
    const t = groupTime.get(g) ?? 0;
    const total = list.reduce((s, i) => s + base[i], 0);
    if (total > 0) for (const i of list) out[i] += (t * base[i]) / total;
    else out[g] += t;
  }
  // Step 4: the rest over every node.
  const all = base.reduce((s, v) => s + v, 0);
  for (let i = 0; i < n; i++) out[i] += all > 0 ? (unanchored * base[i]) / all : unanchored / n;
  return {
    node_us: Object.fromEntries(names.map((name, i) => [name, out[i]])),
    anchored,
    unanchored_us: unanchored,
    groups: members.size,
  };
}

/** Max-heap of {ratio, g, i}: highest ratio first, then lowest node, then lowest group (deterministic). */
class CandidateHeap {
  constructor() {
    this.items = [];
  }
  size() {
    return this.items.length;
  }
  static before(a, b) {
    if (a.ratio !== b.ratio) return a.ratio > b.ratio;
    if (a.i !== b.i) return a.i < b.i;
    return a.g < b.g;
  }
  push(x) {
    const h = this.items;
    h.push(x);
    for (let k = h.length - 1; k > 0; ) {
      const up = (k - 1) >> 1;
      if (!CandidateHeap.before(h[k], h[up])) break;
      [h[k], h[up]] = [h[up], h[k]];
      k = up;
    }
  }
  pop() {
    const h = this.items;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0) {
      h[0] = last;
      for (let k = 0; ; ) {
        const l = 2 * k + 1;
        const r = l + 1;
        let m = k;
        if (l < h.length && CandidateHeap.before(h[l], h[m])) m = l;
        if (r < h.length && CandidateHeap.before(h[r], h[m])) m = r;
        if (m === k) break;
        [h[k], h[m]] = [h[m], h[k]];
        k = m;
      }
    }
    return top;
  }
}
