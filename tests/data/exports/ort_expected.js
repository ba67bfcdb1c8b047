// Replaces a case's expected outputs (test_data_set_*/output_*.pb) with ONNX Runtime's outputs
// on the case's own inputs, for exports whose PyTorch eager results differ from what the
// exported graph computes (torchvision's batched NMS takes another path when traced).
// usage: NODE_PATH=.../node_modules node ort_expected.js CASE_DIR
const ort = require('onnxruntime-node');
const fs = require('fs');
const path = require('path');

const { readTensorProto, tensorProto } = require(path.join(__dirname, '..', '..', 'bench', 'tensor_proto.js'));

function readTensor(file) {
  const t = readTensorProto(fs.readFileSync(file), file);
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
