// ONNX Runtime (CPU, onnxruntime-node) side of the benchmark: deterministic
// inputs written as TensorProto files (so collage runs the very same data),
// THREADS intra-op threads (default 1) and one inter-op thread, median latency
// over repeats, outputs written as .pb.
// usage: [DIMS=NAME=VALUE[,NAME=VALUE...]] [PROFILE=1] node ort_run.js MODEL OUT_DIR REPEATS [THREADS]
// PROFILE=1: ONNX Runtime's profiler on (OUT_DIR/ort_profile_*.json); prints, per op type, the sum over
// nodes of each node's median kernel time ('ort op TYPE MS NODES', largest first).
// Input shapes come from the model: fixed dims as declared, symbolic dims 1
// unless DIMS names them (e.g. DIMS=seq=64 or DIMS=seq=64,batch=2; VALUE a
// positive integer). Every NAME must be a symbolic dim (dim_param) of some
// input; an empty or unset DIMS leaves all symbolic dims at 1.
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');

const { tensorProto } = require('./tensor_proto.js');

// DIMS: 'NAME=VALUE,...' -> Map(NAME -> VALUE); anything else throws.
function parseDims(spec) {
  const dims = new Map();
  for (const item of spec.split(',')) {
    const m = /^\s*([^=,\s]+)\s*=\s*([0-9]+)\s*$/.exec(item);
    const value = m ? parseInt(m[2], 10) : NaN;
    if (!(value >= 1)) {
      throw new Error(`DIMS='${spec}': '${item}' is not NAME=VALUE with VALUE a positive integer`);
    }
    if (dims.has(m[1])) throw new Error(`DIMS='${spec}': '${m[1]}' is given twice`);
    dims.set(m[1], value);
  }
  return dims;
}
function safe(name) { return name.replace(/[^A-Za-z0-9_.-]/g, '_'); }
// ONNX element types of the tensors the zoo's models take and give.
const kElemType = { float32: 1, int64: 7, float16: 10 };
// float -> IEEE half bits (round to nearest even), for model.half() exports' inputs.
function toHalf(f) {
  const buf = new DataView(new ArrayBuffer(4));
  buf.setFloat32(0, f);
  const x = buf.getUint32(0);
  const sign = (x >>> 16) & 0x8000, exp = (x >>> 23) & 0xff, man = x & 0x7fffff;
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) return sign;  // |f| < 6e-5: the uniform(-1, 1) inputs flush the odd one to zero
  let half = (e << 10) | (man >>> 13);
  const rest = man & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1))) half++;
  return sign | half;
}

