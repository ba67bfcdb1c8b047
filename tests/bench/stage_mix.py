#!/usr/bin/env python3
"""Benchmark (not part of the test suite): does a stage-level mix of whole libraries beat the best one?

Per model: each fp32 graph-level backend alone over the whole model (`tune --backends X --refine`, kept
only when it takes every node), then every placement that moves one segment of the model to another
of those backends. Segments are runs of nodes in the ONNX file's order cut where a single tensor
crosses (between residual blocks, stages), about SEGMENTS of equal size. Each placement is checked
against the first whole library's outputs (`collage compare`), then all are timed by `collage run` in
ROUNDS rounds, rotating their order; a figure is the median of its round medians.

usage: python3 tests/bench/stage_mix.py MODEL.onnx ...
env: BUILD (build dir, default build), THREADS (1), SEGMENTS (6), ROUNDS (3), REPEAT (runs per timing, 20)
Needs python3-onnx (Debian) to read the graph's edges.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import onnx

BUILD = os.environ.get("BUILD", "build")
THREADS = os.environ.get("THREADS", "1")
SEGMENTS = int(os.environ.get("SEGMENTS", "6"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
REPEAT = os.environ.get("REPEAT", "20")
COLLAGE = os.path.join(BUILD, "app", "collage")


def graph_level_backends():
    """The fp32 graph-level backends this machine can run, as `collage --help` lists them."""
    text = subprocess.run([COLLAGE, "--help"], capture_output=True, text=True).stdout
    return [b for b in re.findall(r"^  ([a-z0-9-]+) \(fp32\)$", text, re.M) if "region" in b or "graph" in b]


def segments(model_path, count):
    """Node-name runs in file order, cut where one tensor crosses, about `count` of equal size."""
    graph = onnx.load(model_path, load_external_data=False).graph
    constant = {t.name for t in graph.initializer}
    produced, last_use, nodes = {}, {}, []
    for node in graph.node:  # constants (and Identity over initializers) are folded at import
        if node.op_type == "Constant" or all(x in constant or not x for x in node.input):
            constant.update(node.output)
            continue
        for t in node.output:
            produced[t] = len(nodes)
        for t in node.input:
            if t in produced:
                last_use[t] = len(nodes)
        nodes.append(node.name)
    cuts = [i + 1 for i in range(len(nodes) - 1)
            if sum(1 for t, p in produced.items() if p <= i < last_use.get(t, -1)) == 1]
    if not cuts:
        return [nodes]
    wanted = [round(len(nodes) * j / count) for j in range(1, count)]
    bounds = [0] + sorted({min(cuts, key=lambda c: abs(c - w)) for w in wanted}) + [len(nodes)]
    return [nodes[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def run(args):
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return done.stdout


def main(models):
    backends = graph_level_backends()
    letters = {}  # one letter per backend: its library's initial, else the next free letter of its name
    for b in backends:
        initial = {"onednn": "D", "onnxruntime": "O", "xnnpack": "X"}.get(b.split("-")[0], "")
        letters[b] = next(c for c in initial + b.upper() if c.isalpha() and c not in letters.values())
    print(f"threads: {THREADS}; graph-level backends: " + ", ".join(f"{letters[b]} = {b}" for b in backends))
    for model in models:
        with tempfile.TemporaryDirectory() as tmp:
            wholes = {}
            for b in backends:
                out = os.path.join(tmp, b + ".json")
                run([COLLAGE, "tune", model, "--backends", b, "--threads", THREADS, "--repeat", "3", "--refine",
                     "--population", "2", "--generations", "1", "--patience", "1", "--cost-db",
                     os.path.join(tmp, "costs.sqlite"), "-o", out])
                placement = json.load(open(out))
                if len(placement["kernels"]) == 1 and placement["kernels"][0]["backend"] == b:
                    wholes[b] = placement
            if len(wholes) < 2:
                print(f"{os.path.basename(model)}: fewer than two libraries take the whole model; skipped")
                continue
            first = next(iter(wholes.values()))
            node_id = dict(zip(first["kernels"][0]["node_names"], first["kernels"][0]["nodes"]))
            segs = [[n for n in s if n in node_id] for s in segments(model, SEGMENTS)]
            versions = {}
            for p in wholes.values():
                versions.update(p["backend_versions"])

            def placement_of(assign):
                p = json.loads(json.dumps(first))
                p["backend_versions"], p["kernels"] = versions, []
                for seg, b in zip(segs, assign):
                    if p["kernels"] and p["kernels"][-1]["backend"] == b:
                        p["kernels"][-1]["node_names"] += seg
                    else:
                        p["kernels"].append({"backend": b, "cost_ms": 0.0, "label": "segment", "node_names": list(seg)})
                for k in p["kernels"]:
                    k["nodes"] = [node_id[n] for n in k["node_names"]]
                return p

            plans = {}
            for b in wholes:
                plans[letters[b] * len(segs)] = [b] * len(segs)
                for i in range(len(segs)):
                    for other in wholes:
                        if other != b:
                            assign = [b] * len(segs)
                            assign[i] = other
                            plans["".join(letters[x] for x in assign)] = assign
            files = {}
            for code, assign in plans.items():
                files[code] = os.path.join(tmp, code + ".json")
                json.dump(placement_of(assign), open(files[code], "w"))
            # Every placement's outputs against the first whole library's (same seeded inputs).
            reference = None
            for code, path in files.items():
                outdir = os.path.join(tmp, "out_" + code)
                run([COLLAGE, "run", model, "--placement", path, "--threads", THREADS, "--output-dir", outdir])
                if reference is None:
                    reference = outdir
                    continue
                for name in os.listdir(reference):
                    run([COLLAGE, "compare", os.path.join(outdir, name), os.path.join(reference, name), "--rtol",
                         "1e-3", "--atol", "1e-3"])
            times = {code: [] for code in files}
            codes = list(files)
            for r in range(ROUNDS):
                for code in codes[r % len(codes):] + codes[:r % len(codes)]:
                    text = run([COLLAGE, "run", model, "--placement", files[code], "--repeat", REPEAT,
                                "--threads", THREADS])
                    times[code].append(float(re.search(r"median ([0-9.]+) ms", text).group(1)))
            ms = {code: statistics.median(t) for code, t in times.items()}
            whole_codes = [letters[b] * len(segs) for b in wholes]
            best_whole = min(whole_codes, key=ms.get)
            best_mix = min((c for c in ms if c not in whole_codes), key=ms.get)
            print(f"\n{os.path.basename(model)}: {len(segs)} segments of {[len(s) for s in segs]} nodes")
            for code in sorted(ms, key=ms.get):
                print(f"  {code:>12} {ms[code]:9.3f} ms  {ms[best_whole] / ms[code]:5.2f}x the best whole library")
            print(f"  best whole library {best_whole} {ms[best_whole]:.3f} ms; best one-segment mix {best_mix} "
                  f"{ms[best_mix]:.3f} ms ({ms[best_whole] / ms[best_mix]:.2f}x)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
