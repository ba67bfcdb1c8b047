#!/usr/bin/env python3
"""Benchmark (not part of the test suite): how much could any mix of oneDNN and ONNX Runtime gain on a
model, layer by layer, if moving a layer from one library to the other cost nothing?

Each library runs the whole model: oneDNN as one graph-level region (BACKEND, default onednn-region;
its per-primitive times from DNNL_VERBOSE=1, the median per primitive over the last runs), ONNX Runtime
with its profiler (the median per node). Convolutions and matrix products are matched across the two
by their problem (channels, groups, spatial sizes, kernel; batch, M, K, N), which layers of the same
shape share; everything else (pools, element-wise passes, reorders, normalisations) is each side's rest.
The oracle starts from the library whose whole run is faster (wall-clock median of a run without the
profilers, B) and moves to the other every matched problem that the other runs faster:

    ceiling = B's run / (B's run - the sum of those savings, in kernel times)

An activation right after a layer is counted in that layer on both sides (one library fuses what the
other runs as a pass). The rest stays where it is, and a model whose matched layers are under half of
either whole run is not compared. The ceiling is a bound on what layer-level placement between the two libraries can reach over the better one alone. It
is optimistic: each move between them costs layout conversions in a real placement.

usage: BUILD=build THREADS=1 REPEAT=20 python3 tests/bench/layer_oracle.py MODEL.onnx [MODEL.onnx ...]
"""
import collections
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
BUILD = os.path.join(ROOT, os.environ.get('BUILD', 'build'))
THREADS = int(os.environ.get('THREADS', '1'))
REPEAT = int(os.environ.get('REPEAT', '20'))
BACKEND = os.environ.get('BACKEND', 'onednn-region')
MIN_COVERAGE = 0.5  # below it the two runs are not the same layers in two libraries
# ORT's separate activation passes (QuickGelu is its SiLU), folded into the layer before them.
ACTIVATIONS = {'Relu', 'LeakyRelu', 'Clip', 'Sigmoid', 'HardSigmoid', 'HardSwish', 'QuickGelu', 'Gelu',
               'FastGelu', 'BiasGelu', 'Tanh', 'Elu', 'Selu', 'Softplus', 'Mish'}
BLOCK = 16  # ORT's NCHWc pads channels to its block; keys round channels up to it on both sides


def pad(c):
    return (c + BLOCK - 1) // BLOCK * BLOCK


def conv_key(kind, ic, oc, groups, spatial_in, spatial_out, kernel):
    g = 'dw' if groups > 1 and groups == ic else groups
    return (kind, pad(ic), pad(oc), g, tuple(spatial_in), tuple(spatial_out), tuple(kernel))


def mm_key(src, wei):
    batch = math.prod(wei[:-2]) if len(wei) > 2 else 1
    m = math.prod(src[:-1]) if batch == 1 else src[-2]
    return ('matmul', batch, m, src[-1], wei[-1])


def fold_activations(kernels):
    """(key, ms, is_activation) in run order -> (key, ms): an activation right after a matched layer is
    counted in it, as the other library may fuse it there."""
    out = []
    for key, ms, activation in kernels:
        if activation and out and out[-1][0]:
            out[-1] = (out[-1][0], out[-1][1] + ms)
        else:
            out.append((key, ms))
    return out


# --- oneDNN side ---------------------------------------------------------------------------------
DESC_CONV = re.compile(r'^(?:g(\d+))?mb\d+_ic(\d+)oc(\d+)_(.*)$')
DIM = re.compile(r'i([dhw])(\d+)o[dhw](\d+)k[dhw](\d+)')


