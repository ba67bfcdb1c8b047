// Replaces a case's expected outputs (test_data_set_*/output_*.pb) with ONNX Runtime's outputs
// on the case's own inputs, for exports whose PyTorch eager results differ from what the
// exported graph computes (torchvision's batched NMS takes another path when traced).
// usage: NODE_PATH=.../node_modules node ort_expected.js CASE_DIR
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');

function varint(n) {
  const out = [];
  let v = BigInt(n);
  while (v >= 0x80n) { out.push(Number((v & 0x7fn) | 0x80n)); v >>= 7n; }
  out.push(Number(v));
  return Buffer.from(out);
}
function field(num, wire, payload) { return Buffer.concat([varint((num << 3) | wire), payload]); }
// TensorProto: dims=1, data_type=2, name=8, raw_data=9 (the fields numpy_helper writes).
function tensorProto(name, type, dims, raw) {
  const parts = dims.map(d => field(1, 0, varint(d)));
  parts.push(field(2, 0, varint(type)));
  parts.push(field(8, 2, Buffer.concat([varint(Buffer.byteLength(name)), Buffer.from(name)])));
  parts.push(field(9, 2, Buffer.concat([varint(raw.length), raw])));
  return Buffer.concat(parts);
}
function readVarint(buf, at) {
  let v = 0n, shift = 0n;
  for (;;) {
    const b = buf[at.i++];
    v |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
    shift += 7n;
  }
}
function readTensor(file) {
  const buf = fs.readFileSync(file);
  const at = { i: 0 };
  const t = { dims: [], type: 0, raw: null };
  while (at.i < buf.length) {
    const key = Number(readVarint(buf, at)), num = key >> 3, wire = key & 7;
    if (wire === 0) {
      const v = readVarint(buf, at);
      if (num === 1) t.dims.push(Number(v));
      if (num === 2) t.type = Number(v);
    } else if (wire === 2) {
      const len = Number(readVarint(buf, at));
      const bytes = buf.subarray(at.i, at.i + len);
      at.i += len;
      if (num === 1) {  // packed dims
        const inner = { i: 0 };
        while (inner.i < bytes.length) t.dims.push(Number(readVarint(bytes, inner)));
      }
      if (num === 9) t.raw = Buffer.from(bytes);
    } else {
      throw new Error(`${file}: unexpected wire type ${wire}`);
    }
  }
  const kinds = { 1: ['float32', Float32Array], 7: ['int64', BigInt64Array], 9: ['bool', Uint8Array] };
  const [kind, Array_] = kinds[t.type];
  const data = new Array_(t.raw.buffer, t.raw.byteOffset, t.raw.length / Array_.BYTES_PER_ELEMENT);
  return new ort.Tensor(kind, kind === 'bool' ? Array.from(data, x => !!x) : data.slice(), t.dims);
}

(async () => {
  const dir = process.argv[2];
  const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'),
                                                    { intraOpNumThreads: 1, interOpNumThreads: 1 });
  for (const set of fs.readdirSync(dir).filter(d => d.startsWith('test_data_set_'))) {
    const feeds = {};
    session.inputNames.forEach((name, i) => { feeds[name] = readTensor(path.join(dir, set, `input_${i}.pb`)); });
    const results = await session.run(feeds);
    session.outputNames.forEach((name, i) => {
      const r = results[name];
      const type = { float32: 1, int64: 7 }[r.type];
      const raw = Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength);
      fs.writeFileSync(path.join(dir, set, `output_${i}.pb`), tensorProto(name, type, r.dims, raw));
      console.log(`${set}/output_${i}.pb: ${name} ${r.type} [${r.dims}]`);
    });
  }
})().catch(e => { console.error(e.message); process.exit(2); });
