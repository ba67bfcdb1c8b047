#!/usr/bin/python3
"""Benchmark input (not part of the product or the test suite): torchvision's detectors, full size.

Exports with Debian's python3-torch 1.13 / python3-torchvision 0.14 through torch.onnx.export (fp32,
one 3x320x320 image, opset 17, random weights, eval mode), with no score threshold so every model
keeps its full quota of detections:
  ssdlite320:     ssdlite320_mobilenet_v3_large (91 classes, 300 detections)
  fasterrcnn320:  fasterrcnn_mobilenet_v3_large_320_fpn (91 classes, 100 detections); its batch norms get
                  the statistics of one input in ort_run.js's range [-1, 1) first (`calibrate` of
                  tests/data/exports/export_exports.py): untrained, every box scores the same and NMS
                  would order those ties by their last bits
  retinanet:      retinanet_resnet50_fpn at 320x320 (91 classes, 300 detections), as torchvision builds
                  it: every score sits at the head's 1% prior, and the kept boxes still come out the same
                  on both sides. Calibrated like Faster R-CNN (and its heads drawn wider), its 300 best
                  scores lie closer together than the 3e-5 by which any two runtimes' ResNet-50s differ,
                  so near-equal detections swap places between runs of different kernels

usage: /usr/bin/python3 tests/bench/export_detectors.py OUT_DIR [NAME ...]
Writes OUT_DIR/NAME.onnx, skipping files that already exist.
"""
import os
import sys

import torch
import torchvision.models.detection as det

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "exports"))
from export_exports import calibrate  # noqa: E402


def build(name):
    torch.manual_seed(0)
    if name == "ssdlite320":
        return det.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, score_thresh=0.0), \
            ["boxes", "scores", "labels"]
    if name == "fasterrcnn320":
        model = det.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None,
                                                          box_score_thresh=0.0).eval()
        calibrate(model, torch.rand(3, 320, 320) * 2 - 1)  # the range of ort_run.js's inputs
        return model, ["boxes", "labels", "scores"]
    if name == "retinanet":
        return det.retinanet_resnet50_fpn(weights=None, weights_backbone=None, score_thresh=0.0,
                                          min_size=320, max_size=320), ["boxes", "scores", "labels"]
    raise SystemExit("unknown detector: " + name)


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name in sys.argv[2:] or ["ssdlite320", "fasterrcnn320", "retinanet"]:
        path = os.path.join(out_dir, name + ".onnx")
        if os.path.exists(path):
            continue
        model, outputs = build(name)
        model.eval()
        torch.onnx.export(model, ([torch.rand(3, 320, 320)],), path, opset_version=17,
                          input_names=["image"], output_names=outputs)
        print(name, "written:", path)


if __name__ == "__main__":
    main()