async function main() {
  const [model, outDir, repeatsArg, threadsArg] = process.argv.slice(2);
  const repeats = parseInt(repeatsArg || '20', 10);
  const threads = parseInt(threadsArg || '1', 10);
  if (!(threads >= 1)) throw new Error(`THREADS must be a positive integer, not '${threadsArg}'`);
  const dimValues = process.env.DIMS ? parseDims(process.env.DIMS) : new Map();
  fs.mkdirSync(outDir, { recursive: true });
  const profile = process.env.PROFILE === '1';
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential',
    ...(profile ? { enableProfiling: true, profileFilePrefix: path.join(outDir, 'ort_profile') } : {}) });
  // Shapes come from the model's inputs: symbolic dims are 1, as collage's default, unless DIMS
  // sets them by name.
  const meta = session.inputMetadata || {};
  const inputMeta = name => (Array.isArray(meta) ? meta.find(x => x.name === name) : meta[name]);
  if (dimValues.size) {
    const symbolic = new Set();
    for (const name of session.inputNames) {
      const m = inputMeta(name);
      for (const d of (m && m.shape ? m.shape : [])) if (typeof d === 'string' && d) symbolic.add(d);
    }
    const unknown = [...dimValues.keys()].filter(n => !symbolic.has(n));
    if (unknown.length) {
      const what = unknown.length > 1 ? 'are no symbolic dims' : 'is no symbolic dim';
      throw new Error(`DIMS='${process.env.DIMS}': ${unknown.map(n => `'${n}'`).join(', ')} ${what} of ` +
                      `${model}'s inputs (symbolic dims: ${[...symbolic].join(', ') || 'none'})`);
    }
  }
  const feeds = {};
  let seed = 12345;
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 * 2 - 1; };
  for (const name of session.inputNames) {
    const m = inputMeta(name);
    const dims = (m && m.shape ? m.shape : []).map(d => (typeof d === 'number' ? d : dimValues.get(d) || 1));
    const count = dims.reduce((a, b) => a * b, 1);
    const isInt = m && m.type === 'int64';
    if (m && m.type === 'float16') {
      const data = new Uint16Array(count);
      for (let i = 0; i < count; i++) data[i] = toHalf(rand());
      feeds[name] = new ort.Tensor('float16', data, dims);
      fs.writeFileSync(path.join(outDir, 'in_' + safe(name) + '.pb'), tensorProto(name, 10, dims, Buffer.from(data.buffer)));
    } else if (isInt) {
      const data = new BigInt64Array(count);
      feeds[name] = new ort.Tensor('int64', data, dims);
      fs.writeFileSync(path.join(outDir, 'in_' + safe(name) + '.pb'), tensorProto(name, 7, dims, Buffer.from(data.buffer)));
    } else {
      const data = new Float32Array(count);
      for (let i = 0; i < count; i++) data[i] = rand();
      feeds[name] = new ort.Tensor('float32', data, dims);
      fs.writeFileSync(path.join(outDir, 'in_' + safe(name) + '.pb'), tensorProto(name, 1, dims, Buffer.from(data.buffer)));
    }
  }
  // Warm-up, as collage-run's: at least 3 runs and 10 ms untimed.
  let results = await session.run(feeds);
  const settle = process.hrtime.bigint();
  for (let i = 1; i < 3 || Number(process.hrtime.bigint() - settle) / 1e6 < 10; i++) results = await session.run(feeds);
  const ms = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = process.hrtime.bigint();
    results = await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  for (const name of session.outputNames) {
    const t = results[name];
    fs.writeFileSync(path.join(outDir, 'ort_' + safe(name) + '.pb'),
                     tensorProto(name, kElemType[t.type] || 1, t.dims,
                                 Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength)));
  }
  const median = ms.length % 2 ? ms[(ms.length - 1) / 2] : (ms[ms.length / 2 - 1] + ms[ms.length / 2]) / 2;
  console.log(`ort median ${median.toFixed(3)} ms, min ${ms[0].toFixed(3)} ms, ${threads} intra-op thread(s)`);
  console.log('inputs ' + session.inputNames.map(n => `${n}=${path.join(outDir, 'in_' + safe(n) + '.pb')}`).join(' '));
  console.log('outputs ' + session.outputNames.map(safe).join(' '));
  console.log('output_types ' + session.outputNames.map(n => results[n].type).join(' '));
  if (profile) {
    session.endProfiling();
    const file = fs.readdirSync(outDir).filter(f => f.startsWith('ort_profile') && f.endsWith('.json')).sort().pop();
    if (!file) throw new Error(`PROFILE=1: ONNX Runtime wrote no profile into ${outDir}`);
    printProfile(path.join(outDir, file));
  }
}
// Per op type: the sum over its nodes of each node's median '*_kernel_time' event (microseconds in the file).
function printProfile(file) {
  const events = JSON.parse(fs.readFileSync(file));
  const perNode = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    if (!perNode.has(e.name)) perNode.set(e.name, { op: e.args.op_name, us: [] });
    perNode.get(e.name).us.push(e.dur);
  }
  const perOp = new Map();
  for (const { op, us } of perNode.values()) {
    us.sort((a, b) => a - b);
    const o = perOp.get(op) || { ms: 0, nodes: 0 };
    o.ms += us[Math.floor(us.length / 2)] / 1000;
    o.nodes += 1;
    perOp.set(op, o);
  }
  for (const [op, o] of [...perOp].sort((a, b) => b[1].ms - a[1].ms))
    console.log(`ort op ${op} ${o.ms.toFixed(3)} ${o.nodes}`);
}
main().catch(e => { console.error(e); process.exit(1); });