def onednn_key(kind, desc):
    if kind in ('convolution', 'deconvolution'):
        m = DESC_CONV.match(desc)
        if not m:
            return None
        dims = DIM.findall(m.group(4))
        return conv_key('deconv' if kind == 'deconvolution' else 'conv', int(m.group(2)), int(m.group(3)),
                        int(m.group(1) or 1), [int(d[1]) for d in dims], [int(d[2]) for d in dims],
                        [int(d[3]) for d in dims])
    if kind == 'matmul':
        src, wei = ([int(x) for x in part.split('x')] for part in desc.split(':')[:2])
        return mm_key(src, wei)
    if kind == 'inner_product':
        m = re.match(r'mb(\d+)ic(\d+)oc(\d+)', desc)
        return ('matmul', 1, int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None
    return None


def onednn_wall(model):
    out = subprocess.run([os.path.join(BUILD, 'tests', 'collage_region_eval'), model, BACKEND, str(REPEAT),
                          str(THREADS)], capture_output=True, text=True, check=True).stdout
    return float(re.search(r'median ([0-9.]+) ms', out).group(1))


def onednn_profile(model):
    env = dict(os.environ, DNNL_VERBOSE='1', ONEDNN_VERBOSE='1')
    out = subprocess.run([os.path.join(BUILD, 'tests', 'collage_region_eval'), model, BACKEND, str(REPEAT),
                          str(THREADS)], env=env, capture_output=True, text=True, check=True)
    lines = [l.split(',') for l in (out.stdout + out.stderr).splitlines() if l.startswith('onednn_verbose,exec')]
    ids = [','.join(f[:-1]) for f in lines]
    # One run is the period P with the last P primitives equal to the P before them.
    period = next((p for p in range(1, len(ids) // 2 + 1) if ids[-p:] == ids[-2 * p:-p]), None)
    if period is None:
        raise subprocess.CalledProcessError(1, ['collage_region_eval', model], stderr='no repeating run in '
                                            'oneDNN\'s verbose output (does the backend run oneDNN primitives?)')
    runs = min(REPEAT - 1, len(ids) // period - 1, 10)
    prims = []
    for i in range(len(ids) - period, len(ids)):
        times = [float(lines[i - r * period][-1]) for r in range(runs)]
        prims.append((onednn_key(lines[i][3], lines[i][-2]), statistics.median(times), lines[i][3] == 'eltwise'))
    return fold_activations(prims)


# --- ONNX Runtime side ---------------------------------------------------------------------------
def ort_key(args):
    op = args['op_name']
    shapes = [list(next(iter(t.values()))) for t in args.get('input_type_shape', [])]
    if op in ('Conv', 'FusedConv') and len(shapes) >= 2 and len(shapes[0]) >= 3 and shapes[1][1]:
        x, w = shapes[0], shapes[1]
        y = list(next(iter(args['output_type_shape'][0].values())))
        return conv_key('conv', x[1], w[0], x[1] // w[1], x[2:], y[2:], w[2:])
    if op in ('MatMul', 'Gemm', 'FusedMatMul', 'FusedGemm') and len(shapes) >= 2:
        a, b = shapes[0], shapes[1]
        if op in ('Gemm', 'FusedGemm') and len(b) == 2 and b[1] == a[-1] and b[0] != a[-1]:
            b = [b[1], b[0]]  # transB: the weight stored as N x K
        return mm_key(a, b)
    return None  # ConvTranspose among them: its problem is not matched


def ort_run(model, out_dir, profile):
    env = dict(os.environ, PROFILE='1' if profile else '0',
               NODE_PATH=os.path.join(BUILD, 'bench-peer', 'node_modules'))
    return subprocess.run(['node', os.path.join(ROOT, 'tests', 'bench', 'ort_run.js'), model, out_dir, str(REPEAT),
                           str(THREADS)], env=env, capture_output=True, text=True, check=True).stdout


def ort_wall(model, tmp):
    out = ort_run(model, os.path.join(tmp, 'wall'), False)
    return float(re.search(r'ort median ([0-9.]+) ms', out).group(1))


def ort_profile(model, tmp):
    out_dir = os.path.join(tmp, 'ort')
    ort_run(model, out_dir, True)
    events = json.load(open(glob.glob(os.path.join(out_dir, 'ort_profile*.json'))[0]))
    durs, info = collections.defaultdict(list), {}
    for e in events:
        if e.get('cat') == 'Node' and e['name'].endswith('_kernel_time'):
            durs[e['name']].append(e['dur'] / 1000.0)
            info[e['name']] = e['args']
    nodes = [(ort_key(info[name]), statistics.median(ds[len(ds) // 4:]), info[name]['op_name'] in ACTIVATIONS)
             for name, ds in durs.items()]
    return fold_activations(nodes)


def oracle(model):
    with tempfile.TemporaryDirectory() as tmp:
        ort = ort_profile(model, tmp)
        wall = {'ort': ort_wall(model, tmp), 'dnn': onednn_wall(model)}
    dnn = onednn_profile(model)
    by = {'ort': collections.defaultdict(list), 'dnn': collections.defaultdict(list)}
    for side, items in (('ort', ort), ('dnn', dnn)):
        for key, ms in items:
            if key:
                by[side][key].append(ms)
    total = {'ort': sum(i[1] for i in ort), 'dnn': sum(i[1] for i in dnn)}
    matched = {'ort': 0.0, 'dnn': 0.0}
    rows = []
    for key in set(by['ort']) & set(by['dnn']):
        n = min(len(by['ort'][key]), len(by['dnn'][key]))
        o = statistics.mean(by['ort'][key]) * n
        d = statistics.mean(by['dnn'][key]) * n
        matched['ort'] += o
        matched['dnn'] += d
        rows.append((d - o, key, o, d, n))
    name = os.path.basename(model).rsplit('.', 1)[0]
    names = {'ort': 'ORT', 'dnn': BACKEND}
    print(f'{name}, {THREADS} thread(s): whole run ORT {wall["ort"]:.3f} ms, {BACKEND} {wall["dnn"]:.3f} ms; '
          f'kernel times ORT {total["ort"]:.3f} / oneDNN {total["dnn"]:.3f} ms, of them matched layers '
          f'{matched["ort"]:.3f} / {matched["dnn"]:.3f} ms in {len(rows)} problems')
    coverage = min(matched[s] / wall[s] for s in wall)
    if coverage < MIN_COVERAGE:
        print(f'  not comparable layer by layer: matched layers are {coverage:.0%} of a whole run '
              f'(under {MIN_COVERAGE:.0%}; a library leaves most of the model to other kernels or fuses it otherwise)')
        return None
    # The rest (unmatched kernels, the runtime's own glue) is each whole run less its matched layers. It is
    # reported, not moved: an activation one library fuses into a convolution is the other's separate pass.
    rest = {s: wall[s] - matched[s] for s in wall}
    base = min(wall, key=wall.get)
    sign = 1 if base == 'dnn' else -1  # rows hold oneDNN minus ORT
    savings = sum(max(0.0, sign * r[0]) for r in rows)
    ceiling = wall[base] / (wall[base] - savings)
    rows.sort()
    for label, picked in (('ORT faster', [r for r in rows if r[0] > 0][::-1][:3]),
                          ('oneDNN faster', [r for r in rows if r[0] < 0][:3])):
        for diff, key, o, d, n in picked:
            print(f'  {label} by {abs(diff):.3f} ms: {key} x{n}: ORT {o:.3f}, oneDNN {d:.3f}')
    print(f'  rest ORT {rest["ort"]:.3f} / oneDNN {rest["dnn"]:.3f} ms; from {names[base]} ({wall[base]:.3f} ms), '
          f'moving every layer the other runs faster, for free, saves {savings:.3f} ms: '
          f'ceiling {ceiling:.3f}x over the better library alone')
    return ceiling


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ceilings = []
    for model in sys.argv[1:]:
        try:
            ceiling = oracle(model)
        except subprocess.CalledProcessError as e:
            lines = (e.stderr or '').strip().splitlines()
            why = next((l for l in lines if 'rror' in l), lines[-1] if lines else f'exit {e.returncode}')
            print(f'{os.path.basename(model)}: not measured: {os.path.basename(e.cmd[1])}: {why.strip()}')
            continue
        if ceiling:
            ceilings.append(ceiling)
    if not ceilings:
        sys.exit('no model comparable layer by layer')
    geo = math.exp(sum(math.log(c) for c in ceilings) / len(ceilings))
    print(f'geomean ceiling over {len(ceilings)} model(s): {geo:.3f}x')


if __name__ == '__main__':
    main()
