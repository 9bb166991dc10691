#!/usr/bin/env python3
"""Measures every op of a workload with tessera's GPU runner and with PyTorch in one process, interleaved
(issue "The GPU reference measures kernels, not launches").

The runner is loaded as a library (build-gpu/libtessera_gpu_ref.so, gpu/capi.cu): for each op it measures
every path (device time by CUDA-graph replay, eager time, output checked) and keeps each output class's fastest
checked path alive. PyTorch then runs the same op on the *same inputs* (the runner's generator fills PyTorch's
tensors), every variant timed the same two ways (device: a CUDA graph of many launches over input copies
spanning 3x the L2, replayed; eager: launches issued back to back) and its output checked by the runner's
checker (sampled positions against the float64 reference, the whole output against the runner's anchor path).
Finally, for every output class both sides have, the runner's fastest path and PyTorch's fastest variant are
replayed in alternating A/B rounds (who goes first alternates), and the rounds' ratios are recorded.

usage: gpu_torch_reference.py --lib build-gpu/libtessera_gpu_ref.so --out DIR --op kind=...,name=...[,...]
           [--op ...] [--rounds 7] [--compile-all] [--skip-ceilings]

Writes DIR/<op>.json (the runner's records), DIR/run.json and DIR/torch.json (PyTorch's paths per op and the
comparison rows). Runs where PyTorch and a GPU are (the lent H200).
"""
import argparse
import ctypes
import json
import math
import statistics
import sys
import time

TIMING = {"graph_target_us": 1000.0, "replays": 15, "batch_target_us": 1000.0, "batches": 11}
AB_REPLAYS = 3  # timed replays per side per round; the round's time is their median


class Runner:
    """The runner's C interface (gpu/capi.cu)."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        sig = {
            "tgr_error": ([], ctypes.c_char_p),
            "tgr_measure": ([ctypes.c_char_p], ctypes.c_int),
            "tgr_record": ([ctypes.c_int], ctypes.c_char_p),
            "tgr_launches_per_graph": ([ctypes.c_int, ctypes.c_char_p], ctypes.c_int),
            "tgr_replay_us": ([ctypes.c_int, ctypes.c_char_p, ctypes.c_int], ctypes.c_double),
            "tgr_check": ([ctypes.c_int, ctypes.c_ulonglong, ctypes.c_char_p, ctypes.c_double], ctypes.c_char_p),
            "tgr_tolerance": ([ctypes.c_char_p, ctypes.c_int, ctypes.c_int], ctypes.c_double),
            "tgr_tensor_id": ([ctypes.c_int, ctypes.c_int], ctypes.c_longlong),
            "tgr_generate": ([ctypes.c_char_p, ctypes.c_ulonglong, ctypes.c_longlong, ctypes.c_longlong,
                              ctypes.c_ulonglong], ctypes.c_int),
            "tgr_table": ([ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double), ctypes.c_longlong],
                          ctypes.c_longlong),
            "tgr_release": ([ctypes.c_int], ctypes.c_int),
            "tgr_finish": ([ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int], ctypes.c_int),
        }
        for name, (args, result) in sig.items():
            function = getattr(lib, name)
            function.argtypes, function.restype = args, result
        self.lib = lib

    def _ok(self, value, bad):
        if value == bad or (isinstance(value, float) and value < 0):
            raise RuntimeError("tessera_gpu_ref: " + self.lib.tgr_error().decode())
        return value

    def measure(self, op_text):
        return self._ok(self.lib.tgr_measure(op_text.encode()), -1)

    def record(self, handle):
        return json.loads(self._ok(self.lib.tgr_record(handle), None))

    def launches_per_graph(self, handle, path):
        return self._ok(self.lib.tgr_launches_per_graph(handle, path.encode()), -1)

    def replay_us(self, handle, path, launches):
        return self._ok(self.lib.tgr_replay_us(handle, path.encode(), launches), -1.0)

    def check(self, handle, tensor, output_type, tolerance):
        return json.loads(self._ok(self.lib.tgr_check(handle, tensor.data_ptr(), output_type.encode(), tolerance),
                                   None))

    def tolerance(self, output_type, reduced_precision_inputs, tf32):
        return self._ok(self.lib.tgr_tolerance(output_type.encode(), int(reduced_precision_inputs), int(tf32)),
                        -1.0)

    def generate(self, tensor, dtype, seed, tensor_id):
        self._ok(self.lib.tgr_generate(dtype.encode(), seed, tensor_id, tensor.numel(), tensor.data_ptr()), -1)

    def tensor_id(self, index, slot):
        return self.lib.tgr_tensor_id(index, slot)

    def table(self, handle, name):
        """The op's host table `name` (capi.cu's tgr_table) as a list of floats."""
        length = self._ok(self.lib.tgr_table(handle, name.encode(), None, 0), -1)
        values = (ctypes.c_double * max(length, 1))()
        self._ok(self.lib.tgr_table(handle, name.encode(), values, length), -1)
        return list(values)[:length]

    def release(self, handle):
        self._ok(self.lib.tgr_release(handle), -1)

    def finish(self, out, command, skip_ceilings):
        self._ok(self.lib.tgr_finish(out.encode(), command.encode(), int(skip_ceilings)), -1)


def output_class(path_name):
    """What follows the library in a path's name: the output it stores (gpu/measure.hpp)."""
    base = path_name.split(" (", 1)[0]
    return base.split("-", 1)[1] if "-" in base else base


def torch_dtype(name):
    import torch
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16, "int8": torch.int8}[name]


def launches_for(estimate_us, copies):
    """timing.cu's launches_per_graph."""
    estimate = max(estimate_us, 0.5)
    for_length = math.ceil(TIMING["graph_target_us"] / estimate)
    longest = max(for_length, math.ceil(10 * TIMING["graph_target_us"] / estimate))
    return max(1, min(1000, min(max(for_length, copies), longest)))


