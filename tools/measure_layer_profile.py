#!/usr/bin/env python3
"""Measures per-layer forward and backward GPU times of VGG-16, WideResNet-101-2 and Inception-v3
at DeepPool's layer granularity (the granularity of wavepool's zoo), and writes them in wavepool's
profile CSV format:

    model,per_gpu_batch,layer_idx,name,params_json,input_dim,total_ms,fw_us,bw_us

Each layer runs alone on a CUDA device, under bf16 autocast (mixed precision), in training mode:
forward on a random input, then backward of its output (input and parameter gradients). Times are
the GPU's own (host launch overhead excluded) median of --repeats CUDA-event measurements after
--warmup runs.

    python3 tools/measure_layer_profile.py --out data/profiles/h100_layer_profiles.csv
"""
import argparse
import csv
import json
import statistics

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class Layer:
    """One profiled layer: a module, its profile type name and parameters, and its input shape."""

    def __init__(self, module, name, params, input_dim):
        self.module = module
        self.name = name
        self.params = params
        self.input_dim = list(input_dim)


def conv_params(conv):
    pair = lambda v: v[0] if v[0] == v[1] else list(v)
    return {"in_channels": conv.in_channels, "kernel_size": pair(conv.kernel_size),
            "out_channels": conv.out_channels, "padding": pair(conv.padding),
            "stride": conv.stride[0]}


def pool_params(kernel, stride, padding):
    return {"kernel_size": kernel, "padding": padding, "stride": stride}


def shape_after(module, dim):
    with torch.no_grad():
        return list(module(torch.zeros(1, *dim)).shape[1:])


def vgg16_layers():
    model = torchvision.models.vgg16()
    layers, dim = [], [3, 224, 224]
    for m in model.features:
        if isinstance(m, nn.Conv2d):
            layers.append(Layer(m, "conv2d", conv_params(m), dim))
        elif isinstance(m, nn.ReLU):
            layers.append(Layer(nn.ReLU(inplace=True), "ReLU2d",
                                {"inplace": True, "kernel_size": 1, "padding": 0, "stride": 1}, dim))
        else:
            layers.append(Layer(m, "maxPool2d", pool_params(2, 2, 0), dim))
        dim = shape_after(m, dim)
    layers.append(Layer(nn.Flatten(), "flatten", {"kernel_size": 1}, dim))
    dim = [dim[0] * dim[1] * dim[2]]
    for m in model.classifier:
        if isinstance(m, nn.Linear):
            layers.append(Layer(m, "linear", {"bias": True, "in_features": m.in_features,
                                              "out_features": m.out_features}, dim))
            dim = [m.out_features]
        elif isinstance(m, nn.ReLU):
            layers.append(Layer(nn.ReLU(inplace=True), "ReLU1d",
                                {"inplace": True, "kernel_size": 1, "padding": 0, "stride": 1}, dim))
    return layers


