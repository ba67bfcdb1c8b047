#!/usr/bin/python3
"""Mutation run over the run path: hostile models through `collage info` and `collage run`.

    /usr/bin/python3 tests/fuzz/mutate_models.py [--count N] [--seed S] [--jobs J] [--out DIR]
                                                 [--collage build/app/collage] [--limit SECONDS] [--bodies]

Makes N mutated models from tests/data/onnx/*/**/model.onnx and resources/models/*.onnx
(structure mutations: an elem_type of an input/output/value_info, a dim, a node input or output
dropped/added/renamed, an attribute changed/dropped, an op type swapped; byte mutations: flips,
truncation, insertion), runs each through `collage info M` and `collage run M --repeat 1` under
`timeout LIMIT` and tallies crashes (signal exits), internal errors (exit 3) and timeouts.
Findings are kept in DIR/findings/ with the command's stderr. --bodies takes only models with
control flow (If/Loop/Scan) or sequences/optionals, mutates their bodies as often as their main graphs, and also runs
`collage run M --shapes dynamic`. Needs Debian's python3-onnx
(not part of the test suite: a fuzzing tool, like run.sh).
"""
import argparse
import collections
import concurrent.futures
import glob
import os
import random
import shutil
import subprocess
import sys
import time

import onnx
from onnx import TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

ELEM_TYPES = [TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.UINT16, TensorProto.INT16,
              TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL, TensorProto.FLOAT16, TensorProto.DOUBLE,
              TensorProto.UINT32, TensorProto.UINT64, TensorProto.BFLOAT16]
OPS = ["Add", "Relu", "Transpose", "Reshape", "Cast", "MaxPool", "Conv", "ConvTranspose", "Concat", "Gather",
       "Where", "Tile", "Squeeze", "Unsqueeze", "QuantizeLinear", "DequantizeLinear", "Split", "Slice", "MatMul",
       "Expand", "Pad", "Resize", "TopK", "ReduceSum", "Softmax", "LSTM", "CastLike", "Identity", "Shape"]


def sources():
    shared = os.environ.get("COLLAGE_CONFORMANCE_DIR", os.path.join(ROOT, "tests", "data", "onnx"))
    files = sorted(glob.glob(os.path.join(shared, "**", "model.onnx"), recursive=True))
    files += sorted(glob.glob(os.path.join(ROOT, "resources", "models", "*.onnx")))
    files += sorted(glob.glob(os.path.join(ROOT, "tests", "data", "exports", "*", "model.onnx")))
    return [f for f in files if os.path.getsize(f) < (4 << 20)]


def bodies(g):
    """Every body nested in graph g (If branches, Loop and Scan bodies), depth first."""
    out = []
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                out.append(a.g)
                out += bodies(a.g)
    return out


def has_bodies(path):
    """Control flow, or sequence/optional values (which also need --shapes dynamic)."""
    g = onnx.load(path, load_external_data=False).graph
    kinds = [v.type.WhichOneof("value") for v in list(g.input) + list(g.output) + list(g.value_info)]
    seq_ops = any("Sequence" in n.op_type or n.op_type.startswith("Optional") for n in g.node)
    return bool(bodies(g)) or seq_ops or "sequence_type" in kinds or "optional_type" in kinds


def value_infos(g, rng):
    vis = list(g.input) + list(g.output) + list(g.value_info)
    return [v for v in vis if v.type.HasField("tensor_type")]


def intermediate_names(g):
    return [o for n in g.node for o in n.output if o]


