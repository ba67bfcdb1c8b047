#!/usr/bin/python3
"""Benchmark input (not part of the product or the test suite): the modern zoo as PyTorch writes it.

Exports full-size architectures with Debian's python3-torch 1.13 / python3-torchvision 0.14 through
torch.onnx.export (fp32, batch 1, opset 17, random weights, eval mode, constant folding on), the way
a user's exporter writes them: torchvision's own EfficientNet-B0, MobileNetV3-Large, RegNetY-800MF,
ConvNeXt-Tiny, DenseNet-121 and ViT-B/16, plus a BERT-base-shaped encoder (HF BertModel's layout:
post-LN, erf-GELU, additive attention mask from an int64 mask input) and a GPT-2-small-shaped decoder
(pre-LN, tanh-GELU, fused c_attn split in three, causal mask by masked_fill(-inf), tied lm_head).
bert_base_dynseq is bert_base exported with a symbolic sequence dimension "seq" (batch stays 1).

usage: /usr/bin/python3 tests/bench/export_modern_zoo.py OUT_DIR [NAME ...]
Writes OUT_DIR/NAME.onnx, skipping files that already exist.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class BertLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_out, self.attn_norm = nn.Linear(d, d), nn.LayerNorm(d, eps=1e-12)
        self.intermediate, self.output, self.out_norm = nn.Linear(d, ff), nn.Linear(ff, d), nn.LayerNorm(d, eps=1e-12)

    def split(self, x):
        b, s, d = x.shape
        return x.view(b, s, self.heads, d // self.heads).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + mask
        ctx = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(x.shape)
        x = self.attn_norm(x + self.attn_out(ctx))
        return self.out_norm(x + self.output(F.gelu(self.intermediate(x))))


class BertEncoder(nn.Module):
    """BertModel(bert-base-uncased config) without the pooler: 12 layers, d 768, 12 heads, ff 3072."""

    def __init__(self, layers=12, d=768, heads=12, ff=3072, vocab=30522, positions=512):
        super().__init__()
        self.word, self.position, self.token_type = nn.Embedding(vocab, d), nn.Embedding(positions, d), nn.Embedding(2, d)
        self.norm = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(d, heads, ff) for _ in range(layers))

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        pos = torch.arange(seq).unsqueeze(0)
        x = self.norm(self.word(input_ids) + self.position(pos) + self.token_type(torch.zeros_like(input_ids)))
        mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = layer(x, mask)
        return x


class GptBlock(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln_1, self.c_attn, self.c_proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln_2, self.c_fc, self.mlp_proj = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt2Decoder(nn.Module):
    """nanoGPT's GPT-2 (124M): 12 layers, d 768, 12 heads, vocab 50257, lm_head tied to wte."""

    def __init__(self, layers=12, d=768, heads=12, seq=128, vocab=50257):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(1024, d)
        self.h = nn.ModuleList(GptBlock(d, heads, seq) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids):
        pos = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def image(name, make, size=224):
    model = make()
    # torchvision zero-initialises some heads (ViT's): its logits would be the bias whatever the
    # input, and an accuracy check on them (tune --accuracy, compare against ORT) would be vacuous.
    for m in model.modules():
        if isinstance(m, torch.nn.Linear) and not m.weight.detach().any():
            torch.nn.init.normal_(m.weight, std=0.02)
    return model, (torch.randn(1, 3, size, size),), ["input"], ["logits"]


def bert(dynamic_axes=None):
    return (BertEncoder(), (torch.randint(0, 30522, (1, 128)), torch.ones(1, 128, dtype=torch.int64)),
            ["input_ids", "attention_mask"], ["last_hidden_state"], dynamic_axes)


MODELS = {
    "efficientnet_b0": lambda: image("efficientnet_b0", torchvision.models.efficientnet_b0),
    "mobilenet_v3_large": lambda: image("mobilenet_v3_large", torchvision.models.mobilenet_v3_large),
    "regnet_y_800mf": lambda: image("regnet_y_800mf", torchvision.models.regnet_y_800mf),
    "convnext_tiny": lambda: image("convnext_tiny", torchvision.models.convnext_tiny),
    "densenet121": lambda: image("densenet121", torchvision.models.densenet121),
    "vit_b_16": lambda: image("vit_b_16", torchvision.models.vit_b_16),
    "bert_base": bert,
    "bert_base_dynseq": lambda: bert({"input_ids": {1: "seq"}, "attention_mask": {1: "seq"},
                                      "last_hidden_state": {1: "seq"}}),
    "gpt2_small": lambda: (Gpt2Decoder(), (torch.randint(0, 50257, (1, 128)),), ["input_ids"], ["logits"]),
}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir, names = sys.argv[1], sys.argv[2:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    for name in names:
        path = os.path.join(out_dir, name + ".onnx")
        if os.path.exists(path):
            continue
        # (model, args, input names, output names[, dynamic_axes]): dims are static unless named there.
        model, args, inputs, outputs, *rest = MODELS[name]()
        dynamic_axes = rest[0] if rest else None
        # Not under no_grad: nn.MultiheadAttention (ViT) would take its fused fast path, which has no
        # ONNX export; with gradients on it exports as the MatMul/Softmax graph users get.
        torch.onnx.export(model.eval(), args, path + ".tmp", opset_version=17, input_names=inputs,
                          output_names=outputs, dynamic_axes=dynamic_axes, do_constant_folding=True)
        os.replace(path + ".tmp", path)
        print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