def time_eager(torch, launch):
    """Launches issued back to back, batches of ~1 ms timed with events; median per launch (timing.cu's)."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(3):
        launch(i)
    start.record()
    launch(0)
    stop.record()
    torch.cuda.synchronize()
    per_batch = max(1, min(2000, math.ceil(TIMING["batch_target_us"] / max(1000.0 * start.elapsed_time(stop), 0.1))))
    samples, rotation = [], 0
    for _ in range(TIMING["batches"]):
        start.record()
        for _ in range(per_batch):
            launch(rotation)
            rotation += 1
        stop.record()
        torch.cuda.synchronize()
        samples.append(1000.0 * start.elapsed_time(stop) / per_batch)
    return {"median_us": statistics.median(samples), "min_us": min(samples), "batches": len(samples),
            "launches_per_batch": per_batch}


class TorchGraph:
    """`launches` launches of `launch(i)` captured in one CUDA graph; each replay timed with events."""

    def __init__(self, torch, launch, launches):
        self.torch, self.launches = torch, launches
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(3):
                launch(i)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            for i in range(launches):
                launch(i)
        self.graph.replay()
        torch.cuda.synchronize()
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def timed_replay_us(self):
        self.start.record()
        self.graph.replay()
        self.stop.record()
        self.stop.synchronize()
        return 1000.0 * self.start.elapsed_time(self.stop) / self.launches


def time_device(graph):
    samples = [graph.timed_replay_us() for _ in range(TIMING["replays"])]
    return {"median_us": statistics.median(samples), "min_us": min(samples), "max_us": max(samples),
            "replays": len(samples), "launches_per_graph": graph.launches}


def copies_for(l2_bytes, set_bytes):
    return max(1, min(64, math.ceil(3 * l2_bytes / set_bytes)))


class Inputs:
    """The op's inputs as the runner generates them, copied `copies` times (each launch reads the next)."""

    def __init__(self, torch, runner, op, l2_bytes, handle=None):
        self.torch, self.runner, self.op, self.handle = torch, runner, op, handle
        self.seed, self.index, self.dtype = int(op["seed"]), int(op["index"]), op["dtype"]
        self.l2_bytes = l2_bytes

    def tensor(self, slot, shape):
        tensor = self.torch.empty(shape, dtype=torch_dtype(self.dtype), device="cuda")
        self.runner.generate(tensor, self.dtype, self.seed, self.runner.tensor_id(self.index, slot))
        return tensor


def epilogue_steps(op):
    """The op's epilogue steps in order ("bias+gelu_tanh" -> ["bias", "gelu_tanh"]; none: [])."""
    text = op.get("epilogue", "")
    return text.split("+") if text else []


def apply_steps(torch, steps, x, bias, residual):
    """The epilogue's steps on x, each one PyTorch op, as a framework's eager chain runs them."""
    F = torch.nn.functional
    for step in steps:
        if step == "bias":
            x = x + bias
        elif step == "residual":
            x = x + residual
        elif step == "swiglu":  # the gate projection's output x, the up projection's U
            x = F.silu(x) * residual
        else:
            x = {"relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
                 "silu": F.silu}[step](x)
    return x


def epilogue_operands(torch, runner, op, inputs, rows, cols, copies):
    """The epilogue's bias row [cols] and tile copies [rows, cols]: the generator's fp32 values (the
    accumulator type's, as the simulator's) stored in the output type."""
    steps, out_dtype = epilogue_steps(op), torch_dtype(op["dtype"])

    def generated(slot, shape):
        tensor = torch.empty(shape, dtype=torch.float32, device="cuda")
        runner.generate(tensor, "fp32", inputs.seed, runner.tensor_id(inputs.index, slot))
        return tensor.to(out_dtype)
    bias = generated(2, (cols,)) if "bias" in steps else None
    # The tile an epilogue reads: the residual (slot 3) or a SwiGLU gate's up projection (slot 4).
    residual = generated(4 if "swiglu" in steps else 3, (rows, cols)) if {"residual", "swiglu"} & set(steps) else None
    residuals = [residual] + [residual.clone() for _ in range(copies - 1)] if residual is not None else [None] * copies
    return bias, residuals


def epilogue_variants(torch, base, steps, bias, residuals, fused=None):
    """A contraction's variants with its epilogue: the eager chain (the contraction, then one PyTorch op per
    step), PyTorch's own fused call where it has one (`fused`: name and function of the same arguments), and
    torch.compile of the chain (Inductor fuses the pointwise steps into one kernel after the extern call)."""
    variants = []
    for entry in base:
        contraction = entry["fn"]
        chain = lambda *a, contraction=contraction: apply_steps(torch, steps, contraction(*a[:2]), a[2], a[3])
        args = lambda i, inner=entry["args"]: (*inner(i), bias, residuals[i % len(residuals)])
        name, _, dtype_part = entry["path"].partition("-")
        variants.append({**entry, "path": f"{name}+{'+'.join(steps)}-{dtype_part}", "fn": chain, "args": args,
                         "variant": "eager chain"})
        variants.append({**entry, "path": f"torch.compile({name[len('torch.'):]}+{'+'.join(steps)})-{dtype_part}",
                         "fn": torch.compile(chain, dynamic=False), "args": args, "variant": "torch.compile"})
        if fused:
            fused_name, fused_fn = fused
            variants.append({**entry, "path": f"{fused_name}-{dtype_part}", "fn": fused_fn, "args": args,
                             "variant": "fused library call"})
    return variants