def wrn101_2_layers():
    model = torchvision.models.wide_resnet101_2()
    layers, dim = [], [3, 224, 224]
    stem = nn.Sequential(model.conv1, model.bn1)
    layers.append(Layer(stem, "conv2d", conv_params(model.conv1), dim))
    dim = shape_after(stem, dim)
    layers.append(Layer(nn.ReLU(inplace=True), "ReLU2d",
                        {"inplace": True, "kernel_size": 1, "padding": 0, "stride": 1}, dim))
    layers.append(Layer(model.maxpool, "maxPool2d", pool_params(3, 2, 1), dim))
    dim = shape_after(model.maxpool, dim)
    for stage in (model.layer1, model.layer2, model.layer3, model.layer4):
        for block in stage:
            params = {"base_width": 128, "dilation": 1, "groups": 1,
                      "inplanes": block.conv1.in_channels, "planes": block.conv3.out_channels // 4}
            if block.stride != 1:
                params["stride"] = block.stride
            layers.append(Layer(block, "ResnetBottleneck", params, dim))
            dim = shape_after(block, dim)
    layers.append(Layer(model.avgpool, "adAvgPool2d", {"output_height": 1, "output_width": 1}, dim))
    layers.append(Layer(nn.Flatten(), "flatten", {"kernel_size": 1}, [dim[0], 1, 1]))
    layers.append(Layer(model.fc, "linear", {"bias": True, "in_features": 2048,
                                            "out_features": 1000}, [2048]))
    return layers


class Pool(nn.Module):
    def __init__(self, kind, kernel, stride, padding):
        super().__init__()
        self.kind, self.kernel, self.stride, self.padding = kind, kernel, stride, padding

    def forward(self, x):
        op = F.max_pool2d if self.kind == "max" else F.avg_pool2d
        return op(x, kernel_size=self.kernel, stride=self.stride, padding=self.padding)


def inception_v3_layers():
    model = torchvision.models.inception_v3(aux_logits=False, init_weights=False)
    layers, dim = [], [3, 299, 299]

    def conv(basic, d):  # a BasicConv2d: conv, BatchNorm and ReLU
        layers.append(Layer(basic, "conv2d", conv_params(basic.conv), d))
        return shape_after(basic, d)

    def pool(kind, kernel, stride, padding, d):
        m = Pool(kind, kernel, stride, padding)
        layers.append(Layer(m, "maxPool2d" if kind == "max" else "avgPool2d",
                            pool_params(kernel, stride, padding), d))
        return shape_after(m, d)

    def chain(mods, d):
        for m in mods:
            d = conv(m, d)
        return d

    for name in ("Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3"):
        dim = conv(getattr(model, name), dim)
    dim = pool("max", 3, 2, 0, dim)
    dim = chain([model.Conv2d_3b_1x1, model.Conv2d_4a_3x3], dim)
    dim = pool("max", 3, 2, 0, dim)
    for block in (model.Mixed_5b, model.Mixed_5c, model.Mixed_5d):  # InceptionA
        chain([block.branch1x1], dim)
        chain([block.branch5x5_1, block.branch5x5_2], dim)
        chain([block.branch3x3dbl_1, block.branch3x3dbl_2, block.branch3x3dbl_3], dim)
        chain([block.branch_pool], pool("avg", 3, 1, 1, dim))
        dim = shape_after(block, dim)
    block = model.Mixed_6a  # InceptionB
    chain([block.branch3x3], dim)
    chain([block.branch3x3dbl_1, block.branch3x3dbl_2, block.branch3x3dbl_3], dim)
    pool("max", 3, 2, 0, dim)
    dim = shape_after(block, dim)
    for block in (model.Mixed_6b, model.Mixed_6c, model.Mixed_6d, model.Mixed_6e):  # InceptionC
        chain([block.branch1x1], dim)
        chain([block.branch7x7_1, block.branch7x7_2, block.branch7x7_3], dim)
        chain([block.branch7x7dbl_1, block.branch7x7dbl_2, block.branch7x7dbl_3,
               block.branch7x7dbl_4, block.branch7x7dbl_5], dim)
        chain([block.branch_pool], pool("avg", 3, 1, 1, dim))
        dim = shape_after(block, dim)
    block = model.Mixed_7a  # InceptionD
    chain([block.branch3x3_1, block.branch3x3_2], dim)
    chain([block.branch7x7x3_1, block.branch7x7x3_2, block.branch7x7x3_3, block.branch7x7x3_4],
          dim)
    pool("max", 3, 2, 0, dim)
    dim = shape_after(block, dim)
    for block in (model.Mixed_7b, model.Mixed_7c):  # InceptionE
        chain([block.branch1x1], dim)
        d = chain([block.branch3x3_1], dim)
        chain([block.branch3x3_2a], d)
        chain([block.branch3x3_2b], d)
        d = chain([block.branch3x3dbl_1, block.branch3x3dbl_2], dim)
        chain([block.branch3x3dbl_3a], d)
        chain([block.branch3x3dbl_3b], d)
        chain([block.branch_pool], pool("avg", 3, 1, 1, dim))
        dim = shape_after(block, dim)
    return layers


MODELS = {"vgg16": vgg16_layers, "wrn101_2": wrn101_2_layers, "inception_v3": inception_v3_layers}


def time_layer(layer, batch, warmup, repeats):
    """Median forward and backward GPU time of one layer, in microseconds.

    The GPU is held busy (torch.cuda._sleep) while the host queues the layer's kernels, so the
    CUDA events time the kernels themselves back to back and not the host's launch overhead
    (which CUDA graphs remove in training; DeepPool's profiler replayed graphs for the same reason).
    """
    module = layer.module.cuda().train()
    x = torch.randn(batch, *layer.input_dim, device="cuda")
    params = [p for p in module.parameters() if p.requires_grad]
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        grad = torch.ones_like(module(x.clone()))  # made once, outside the timed passes
    forward, backward = [], []
    start, middle, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    for i in range(warmup + repeats):
        leaf = x.clone().requires_grad_(True)
        inp = leaf.clone()  # in-place layers (ReLU) may not write into a leaf
        torch.cuda.synchronize()
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = module(inp)
        middle.record()
        torch.autograd.grad(out, [leaf] + params, grad)
        end.record()
        torch.cuda.synchronize()
        if i >= warmup:
            forward.append(start.elapsed_time(middle) * 1e3)
            backward.append(middle.elapsed_time(end) * 1e3)
    return statistics.median(forward), statistics.median(backward)


# About 10 ms at the H100's 1.98 GHz: longer than the host takes to queue a layer's passes.
SLEEP_CYCLES = 20_000_000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV file to write")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated models")
    parser.add_argument("--batches", default="1,2,4,8,16,32,64", help="per-GPU batch sizes")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    with open(args.out, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["model", "per_gpu_batch", "layer_idx", "name", "params_json", "input_dim",
                      "total_ms", "fw_us", "bw_us"])
        for model in args.models.split(","):
            layers = MODELS[model]()
            for batch in (int(b) for b in args.batches.split(",")):
                for index, layer in enumerate(layers):
                    fw, bw = time_layer(layer, batch, args.warmup, args.repeats)
                    dim = layer.input_dim
                    out.writerow([model, batch, index, layer.name,
                                  json.dumps(layer.params, sort_keys=True, separators=(",", ":")),
                                  dim[0] if len(dim) == 1 else json.dumps(dim, separators=(",", ":")),
                                  f"{(fw + bw) / 1e3:.3f}", round(fw), round(bw)])
                f.flush()
                print(f"{model} batch {batch}: {len(layers)} layers", flush=True)


if __name__ == "__main__":
    main()
