#!/usr/bin/env python3
# Writes the small PyTorch exports the control-flow and dynamic-shape tests run, each as an ONNX
# test case (model.onnx, test_data_set_*/input_*.pb, output_*.pb) whose expected outputs are
# PyTorch's own, computed here in eager mode. Needs Debian's python3-torch, python3-torchvision and
# python3-onnx; the test suite only reads what this wrote (committed). The detector's expected
# outputs are then replaced by ONNX Runtime's (ort_expected.js): traced, torchvision's batched NMS
# takes its coordinate-offset path, and the export keeps 192 boxes where eager PyTorch keeps 204.
#   ssdlite_narrow:  torchvision's SSDlite320-MobileNetV3 (weights=None), a quarter-width backbone,
#                    4 classes: an If around NonMaxSuppression, NonZero, TopK with computed k.
#   greedy_decoder:  a recurrent decoder generating up to 16 tokens with argmax, stopping at token 0:
#                    a Loop whose carried token list grows and whose body holds an If.
# usage: tests/data/exports/export_exports.py [OUT_DIR]   (default: this script's folder)
import os
import sys

import onnx
import torch
import torch.nn as nn
import torchvision
from onnx import numpy_helper

out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def write_case(name, module, args, input_names, output_names, data_set=0):
    case = os.path.join(out_dir, "test_" + name)
    data = os.path.join(case, "test_data_set_%d" % data_set)
    os.makedirs(data, exist_ok=True)
    if data_set == 0:
        torch.onnx.export(module, args, os.path.join(case, "model.onnx"), opset_version=17,
                          input_names=input_names, output_names=output_names)
    with torch.no_grad():
        outputs = module(*args)
    flat_in = args[0] if isinstance(args[0], list) else list(args)
    for i, t in enumerate(flat_in):
        with open(os.path.join(data, "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(t.numpy(), input_names[i]).SerializeToString())
    if isinstance(outputs, list):  # detection models: one dict per image
        outputs = [outputs[0]["boxes"], outputs[0]["scores"], outputs[0]["labels"]]
    for i, t in enumerate(outputs):
        with open(os.path.join(data, "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(t.detach().numpy(), output_names[i]).SerializeToString())
    onnx.checker.check_model(os.path.join(case, "model.onnx"))
    print(name, "written:", [tuple(t.shape) for t in outputs])


class GreedyDecoder(nn.Module):
    def __init__(self, vocab=32, dim=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.w = nn.Linear(dim, dim)
        self.u = nn.Linear(dim, dim, bias=False)
        self.out = nn.Linear(dim, vocab)

    def forward(self, h, start):
        tok = start
        tokens = torch.zeros(0, dtype=torch.long)
        for _ in range(16):
            h = torch.tanh(self.w(self.emb(tok)) + self.u(h))
            tok = torch.argmax(self.out(h), dim=-1)
            tokens = torch.cat([tokens, tok])
            if int(tok[0]) == 0:
                break
        return tokens, h


torch.manual_seed(0)
ssd = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
    weights=None, weights_backbone=None, num_classes=4, width_mult=0.25, score_thresh=0.0).eval()
write_case("ssdlite_narrow", ssd, ([torch.rand(3, 320, 320)],), ["image"], ["boxes", "scores", "labels"])
torch.manual_seed(0)
decoder = torch.jit.script(GreedyDecoder().eval())
write_case("greedy_decoder", decoder, (torch.randn(1, 16), torch.tensor([1])), ["h", "start"], ["tokens", "h_out"])
# A second data set on which decoding stops early (token 0 before the 16th): a shorter token list.
for start in range(1, 32):
    h = torch.randn(1, 16)
    if 0 < len(decoder(h, torch.tensor([start]))[0]) < 16:
        write_case("greedy_decoder", decoder, (h, torch.tensor([start])), ["h", "start"], ["tokens", "h_out"], 1)
        break