def gemm_variants(torch, runner, op, inputs):
    """torch.matmul (int8: torch._int_mm) on A [m, k] and W [k, n], row-major like tessera's."""
    if op["kind"] == "fc":  # the GEMM m = batch, n = outputs, k = inputs
        m, n, k = int(op.get("batch", 1)), int(op["outputs"]), int(op["inputs"])
    else:
        m, n, k = int(op["m"]), int(op["n"]), int(op["k"])
    dtype = op["dtype"]
    a, w = inputs.tensor(0, (m, k)), inputs.tensor(1, (k, n))
    element = a.element_size()
    copies = copies_for(inputs.l2_bytes, (m * k + k * n) * element + m * n * 4)
    a_copies, w_copies = [a] + [a.clone() for _ in range(copies - 1)], [w] + [w.clone() for _ in range(copies - 1)]
    args = lambda i: (a_copies[i % copies], w_copies[i % copies])
    if dtype == "int8":
        return copies, [dict(path="torch._int_mm", cls="int8-int32", output="int32", tf32=False, fn=torch._int_mm,
                             args=args)]
    if dtype == "fp32":
        base = [dict(path="torch.matmul-fp32-fp32", cls="fp32", output="fp32", tf32=False, fn=torch.matmul,
                     args=args),
                dict(path="torch.matmul-fp32-tf32", cls="tf32", output="fp32", tf32=True, fn=torch.matmul,
                     args=args)]
    else:
        base = [dict(path=f"torch.matmul-{dtype}", cls=f"{dtype}-{dtype}out", output=dtype, tf32=False,
                     fn=torch.matmul, args=args)]
    steps = epilogue_steps(op)
    if not steps:
        return copies, base
    bias, residuals = epilogue_operands(torch, runner, op, inputs, m, n, copies)
    fused = None
    if steps in (["bias", "relu"], ["bias", "gelu_tanh"]):  # cuBLASLt's epilogue through PyTorch
        gelu = steps[1] == "gelu_tanh"
        fused = ("torch._addmm_activation", lambda a, w, b, r: torch._addmm_activation(b, a, w, use_gelu=gelu))
    elif steps == ["bias"]:
        fused = ("torch.addmm", lambda a, w, b, r: torch.addmm(b, a, w))
    elif steps in (["bias", "residual"], ["residual", "bias"]):
        fused = ("torch.addmm(bias+residual)", lambda a, w, b, r: torch.addmm(r + b, a, w))
    return copies, epilogue_variants(torch, base, steps, bias, residuals, fused)


def conv_variants(torch, runner, op, inputs):
    """torch.nn.functional.conv2d on channels-last tensors (tessera's NHWC), cuDNN in benchmark mode."""
    get = lambda key, default=None: int(op.get(key, default))
    n, c, h, w, k, r, s = (get(key) for key in ("n", "c", "h", "w", "k", "r", "s"))
    stride, pad, dilation, groups = get("stride", 1), get("pad", 0), get("dilation", 1), get("groups", 1)
    dtype = op["dtype"]
    if dtype == "int8":
        return 0, []
    cg, kg = c // groups, k // groups
    x = inputs.tensor(0, (n, h, w, c)).permute(0, 3, 1, 2)  # NCHW view of NHWC storage: channels-last
    # tessera's W is [groups][r][s][c/groups][k/groups]; PyTorch's [k][c/groups][r][s], k = group * kg + kk.
    wt = inputs.tensor(1, (groups, r, s, cg, kg)).permute(0, 4, 3, 1, 2).reshape(k, cg, r, s)
    wt = wt.contiguous(memory_format=torch.channels_last)
    p = (h + 2 * pad - dilation * (r - 1) - 1) // stride + 1
    q = (w + 2 * pad - dilation * (s - 1) - 1) // stride + 1
    copies = copies_for(inputs.l2_bytes, (x.numel() + wt.numel() + n * k * p * q) * x.element_size())
    xs, ws = [x] + [x.clone() for _ in range(copies - 1)], [wt] + [wt.clone() for _ in range(copies - 1)]
    torch.backends.cudnn.benchmark = True
    conv = lambda x, w: torch.nn.functional.conv2d(x, w, stride=stride, padding=pad, dilation=dilation,
                                                   groups=groups)
    args = lambda i: (xs[i % copies], ws[i % copies])
    if dtype == "fp32":
        base = [dict(path="torch.conv2d-fp32-fp32", cls="fp32", output="fp32", tf32=False, fn=conv, args=args),
                dict(path="torch.conv2d-fp32-tf32", cls="tf32", output="fp32", tf32=True, fn=conv, args=args)]
    else:
        base = [dict(path=f"torch.conv2d-{dtype}", cls=f"{dtype}-{dtype}out", output=dtype, tf32=False,
                     fn=conv, args=args)]
    steps = epilogue_steps(op)
    if not steps:
        return copies, base
    bias, residuals = epilogue_operands(torch, runner, op, inputs, n * p * q, k, copies)
    # NCHW-shaped views of the NHWC bias broadcast and residual (channels-last, like the conv's output).
    bias = bias.view(1, k, 1, 1) if bias is not None else None
    residuals = [r.view(n, p, q, k).permute(0, 3, 1, 2) if r is not None else None for r in residuals]
    fused = None
    if steps[0] == "bias" and "bias" not in steps[1:]:  # conv2d's own bias argument, the rest one op each
        fused = ("torch.conv2d(bias)+" + "+".join(steps[1:]) if steps[1:] else "torch.conv2d(bias)",
                 lambda x, w, b, r: apply_steps(torch, steps[1:], torch.nn.functional.conv2d(
                     x, w, b.view(-1), stride=stride, padding=pad, dilation=dilation, groups=groups), b, r))
    return copies, epilogue_variants(torch, base, steps, bias, residuals, fused)


def pool_variants(torch, runner, op, inputs):
    """max_pool2d / avg_pool2d on channels-last tensors with tessera's semantics (padding takes no part in a
    max; an average divides by the whole window: count_include_pad=True), eager and under torch.compile."""
    get = lambda key, default=None: int(op.get(key, default))
    n, c, h, w, r, s = (get(key) for key in ("n", "c", "h", "w", "r", "s"))
    stride, pad, mode, dtype = get("stride", 1), get("pad", 0), op["mode"], op["dtype"]
    if dtype == "int8":
        return 0, []
    x = inputs.tensor(0, (n, h, w, c)).permute(0, 3, 1, 2)
    p, q = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - s) // stride + 1
    copies = copies_for(inputs.l2_bytes, (x.numel() + n * c * p * q) * x.element_size())
    xs = [x] + [x.clone() for _ in range(copies - 1)]
    F = torch.nn.functional
    if mode == "max":
        pool = lambda t: F.max_pool2d(t, (r, s), stride=stride, padding=pad)
    else:
        pool = lambda t: F.avg_pool2d(t, (r, s), stride=stride, padding=pad, count_include_pad=True)
    cls = "fp32" if dtype == "fp32" else f"{dtype}-{dtype}out"
    args = lambda i: (xs[i % copies],)
    return copies, [
        dict(path=f"torch.{mode}_pool2d-{dtype}", cls=cls, output=dtype, tf32=False, fn=pool, args=args),
        dict(path=f"torch.compile({mode}_pool2d)-{dtype}", cls=cls, output=dtype, tf32=False, variant="torch.compile",
             fn=torch.compile(pool, dynamic=False), args=args)]