def mutate_structure(model, rng, into_bodies=False):
    g = model.graph
    if into_bodies and rng.random() < 0.5 and bodies(g):
        g = rng.choice(bodies(g))
    kind = rng.choice(["elem_type", "elem_type", "dim", "dim", "drop_input", "add_input", "drop_output",
                       "add_output", "attribute", "attribute", "drop_attribute", "op_type", "value_info",
                       "value_info", "swap_inputs", "initializer_dim", "rename_output"])
    nodes = list(g.node)
    if kind == "elem_type":
        vis = value_infos(g, rng)
        if not vis:
            return kind + ":none"
        v = rng.choice(vis)
        v.type.tensor_type.elem_type = rng.choice(ELEM_TYPES)
        return "%s:%s" % (kind, v.name)
    if kind == "dim":
        vis = [v for v in value_infos(g, rng) if v.type.tensor_type.shape.dim]
        if not vis:
            return kind + ":none"
        v = rng.choice(vis)
        dims = v.type.tensor_type.shape.dim
        r = rng.random()
        if r < 0.15:
            dims.add().dim_value = rng.choice([1, 2, 3])
        elif r < 0.3:
            del dims[rng.randrange(len(dims))]
        else:
            d = dims[rng.randrange(len(dims))]
            d.dim_value = rng.choice([0, 1, 2, 3, 5, 7, 64, 1000, 1 << 20, 1 << 31, -1])
        return "%s:%s" % (kind, v.name)
    if kind == "value_info":  # a declaration of an intermediate, often wrong
        names = intermediate_names(g)
        if not names:
            return kind + ":none"
        name = rng.choice(names)
        shape = [rng.choice([1, 2, 3, 4, 6]) for _ in range(rng.randrange(0, 5))]
        g.value_info.append(onnx.helper.make_tensor_value_info(name, rng.choice(ELEM_TYPES), shape))
        return "%s:%s" % (kind, name)
    if not nodes:
        return kind + ":no nodes"
    n = rng.choice(nodes)
    if kind == "drop_input" and n.input:
        i = rng.randrange(len(n.input))
        if rng.random() < 0.5:
            del n.input[i]
        else:
            n.input[i] = ""
    elif kind == "add_input":
        known = [v.name for v in g.input] + [t.name for t in g.initializer] + intermediate_names(g)
        n.input.append(rng.choice(known) if known and rng.random() < 0.8 else "")
    elif kind == "drop_output" and n.output:
        i = rng.randrange(len(n.output))
        if rng.random() < 0.5 and i == len(n.output) - 1:
            del n.output[i]
        else:
            n.output[i] = ""
    elif kind == "add_output":
        n.output.append("extra_%d" % rng.randrange(1000))
        if rng.random() < 0.5:
            g.output.append(onnx.helper.make_tensor_value_info(n.output[-1], rng.choice(ELEM_TYPES), None))
    elif kind == "rename_output" and n.output:
        n.output[rng.randrange(len(n.output))] = rng.choice(intermediate_names(g) + ["renamed"])
    elif kind == "attribute" and n.attribute:
        a = rng.choice(list(n.attribute))
        if a.type == onnx.AttributeProto.INT:
            a.i = rng.choice([a.i + 1, a.i - 1, -a.i, 0, 2, -1, 1 << 31, 7])
        elif a.type == onnx.AttributeProto.INTS and a.ints:
            r = rng.random()
            if r < 0.2:
                a.ints.append(rng.choice([0, 1, 2, -1]))
            elif r < 0.35:
                del a.ints[-1]
            else:
                a.ints[rng.randrange(len(a.ints))] = rng.choice([0, 1, 2, 3, -1, -2, 100, 1 << 20])
        elif a.type == onnx.AttributeProto.FLOAT:
            a.f = rng.choice([0.0, -1.0, 1e30, float("nan"), a.f * 2])
        elif a.type == onnx.AttributeProto.STRING:
            a.s = rng.choice([b"", b"constant", b"reflect", b"SAME_UPPER", b"VALID", b"bogus", b"linear"])
        elif a.type == onnx.AttributeProto.TENSOR and a.t.dims:
            a.t.dims[rng.randrange(len(a.t.dims))] += rng.choice([1, -1])
        else:
            a.name = a.name + "x"
    elif kind == "drop_attribute" and n.attribute:
        del n.attribute[rng.randrange(len(n.attribute))]
    elif kind == "op_type":
        n.op_type = rng.choice(OPS)
    elif kind == "swap_inputs" and len(n.input) >= 2:
        i, j = rng.sample(range(len(n.input)), 2)
        n.input[i], n.input[j] = n.input[j], n.input[i]
    elif kind == "initializer_dim" and g.initializer:
        t = rng.choice(list(g.initializer))
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice([0, 1, 2, 1 << 20])
    else:
        return kind + ":not applicable"
    return "%s:%s(%s)" % (kind, n.name or "#", n.op_type)


