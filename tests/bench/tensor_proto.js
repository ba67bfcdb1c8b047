// ONNX TensorProto files (the test_data_set_*/*.pb format) for the node scripts beside ONNX Runtime:
// written with dims=1, data_type=2, name=8, raw_data=9 (the fields numpy_helper writes), read back
// with dims packed or not.
function varint(n) {
  const out = [];
  let v = BigInt(n);
  while (v >= 0x80n) { out.push(Number((v & 0x7fn) | 0x80n)); v >>= 7n; }
  out.push(Number(v));
  return Buffer.from(out);
}
function field(num, wire, payload) { return Buffer.concat([varint((num << 3) | wire), payload]); }
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
// -> { dims, type, raw }; throws on a wire type a TensorProto of these fields does not use.
function readTensorProto(buf, what) {
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
      throw new Error(`${what}: unexpected wire type ${wire}`);
    }
  }
  return t;
}
module.exports = { tensorProto, readTensorProto };