def vector_variants(torch, runner, op, inputs):
    """softmax, layer_norm, rms_norm and the elementwise functions on [rows, cols] tensors of the op's type,
    eager and under torch.compile (Inductor writes its own fused kernel)."""
    rows, cols, dtype, kind = int(op["rows"]), int(op["cols"]), op["dtype"], op["kind"]
    F = torch.nn.functional
    x = inputs.tensor(0, (rows, cols))
    extra = []
    if kind == "softmax":
        scale, causal = float(op.get("scale", 1.0)), op.get("causal", "false") == "true"
        mask = torch.ones(rows, cols, dtype=torch.bool, device="cuda").triu(cols - rows + 1) if causal else None

        def fn(t):
            logits = t * scale if scale != 1.0 else t
            return torch.softmax(logits.masked_fill(mask, float("-inf")) if causal else logits, dim=-1)
        name = "torch.softmax"
    elif kind in ("layernorm", "rmsnorm"):
        # A norm with `residual: true` normalises X + R (the add & norm; R is the op's tensor slot 3).
        eps = float(op.get("eps", 1e-5 if kind == "layernorm" else 1e-6))
        gamma = inputs.tensor(1, (cols,))
        beta = inputs.tensor(2, (cols,)) if kind == "layernorm" else None
        norm = (lambda t: F.layer_norm(t, (cols,), gamma, beta, eps)) if kind == "layernorm" else (
            lambda t: F.rms_norm(t, (cols,), gamma, eps))
        name = "torch.layer_norm" if kind == "layernorm" else "torch.rms_norm"
        if op.get("residual", "false") == "true":
            extra = [inputs.tensor(3, (rows, cols))]
            fn = lambda t, r: norm(t + r)
            name += "(x+r)"
        else:
            fn = norm
    else:
        function = op["fn"]
        if function in ("add", "mul", "swiglu"):
            extra = [inputs.tensor(1, (rows, cols))]
        elif function == "bias":
            extra = [inputs.tensor(1, (cols,))]
        fn = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
              "silu": F.silu, "add": torch.add, "mul": torch.mul, "bias": torch.add,
              "swiglu": lambda t, u: F.silu(t) * u}[function]
        name = f"torch.{function}"
    set_bytes = x.numel() * x.element_size() * (2 + len([t for t in extra if t.dim() == 2]))
    copies = copies_for(inputs.l2_bytes, set_bytes)
    xs = [x] + [x.clone() for _ in range(copies - 1)]
    rotated = [[t] + [t.clone() for _ in range(copies - 1)] if t.dim() == 2 else [t] * copies for t in extra]
    args = lambda i: (xs[i % copies], *(tensors[i % copies] for tensors in rotated))
    return copies, [dict(path=f"{name}-{dtype}", cls=dtype, output=dtype, tf32=False, fn=fn, args=args),
                    dict(path=f"torch.compile({name[len('torch.'):]})-{dtype}", cls=dtype, output=dtype, tf32=False,
                         variant="torch.compile", fn=torch.compile(fn, dynamic=False), args=args)]


def rope_variants(torch, runner, op, inputs):
    """The rotary embedding as PyTorch models write it, eager and under torch.compile: X viewed [batch, seq,
    heads, head_dim], its first rotary_dim columns rotated by the token's cos and sin in fp32 — rotate_half
    (HF Llama, GPT-NeoX: pairs (i, i + d/2)) or the interleaved pairs (2i, 2i+1) (GPT-J, Meta's complex form)
    —, the rest passed through, stored in the op's type. The cos/sin table is vLLM's cos_sin_cache [seq,
    rotary_dim] (cos then sin), computed in float64 and rounded to fp32 as the runner's table is."""
    get = lambda key, default=None: int(op.get(key, default))
    batch, seq, heads, head_dim = get("batch", 1), get("seq"), get("heads"), get("head_dim")
    rotary = get("rotary_dim", 0) or head_dim
    position, base, dtype = get("position", 0), float(op.get("base", 10000)), op["dtype"]
    interleaved = op.get("style", "half") == "interleaved"
    half = rotary // 2
    f64 = torch.float64
    theta = base ** (-2.0 * torch.arange(half, dtype=f64, device="cuda") / rotary)
    angles = (position + torch.arange(seq, dtype=f64, device="cuda"))[:, None] * theta[None, :]
    table = torch.cat([angles.cos(), angles.sin()], dim=-1).float()  # [seq, rotary]
    x = inputs.tensor(0, (batch * seq, heads * head_dim))

    def rope(t, cos_sin):
        q = t.view(batch, seq, heads, head_dim)
        rot, rest = q[..., :rotary].float(), q[..., rotary:]
        cos, sin = (part[None, :, None, :] for part in cos_sin.chunk(2, dim=-1))  # [1, seq, 1, half]
        if interleaved:
            a, b = rot[..., 0::2], rot[..., 1::2]
            out = torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)
        else:
            a, b = rot[..., :half], rot[..., half:]
            cos2, sin2 = torch.cat([cos, cos], dim=-1), torch.cat([sin, sin], dim=-1)
            out = rot * cos2 + torch.cat([-b, a], dim=-1) * sin2  # x*cos + rotate_half(x)*sin
        return torch.cat([out.to(t.dtype), rest], dim=-1).view(batch * seq, heads * head_dim)
    copies = copies_for(inputs.l2_bytes, 2 * x.numel() * x.element_size())
    xs = [x] + [x.clone() for _ in range(copies - 1)]
    args = lambda i: (xs[i % copies], table)
    name = "rope_interleaved" if interleaved else "rope_rotate_half"
    return copies, [dict(path=f"torch.{name}-{dtype}", cls=dtype, output=dtype, tf32=False, fn=rope, args=args),
                    dict(path=f"torch.compile({name})-{dtype}", cls=dtype, output=dtype, tf32=False,
                         variant="torch.compile", fn=torch.compile(rope, dynamic=False), args=args)]