def mutate_bytes(data, rng):
    data = bytearray(data)
    kind = rng.choice(["flip", "flip", "truncate", "insert", "varint"])
    if kind == "flip":
        for _ in range(rng.randrange(1, 5)):
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        data = data[: rng.randrange(1, len(data))]
    elif kind == "insert":
        i = rng.randrange(len(data))
        data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
    else:  # a varint-looking byte set high: large lengths and dims
        i = rng.randrange(len(data))
        data[i] = rng.choice([0x7F, 0xFF, 0x80, 0x01])
    return bytes(data), kind


def make_models(count, seed, out_dir, only_bodies=False):
    rng = random.Random(seed)
    srcs = sources()
    if only_bodies:
        srcs = [s for s in srcs if has_bodies(s)]
    made = []
    for k in range(count):
        src = rng.choice(srcs)
        raw = open(src, "rb").read()
        what = ""
        if rng.random() < 0.75:
            model = onnx.load_from_string(raw)
            what = "; ".join(mutate_structure(model, rng, only_bodies) for _ in range(rng.choice([1, 1, 1, 2, 3])))
            data = model.SerializeToString()
        else:
            data, what = mutate_bytes(raw, rng)
        path = os.path.join(out_dir, "m%05d.onnx" % k)
        with open(path, "wb") as f:
            f.write(data)
        made.append((path, os.path.relpath(src, ROOT), what))
    return made


def run_one(collage, limit, path, dynamic=False):
    results = []
    commands = [["info", path], ["run", path, "--repeat", "1"]]
    if dynamic:
        commands.append(["run", path, "--repeat", "1", "--shapes", "dynamic"])
    for cmd in commands:
        t0 = time.time()
        p = subprocess.run(["timeout", "-s", "KILL", str(limit), collage] + cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        results.append((cmd[0], p.returncode, time.time() - t0, p.stderr.decode(errors="replace").strip()))
    return path, results


def classify(rc, seconds, limit):
    if rc == -9 or rc == 137 or seconds >= limit:
        return "timeout"
    if rc < 0 or rc > 128:
        return "crash"
    return {0: "ok", 2: "refused", 3: "internal"}.get(rc, "exit%d" % rc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "mutation-run"))
    ap.add_argument("--collage", default=os.path.join(ROOT, "build", "app", "collage"))
    ap.add_argument("--bodies", action="store_true", help="only models with control flow, bodies mutated too")
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    models_dir = os.path.join(args.out, "models")
    findings_dir = os.path.join(args.out, "findings")
    os.makedirs(models_dir)
    os.makedirs(findings_dir)
    made = make_models(args.count, args.seed, models_dir, args.bodies)
    origin = {p: (src, what) for p, src, what in made}
    tally = collections.Counter()
    slowest = 0.0
    start = time.time()
    with open(os.path.join(args.out, "results.tsv"), "w") as log, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for path, results in pool.map(lambda p: run_one(args.collage, args.limit, p[0], args.bodies), made):
            src, what = origin[path]
            for k, (cmd, rc, seconds, err) in enumerate(results):
                c = classify(rc, seconds, args.limit)
                slowest = max(slowest, seconds)
                tally[cmd + " " + c] += 1
                last = err.splitlines()[-1] if err else ""
                log.write("%s\t%s\t%s\t%d\t%.1f\t%s\t%s\t%s\n" % (os.path.basename(path), cmd, c, rc, seconds,
                                                               src, what, last[:300]))
                if c in ("crash", "internal", "timeout"):
                    base = os.path.join(findings_dir, "%s-%s%d-%s" % (c, cmd, k, os.path.basename(path)))
                    shutil.copy(path, base)
                    with open(base + ".txt", "w") as f:
                        f.write("source: %s\nmutation: %s\nexit: %d after %.1f s\n%s\n" % (src, what, rc, seconds,
                                                                                          err[-4000:]))
    print("models: %d (%d runs), %.0f s, slowest run %.1f s" % (len(made), sum(tally.values()), time.time() - start,
                                                                   slowest))
    for key in sorted(tally):
        print("  %-18s %d" % (key, tally[key]))
    bad = sum(v for k, v in tally.items() if k.split()[1] in ("crash", "internal", "timeout"))
    print("findings: %d (crashes %d, internal errors %d, over %d s %d); see %s" % (
        bad, sum(v for k, v in tally.items() if k.endswith("crash")),
        sum(v for k, v in tally.items() if k.endswith("internal")), args.limit,
        sum(v for k, v in tally.items() if k.endswith("timeout")), findings_dir))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
