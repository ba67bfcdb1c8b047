#!/usr/bin/env python3
# Writes the small PyTorch exports the control-flow and dynamic-shape tests run, each as an ONNX
# test case (model.onnx, test_data_set_*/input_*.pb, output_*.pb) whose expected outputs are
# PyTorch's own, computed here in eager mode. Needs Debian's python3-torch, python3-torchvision and
# python3-onnx; the test suite only reads what this wrote (committed). The detectors' expected
# outputs are then replaced by ONNX Runtime's (ort_expected.js CASE_DIR): traced, torchvision's
# batched NMS takes its coordinate-offset path (SSDlite: the export keeps 192 boxes where eager
# PyTorch keeps 204). Random weights, but Faster R-CNN's and RetinaNet's batch norms are calibrated
# (and RetinaNet's heads drawn wider) so that no two boxes tie on their score.
#   ssdlite_narrow:  torchvision's SSDlite320-MobileNetV3 (weights=None), a quarter-width backbone,
#                    4 classes: an If around NonMaxSuppression, NonZero, TopK with computed k.
#   fasterrcnn_narrow: torchvision's FasterRCNN on the same quarter-width MobileNetV3 with a 32-channel
#                    FPN (the layout of fasterrcnn_mobilenet_v3_large_320_fpn), 4 classes: RPN, RoIAlign,
#                    per-class NMS, 100 detections.
#   retinanet_narrow: torchvision's RetinaNet on that backbone (P3-P7), 4 classes, 300 detections.
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
from torchvision.models import mobilenet_v3_large
from torchvision.models.detection import FasterRCNN, RetinaNet
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.ops import misc as misc_nn_ops
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool, LastLevelP6P7

out_dir = sys.argv[1] if __name__ == "__main__" and len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


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
        outputs = [outputs[0][name] for name in output_names]
    for i, t in enumerate(outputs):
        with open(os.path.join(data, "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(t.detach().numpy(), output_names[i]).SerializeToString())
    onnx.checker.check_model(os.path.join(case, "model.onnx"))
    print(name, "written:", [tuple(t.shape) for t in outputs])


def narrow_fpn(returned, extra_blocks, channels=32):
    """A quarter-width MobileNetV3-Large with an FPN over the stages `returned` counts from the end."""
    features = mobilenet_v3_large(weights=None, width_mult=0.25, norm_layer=misc_nn_ops.FrozenBatchNorm2d).features
    stages = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
    layers = [len(stages) + r for r in returned]
    return_layers = {str(stages[k]): str(v) for v, k in enumerate(layers)}
    in_channels = [features[stages[i]].out_channels for i in layers]
    return BackboneWithFPN(features, return_layers, in_channels, channels, extra_blocks=extra_blocks)


def calibrate(model, image):
    """Untrained, every batch norm is the identity and the activations shrink ~1e-7 by the last
    stage, so every box gets the same score and NMS orders ties by their last bits. Give each norm the
    statistics of its input on one image, as training would."""
    def set_stats(norm, inputs):
        norm.running_mean.copy_(inputs[0].mean(dim=(0, 2, 3)))
        norm.running_var.copy_(inputs[0].var(dim=(0, 2, 3)) + 1e-5)
    hooks = [m.register_forward_pre_hook(set_stats) for m in model.modules()
             if isinstance(m, (misc_nn_ops.FrozenBatchNorm2d, nn.BatchNorm2d))]
    with torch.no_grad():
        model([image])
    for h in hooks:
        h.remove()


def spread_convs(module, seed):
    """RetinaNet's heads start at std 0.01 (every logit at the 1% prior): draw them fan-in scaled."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Conv2d):
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (2.0 / m.weight[0].numel()) ** 0.5)


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


def main():
    torch.manual_seed(0)
    ssd = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=4, width_mult=0.25, score_thresh=0.0).eval()
    write_case("ssdlite_narrow", ssd, ([torch.rand(3, 320, 320)],), ["image"], ["boxes", "scores", "labels"])
    torch.manual_seed(0)
    frcnn = FasterRCNN(narrow_fpn([-2, -1], LastLevelMaxPool()), num_classes=None,
                       rpn_anchor_generator=AnchorGenerator(((32, 64, 128, 256, 512),) * 3, ((0.5, 1.0, 2.0),) * 3),
                       box_head=TwoMLPHead(32 * 7 * 7, 64), box_predictor=FastRCNNPredictor(64, 4),
                       min_size=320, max_size=320, rpn_pre_nms_top_n_test=150, rpn_post_nms_top_n_test=150,
                       box_score_thresh=0.0).eval()
    calibrate(frcnn, torch.rand(3, 320, 320))
    # torchvision's R-CNN heads return boxes, labels, scores in that order (SSD and RetinaNet: boxes, scores, labels).
    write_case("fasterrcnn_narrow", frcnn, ([torch.rand(3, 320, 320)],), ["image"], ["boxes", "labels", "scores"])
    torch.manual_seed(0)
    sizes = tuple((s, int(s * 2 ** (1 / 3)), int(s * 2 ** (2 / 3))) for s in [32, 64, 128, 256, 512])
    retina = RetinaNet(narrow_fpn([-3, -2, -1], LastLevelP6P7(32, 32)), num_classes=4,
                       anchor_generator=AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * 5),
                       min_size=320, max_size=320, score_thresh=0.0).eval()
    spread_convs(retina.head, 1)
    calibrate(retina, torch.rand(3, 320, 320))
    write_case("retinanet_narrow", retina, ([torch.rand(3, 320, 320)],), ["image"], ["boxes", "scores", "labels"])
    torch.manual_seed(0)
    decoder = torch.jit.script(GreedyDecoder().eval())
    write_case("greedy_decoder", decoder, (torch.randn(1, 16), torch.tensor([1])), ["h", "start"], ["tokens", "h_out"])
    # A second data set on which decoding stops early (token 0 before the 16th): a shorter token list.
    for start in range(1, 32):
        h = torch.randn(1, 16)
        if 0 < len(decoder(h, torch.tensor([start]))[0]) < 16:
            write_case("greedy_decoder", decoder, (h, torch.tensor([start])), ["h", "start"], ["tokens", "h_out"], 1)
            break


if __name__ == "__main__":
    main()