def index_table(seed, tensor, count):
    """ops/input_generator.hpp's input_index for elements 0 .. count - 1: an int32 input of the generator (a paged
    KV cache's block table), a permutation of 0 .. count - 1 by a 4-round Feistel network with cycle-walking."""
    mask64 = (1 << 64) - 1

    def mix64(x):
        x ^= x >> 30
        x = (x * 0xbf58476d1ce4e5b9) & mask64
        x ^= x >> 27
        x = (x * 0x94d049bb133111eb) & mask64
        return x ^ (x >> 31)
    bits = 2
    while bits < 64 and (1 << bits) < count:
        bits += 2
    half, key = bits // 2, mix64((seed * 0x9e3779b97f4a7c15 + tensor + 1) & mask64)
    mask, round_keys = (1 << half) - 1, [(key + r * 0xd1b54a32d192ed03) & mask64 for r in range(4)]
    table = []
    for index in range(count):
        x = index
        while True:
            left, right = x >> half, x & mask
            for round_key in round_keys:
                left, right = right, left ^ (mix64((round_key + right) & mask64) & mask)
            x = (left << half) | right
            if x < count:
                break
        table.append(x)
    return table


def attention_variants(torch, runner, op, inputs):
    """scaled_dot_product_attention on the runner's Q [b, h, s_q, d] and its K, V as the op's cache stores them:
    the flash backend for bf16/fp16 (the efficient one and the math one for fp32, which flash does not take),
    enable_gqa where kv_heads < heads. Causal queries are the last seq_q positions (bottom-right aligned):
    is_causal for a square mask, causal_lower_right otherwise (flash takes it through CausalBias), and no mask
    for one query, which sees every key. A paged cache: K and V gathered through the block table into contiguous
    [b, kv_heads, s, d] outside the timed call, and a second variant that gathers inside it (index_select)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    F = torch.nn.functional
    get = lambda key, default=None: int(op.get(key, default))
    b, h, kvh, sq, skv, d = (get("batch", 1), get("heads"), get("kv_heads"), get("seq_q"), get("seq_kv"),
                             get("head_dim"))
    dtype, causal = op["dtype"], op.get("causal", "false") == "true"
    scale = float(op.get("scale", 0)) or 1 / math.sqrt(d)
    paged, bshd = op.get("kv_cache.layout", "contiguous") == "paged", op.get("kv_cache.order", "bhsd") == "bshd"
    tokens = get("kv_cache.block_tokens", 16)
    blocks = -(-skv // tokens)
    gqa = {"enable_gqa": True} if kvh < h else {}
    q = inputs.tensor(0, (b * h * sq, d)).view(b, h, sq, d)
    kv_rows = b * blocks * tokens * kvh if paged else b * kvh * skv
    k_stored, v_stored = inputs.tensor(1, (kv_rows, d)), inputs.tensor(2, (kv_rows, d))
    if paged:
        table = torch.tensor(index_table(inputs.seed, runner.tensor_id(inputs.index, 3), b * blocks),
                             dtype=torch.int64, device="cuda")

        def gather(pool, table):
            """[b, kv_heads, seq_kv, d] from the pool's blocks: block table[b * blocks + j] holds tokens
            j * tokens .. of sequence b, its heads' rows in the cache's order."""
            per_block = (pool.view(b * blocks, tokens, kvh, d).transpose(1, 2) if bshd
                         else pool.view(b * blocks, kvh, tokens, d))
            picked = per_block.index_select(0, table).view(b, blocks, kvh, tokens, d)
            return picked.transpose(1, 2).reshape(b, kvh, blocks * tokens, d)[:, :, :skv]
        k, v = gather(k_stored, table).contiguous(), gather(v_stored, table).contiguous()
        layout = f" (paged {'bshd' if bshd else 'bhsd'} K/V gathered into contiguous bhsd outside the timed call)"
    elif bshd:  # [b, s, kv_heads, d] storage seen as [b, kv_heads, s, d]: flash's own layout
        k, v = k_stored.view(b, skv, kvh, d).transpose(1, 2), v_stored.view(b, skv, kvh, d).transpose(1, 2)
        layout = " (bshd K/V as strided views)"
    else:
        k, v, layout = k_stored.view(b, kvh, skv, d), v_stored.view(b, kvh, skv, d), ""
    copies = copies_for(inputs.l2_bytes, (2 * q.numel() + k.numel() + v.numel()) * q.element_size())
    qs = [q] + [q.clone() for _ in range(copies - 1)]
    ks, vs = [k] + [k.clone() for _ in range(copies - 1)], [v] + [v.clone() for _ in range(copies - 1)]

    def sdpa(backend, mask, is_causal):
        def attend(qq, kk, vv):
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(qq, kk, vv, attn_mask=mask, is_causal=is_causal, scale=scale,
                                                     **gqa)
            # A 5-d view of [b, h, s_q, d] (flash's output is a transposed view of [b, s_q, h, d]): the check's
            # as_tessera_layout makes it contiguous outside the timed call (it permutes a 4-d result as NCHW).
            return out.unsqueeze(0)
        return attend
    if not causal or sq == 1:
        mask, is_causal, how = None, False, "" if not causal else ",one query sees every key"
    elif sq == skv:
        mask, is_causal, how = None, True, ",is_causal"
    else:
        mask, is_causal, how = causal_lower_right(sq, skv), False, ",causal_lower_right"
    backends = ([(SDPBackend.EFFICIENT_ATTENTION, "efficient"), (SDPBackend.MATH, "math")] if dtype == "fp32"
                else [(SDPBackend.FLASH_ATTENTION, "flash")])
    variants = []
    for backend, name in backends:
        chosen_mask = mask
        if name == "math" and mask is not None:  # the math backend takes the mask materialised
            chosen_mask = torch.ones(sq, skv, dtype=torch.bool, device="cuda").tril(skv - sq)
        variants.append(dict(path=f"torch.sdpa[{name}{how}]-{dtype}{layout}", cls=dtype, output=dtype, tf32=False,
                             variant=f"scaled_dot_product_attention, {name} backend" + (", enable_gqa" if gqa else ""),
                             fn=sdpa(backend, chosen_mask, is_causal),
                             args=lambda i: (qs[i % copies], ks[i % copies], vs[i % copies])))
    if paged:
        pools_k = [k_stored] + [k_stored.clone() for _ in range(copies - 1)]
        pools_v = [v_stored] + [v_stored.clone() for _ in range(copies - 1)]
        backend, name = backends[0]
        attend = sdpa(backend, mask, is_causal)
        variants.append(dict(path=f"torch.sdpa[{name}{how}]+index_select-{dtype} (K/V gathered through the block "
                                  "table inside the timed call)", cls=dtype, output=dtype, tf32=False,
                             variant="index_select of the pages, then scaled_dot_product_attention",
                             fn=lambda qq, kp, vp: attend(qq, gather(kp, table), gather(vp, table)),
                             args=lambda i: (qs[i % copies], pools_k[i % copies], pools_v[i % copies])))
    return copies, variants


def moe_variants(torch, runner, op, inputs):
    """The MoE layer as PyTorch model code runs it, on the runner's inputs and the runner's (the host's float64)
    routing, so that the outputs can be checked: both variants first run PyTorch's own router (the router GEMM,
    softmax or sigmoid, the (group-limited) top-k and renormalised weights, as HF's MixtralSparseMoeBlock and
    DeepseekV3TopkRouter write it; timed, its selection not used, as the runner's device top-k), then
    - the per-expert loop (HF MixtralSparseMoeBlock): for each expert that has tokens, index_select its tokens,
      its FFN (x W_gu, SiLU(gate) * up, W_down), times the gate weight, index_add into the bf16 output; the
      tokens of each expert are the host routing's (HF finds them with torch.where, a host sync that a CUDA
      graph cannot capture);
    - torch._grouped_mm: PyTorch's own permutation (a stable argsort of the routes' experts, the experts'
      counts and their running sum as the offsets, an index_select of the rows), two grouped GEMMs over the
      experts' [hidden, 2 ffn] and [ffn, hidden] weights with SiLU(gate) * up between, and the un-permutation
      (the rows times their weights index_added into an fp32 output, stored bf16).
    Both add the shared experts' FFN (dense matmuls) on every token. Gate and up are one merged weight per
    expert, as the runner's (vLLM's w13); one copy of the inputs (the weights read per call are far over the
    L2)."""
    F = torch.nn.functional
    get = lambda key, default=None: op.get(key, default)
    tokens, hidden, ffn, experts, top_k = (int(op[key]) for key in ("tokens", "hidden", "ffn", "experts", "top_k"))
    shared, swiglu = int(get("shared_experts", 0)), get("activation", "swiglu") == "swiglu"
    sigmoid = get("routing.scoring", "softmax") == "sigmoid"
    groups, topk_groups = int(get("routing.groups", 1)), int(get("routing.topk_groups", 1))
    scale = float(get("routing.routed_scaling", 1.0))
    if op["dtype"] != "bf16":
        return 0, []
    x = inputs.tensor(0, (tokens, hidden))
    router = inputs.tensor(1, (hidden, experts))

    def merged(gate_slot, up_slot, count):
        up = inputs.tensor(up_slot, (count, hidden, ffn))
        if not swiglu:
            return up
        gate = inputs.tensor(gate_slot, (count, hidden, ffn))
        both = torch.cat([gate, up], dim=-1)
        del gate, up
        return both
    w_gu, w_down = merged(2, 3, experts), inputs.tensor(4, (experts, ffn, hidden))
    s_gu = merged(5, 6, shared) if shared else None
    s_down = inputs.tensor(7, (shared, ffn, hidden)) if shared else None
    chosen = torch.tensor(runner.table(inputs.handle, "moe.experts"), dtype=torch.float64).view(tokens, top_k)
    gate_weights = torch.tensor(runner.table(inputs.handle, "moe.weights"), dtype=torch.float64).view(tokens, top_k)
    chosen, gate_weights = chosen.long().cuda(), gate_weights.float().cuda()

    def act(h):
        return F.silu(h[:, :ffn]) * h[:, ffn:] if swiglu else F.gelu(h)

    def route(t):
        """PyTorch's router: its selection is computed (and timed) but the host's routing is used."""
        logits = (t @ router).float()
        if sigmoid:
            scores = logits.sigmoid()
        else:
            scores = logits.softmax(dim=-1)
        if groups > 1:
            group_scores = scores.view(tokens, groups, -1).topk(min(2, experts // groups), dim=-1)[0].sum(-1)
            group_index = group_scores.topk(topk_groups, dim=-1)[1]
            mask = torch.zeros_like(group_scores).scatter_(1, group_index, 1)
            allowed = mask.unsqueeze(-1).expand(tokens, groups, experts // groups).reshape(tokens, experts)
            scores = scores.masked_fill(allowed == 0, 0.0)
        weights, index = scores.topk(top_k, dim=-1)
        return index, weights / weights.sum(dim=-1, keepdim=True) * scale

    def shared_out(t):
        total = None
        for s in range(shared):
            y = act(t @ s_gu[s]) @ s_down[s]
            total = y if total is None else total + y
        return total

    # The loop: each expert's tokens and weights from the host routing (static).
    per_expert = []
    for e in range(experts):
        token, slot = (chosen == e).nonzero(as_tuple=True)
        if token.numel():
            per_expert.append((e, token, gate_weights[token, slot].to(torch.bfloat16)[:, None]))

    def loop(t):
        route(t)
        out = torch.zeros(tokens, hidden, dtype=t.dtype, device=t.device)
        for e, token, weight in per_expert:
            current = t.index_select(0, token)
            y = act(current @ w_gu[e]) @ w_down[e]
            out.index_add_(0, token, y * weight)
        if shared:
            out = out + shared_out(t)
        return out

    # _grouped_mm: dropped routes sort past every expert (key = experts) and are left out of the offsets.
    key = torch.where(chosen >= 0, chosen, experts).view(-1)
    kept = int((chosen >= 0).sum())
    flat_weights = gate_weights.view(-1)
    ones = torch.ones_like(key, dtype=torch.int32)

    def grouped_with(w_up, w_dn):
        def grouped(t):
            route(t)
            order = torch.argsort(key, stable=True)
            counts = torch.zeros(experts + 1, dtype=torch.int32, device=t.device).scatter_add_(0, key, ones)
            offsets = torch.cumsum(counts[:experts], 0, dtype=torch.int32)
            rows = order[:kept]
            token = torch.div(rows, top_k, rounding_mode="floor")
            xp = t.index_select(0, token)
            y = torch._grouped_mm(act(torch._grouped_mm(xp, w_up, offs=offsets)), w_dn, offs=offsets)
            out = torch.zeros(tokens, hidden, dtype=torch.float32, device=t.device)
            out.index_add_(0, token, y.float() * flat_weights.index_select(0, rows)[:, None])
            if shared:
                out += shared_out(t).float()
            return out.to(t.dtype)
        return grouped

    grouped, layout = grouped_with(w_gu, w_down), ""
    try:
        grouped(x)
        torch.cuda.synchronize()
    except RuntimeError:  # a _grouped_mm that takes its weights column-major only
        w_gu_t = w_gu.transpose(-2, -1).contiguous().transpose(-2, -1)
        w_down_t = w_down.transpose(-2, -1).contiguous().transpose(-2, -1)
        grouped, layout = grouped_with(w_gu_t, w_down_t), " (weights column-major)"
    args = lambda i: (x,)
    return 1, [
        dict(path="torch.grouped_mm-bf16" + layout, cls="bf16", output="bf16", tf32=False, fn=grouped, args=args,
             variant="torch._grouped_mm with PyTorch's permute and un-permute"),
        dict(path="torch.expert_loop-bf16", cls="bf16", output="bf16", tf32=False, fn=loop, args=args,
             variant="per-expert loop (HF MixtralSparseMoeBlock: index_select, FFN, index_add)")]


VARIANTS = {"gemm": gemm_variants, "fc": gemm_variants, "conv2d": conv_variants, "pool": pool_variants,
            "softmax": vector_variants, "layernorm": vector_variants, "rmsnorm": vector_variants,
            "elementwise": vector_variants, "attention": attention_variants, "rope": rope_variants,
            "moe": moe_variants}
# Where torch.compile is not applied, and why: Inductor lowers a lone matmul or conv2d to the same extern call
# (cuBLAS / cuDNN) that eager PyTorch makes (checked on the H200 with --compile-all: same kernels, same time),
# so a compiled variant measures nothing new; pools are lowered to Inductor's own Triton kernel. A matmul or
# conv2d with an epilogue is compiled (Inductor fuses its pointwise steps).
NOT_COMPILED = {"gemm": "Inductor lowers a lone matmul to the eager extern cuBLAS call",
                "fc": "Inductor lowers a lone matmul to the eager extern cuBLAS call",
                "conv2d": "Inductor lowers a lone conv2d to the eager extern cuDNN call"}


def kernels_of(torch, launch):
    """The kernels one launch runs, by name (PyTorch's profiler), to set beside the runner's."""
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profile:
        launch(0)
        torch.cuda.synchronize()
    return [event.name for event in profile.events() if event.device_type == torch.autograd.DeviceType.CUDA]


def as_tessera_layout(torch, out):
    """The output as tessera stores it: [rows, cols] row-major; NHWC for a 4-d (NCHW-shaped) tensor."""
    if out.dim() == 4:
        return out.permute(0, 2, 3, 1).contiguous()
    return out.contiguous()


def measure_framework(torch, runner, handle, op, record, l2_bytes, compile_all):
    """PyTorch's variants of the op: each timed (device and eager) and checked."""
    # Each op's compiled variants start from an empty Dynamo cache: the variants of every op share their
    # Python functions, and past Dynamo's recompile limit (8 by default) a function silently runs eagerly.
    torch._dynamo.reset()
    inputs = Inputs(torch, runner, op, l2_bytes, handle)
    copies, variants = VARIANTS[op["kind"]](torch, runner, op, inputs)
    if compile_all and op["kind"] in NOT_COMPILED and not epilogue_steps(op):
        for variant in list(variants):
            name, _, dtype_part = variant["path"].partition("-")
            variants.append({**variant, "path": f"torch.compile({name[len('torch.'):]})-{dtype_part}",
                             "variant": "torch.compile", "fn": torch.compile(variant["fn"], dynamic=False)})
    runner_fastest = fastest_by_class(record)
    results = []
    for variant in variants:
        entry = {"path": variant["path"], "variant": variant.get("variant", "eager aten call"),
                 "like_class": variant["cls"]}
        try:
            if variant["tf32"] or op["dtype"] == "fp32":
                torch.backends.cuda.matmul.allow_tf32 = variant["tf32"]
                torch.backends.cudnn.allow_tf32 = variant["tf32"]
            fn, args = variant["fn"], variant["args"]
            launch = lambda i: fn(*args(i))
            out = launch(0)
            torch.cuda.synchronize()
            tolerance = runner.tolerance(variant["output"], op["dtype"] in ("bf16", "fp16"), variant["tf32"])
            entry["check"] = runner.check(handle, as_tessera_layout(torch, out), variant["output"], tolerance)
            entry["kernels"] = kernels_of(torch, launch)
            if entry["variant"] == "torch.compile" and not any(k.startswith("triton") for k in entry["kernels"]):
                entry["compile_note"] = "no Inductor kernel ran: the compiled function launched library kernels only"
            entry["eager"] = time_eager(torch, launch)
            paired = runner_fastest.get(variant["cls"])
            launches = (runner.launches_per_graph(handle, paired["path"]) if paired
                        else launches_for(entry["eager"]["median_us"], copies))
            variant["graph"] = TorchGraph(torch, launch, launches)
            entry["device"] = time_device(variant["graph"])
            entry["time_us"] = entry["device"]["median_us"]
            entry["ran"] = True
        except (RuntimeError, torch.cuda.OutOfMemoryError) as error:  # e.g. _int_mm's shape rules
            entry["ran"] = False
            entry["note"] = str(error).splitlines()[0]
            variant["graph"] = None
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = True
        results.append(entry)
        print(f"torch: {op['name']}: {entry['path']}: " +
              (f"{entry['time_us']:.2f} us device, {entry['eager']['median_us']:.2f} us eager, check "
               f"{'pass' if entry['check']['pass'] else 'FAIL'}" if entry["ran"] else entry["note"]),
              file=sys.stderr)
    return variants, results


def fastest_by_class(record):
    """The runner's fastest path of each output class among those that passed their check."""
    fastest = {}
    for path in record.get("paths", []):
        if not path.get("ran") or not path.get("check", {}).get("pass"):
            continue
        kind = output_class(path["path"])
        if kind not in fastest or path["time_us"] < fastest[kind]["time_us"]:
            fastest[kind] = path
    return fastest


def ab_rounds(torch, runner, handle, op, record, variants, results, rounds):
    """For every output class both sides computed (and passed): the runner's fastest path against PyTorch's
    fastest variant, replayed in alternating rounds."""
    rows = []
    runner_fastest = fastest_by_class(record)
    for kind, runner_path in sorted(runner_fastest.items()):
        candidates = [(entry, variant) for entry, variant in zip(results, variants)
                      if entry["like_class"] == kind and entry.get("ran") and entry["check"]["pass"]]
        if not candidates:
            continue
        framework, variant = min(candidates, key=lambda pair: pair[0]["time_us"])
        launches = runner.launches_per_graph(handle, runner_path["path"])
        runner_rounds, framework_rounds, ratios, first = [], [], [], []
        for number in range(rounds):
            def runner_time():
                return statistics.median(runner.replay_us(handle, runner_path["path"], launches)
                                         for _ in range(AB_REPLAYS))

            def framework_time():
                return statistics.median(variant["graph"].timed_replay_us() for _ in range(AB_REPLAYS))

            if number % 2 == 0:
                r, f = runner_time(), framework_time()
            else:
                f, r = framework_time(), runner_time()
            runner_rounds.append(r)
            framework_rounds.append(f)
            ratios.append(r / f)
            first.append("runner" if number % 2 == 0 else "torch")
        ratio = statistics.median(ratios)
        eager_ratio = runner_path["eager"]["median_us"] / framework["eager"]["median_us"]
        rows.append({"op": op["name"], "class": kind, "runner_path": runner_path["path"],
                     "framework_path": framework["path"], "framework_variant": framework["variant"],
                     "rounds": rounds, "launches_per_graph": launches,
                     "runner_us": statistics.median(runner_rounds), "framework_us": statistics.median(framework_rounds),
                     "runner_over_framework": ratio, "ratio_min": min(ratios), "ratio_max": max(ratios),
                     "runner_us_rounds": runner_rounds, "framework_us_rounds": framework_rounds, "ratios": ratios,
                     "first": first, "runner_eager_us": runner_path["eager"]["median_us"],
                     "framework_eager_us": framework["eager"]["median_us"], "eager_runner_over_framework": eager_ratio,
                     "faster": "runner" if ratio < 1 else "framework"})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lib", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--op", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--compile-all", action="store_true",
                        help="also time torch.compile variants of matmul and conv2d (see NOT_COMPILED)")
    parser.add_argument("--skip-ceilings", action="store_true")
    args = parser.parse_args()
    import torch

    for limit in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                  "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 4096)
    runner = Runner(args.lib)
    l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size
    ops, comparison = [], []
    started = time.time()
    for text in args.op:
        op = dict(pair.split("=", 1) for pair in text.split(","))
        entry = {"op": op}
        try:
            handle = runner.measure(text)
        except RuntimeError as error:  # the runner could not measure it: no record; the others still run
            entry["runner_error"] = str(error)
            print(f"runner: {op['name']}: {error}", file=sys.stderr)
            ops.append(entry)
            continue
        record = runner.record(handle)
        if "no_gpu_path" in record or op["kind"] not in VARIANTS:
            entry["no_framework_path"] = record.get("no_gpu_path", f"no PyTorch comparison for kind {op['kind']} yet")
        else:
            try:
                variants, results = measure_framework(torch, runner, handle, op, record, l2_bytes,
                                                      args.compile_all)
            except Exception as error:  # recorded, and the other ops still measured
                variants, results = [], []
                entry["framework_error"] = f"{type(error).__name__}: {error}"
                print(f"torch: {op['name']}: {entry['framework_error']}", file=sys.stderr)
            entry["paths"] = results
            if not results:
                entry["no_framework_path"] = f"PyTorch has no {op['dtype']} {op['kind']} on CUDA"
            if op["kind"] in NOT_COMPILED and not args.compile_all and not epilogue_steps(op):
                entry["not_compiled"] = NOT_COMPILED[op["kind"]]
            rows = ab_rounds(torch, runner, handle, op, record, variants, results, args.rounds)
            comparison.extend(rows)
            for row in rows:
                print(f"ab: {op['name']} {row['class']}: runner {row['runner_us']:.2f} us, torch "
                      f"{row['framework_us']:.2f} us, ratio {row['runner_over_framework']:.3f} "
                      f"({row['ratio_min']:.3f}-{row['ratio_max']:.3f})", file=sys.stderr)
            del variants
        runner.release(handle)
        torch.cuda.empty_cache()
        ops.append(entry)
    command = " ".join(sys.argv)
    runner.finish(args.out, command, args.skip_ceilings)
    with open(f"{args.out}/torch.json", "w") as f:
        json.dump({"framework": f"torch {torch.__version__}", "gpu": torch.cuda.get_device_name(0),
                   "cudnn": torch.backends.cudnn.version(),
                   "protocol": "same process and inputs as the runner; per variant: device time = median of "
                               f"{TIMING['replays']} CUDA-graph replays (launches per graph as the runner's path "
                               "of the class), eager = median of batches of back-to-back calls; A/B: per output "
                               f"class, {args.rounds} rounds alternating who goes first, each side's round the "
                               f"median of {AB_REPLAYS} replays, ratio = runner/PyTorch per round",
                   "seconds": time.time() - started, "ops": ops, "comparison": comparison}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
