"""Export small PyTorch programs to ExecuTorch ``.pte`` files, as users export them.

    python scripts/export_pte.py OUT_DIR      # in an environment with torch and executorch

Needs ``torch==2.13.0`` (the CPU build) and ``executorch==1.5.1`` (``scripts/
executorch_lane.sh`` makes such an environment, cached outside the clone). Each
program is exported with ExecuTorch's defaults (``to_edge``, then ``to_executorch``
with its greedy memory planning, 16-byte alignment) unless its name says otherwise:

- ``cnn``: conv 3x3 (3->8), relu, max pool, flatten (a view), linear; 1x3x32x32;
- ``dscnn``: a depthwise-separable stack, DS-CNN's shape at a small size;
- ``mlp_split``: an MLP as plain ``to_edge`` leaves it (linear split into a weight
  transpose and addmm); ``mlp_linear``: the same with ``linear`` kept whole;
- ``attention``: one self-attention block with a residual and a feed-forward;
- ``rnn``: an Elman cell unrolled over 8 steps;
- ``rescnn``: convolutions with a residual add; ``lstm``: ``nn.LSTM`` over 12 steps;
- ``autoencoder``: an MLP autoencoder (128-64-16-64-128) as plain ``to_edge`` leaves it;
- ``unet``: a small U-Net on 1x3x32x32: two levels down (conv 3x3 and relu, max pool),
  a bottleneck, two levels up (a transposed convolution, then a nearest upsample), each
  joined to its skip by ``torch.cat``, a 1x1 head (2 channels);
- ``int8``: a CNN (two convs, three max pools, two linears) on 1x3x32x32 quantized
  to int8 by PT2E (XNNPACK's quantizer, symmetric per tensor) and lowered without a
  delegate: ``quantize_per_tensor``/``dequantize_per_tensor`` instructions run by
  ExecuTorch's quantized kernels, float kernels between them; its weights are int8
  constants, dequantized into the pool by instructions of their own;
- ``views``: views, slices, an in-place add;
- ``counter``: a mutable buffer (state across calls);
- ``two_methods``: a program with two methods;
- ``cnn_naive``: ``cnn`` with ExecuTorch's naive planner (no reuse);
- ``cnn_overlap``: ``cnn`` with a planning algorithm that puts every tensor at
  offset 0 (ExecuTorch exports it without a word; it computes garbage);
- ``unet_spread``: ``unet`` planned at export by ``memory_planning_algo(target=
  "imxrt1170", memory={"tcm": 65536})``: its tensors over TCM and OCRAM, two pools;
- ``<name>_banked`` (``BANKED``): programs planned by ExecuTorch's ``BankedGreedy`` over
  a small fast bank (memory id 1) and a large slow one (id 2), to compare placements;
- ``cnn_arenaplan``, ``views_arenaplan``, ``attention_arenaplan``, ``two_methods_arenaplan``:
  those programs planned at export by ``arenaplan.executorch.memory_planning_algo``
  (arenaplan is imported from this clone's ``src``).

The same versions give the same bytes (fixed seeds).
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch
from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge
from executorch.exir.banked_memory_planning import Bank, BankedGreedy, TargetMemoryMap
from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, naive
from executorch.exir.passes import MemoryPlanningPass

from arenaplan.executorch import memory_planning_algo

ALIGNMENT = 16


class Cnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 16 * 16, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc(torch.flatten(x, 1))


class DsCnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layers = [torch.nn.Conv2d(1, 16, (5, 3), stride=2, padding=1), torch.nn.ReLU()]
        for _ in range(3):
            layers += [torch.nn.Conv2d(16, 16, 3, padding=1, groups=16), torch.nn.ReLU()]
            layers += [torch.nn.Conv2d(16, 16, 1), torch.nn.ReLU()]
        self.body = torch.nn.Sequential(*layers)
        self.fc = torch.nn.Linear(16, 12)

    def forward(self, x):
        return self.fc(self.body(x).mean(dim=(2, 3)))


class ResCnn(torch.nn.Module):
    """Two convolutions with a residual add, then a pooled classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.a = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.b = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = torch.relu(x + self.b(torch.relu(self.a(x))))
        return self.fc(x.mean(dim=(2, 3)))


class Lstm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(16, 32, batch_first=True)
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x):  # 1 x 12 x 16
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


class AutoEncoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        sizes = (128, 64, 16, 64, 128)
        self.layers = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in itertools.pairwise(sizes)
        )

    def forward(self, x):
        for k, layer in enumerate(self.layers):
            x = layer(x) if k == len(self.layers) - 1 else torch.relu(layer(x))
        return x


class UNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.down1, self.down2 = _conv3(3, 8), _conv3(8, 16)
        self.middle = _conv3(16, 32)
        self.up2 = torch.nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec2, self.dec1 = _conv3(16 + 16, 16), _conv3(16 + 8, 8)
        self.head = torch.nn.Conv2d(8, 2, 1)

    def forward(self, x):
        pool = torch.nn.functional.max_pool2d
        skip1 = torch.relu(self.down1(x))  # 8 x 32 x 32
        skip2 = torch.relu(self.down2(pool(skip1, 2)))  # 16 x 16 x 16
        x = torch.relu(self.middle(pool(skip2, 2)))  # 32 x 8 x 8
        x = torch.relu(self.dec2(torch.cat([self.up2(x), skip2], dim=1)))
        x = torch.nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")
        x = torch.relu(self.dec1(torch.cat([x, skip1], dim=1)))
        return self.head(x)


def _conv3(inputs: int, outputs: int) -> torch.nn.Conv2d:
    return torch.nn.Conv2d(inputs, outputs, 3, padding=1)


class SmallCnn(torch.nn.Module):
    """The float model ``int8`` quantizes."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.conv2 = _conv3(3, 16), _conv3(16, 32)
        self.fc1, self.fc2 = torch.nn.Linear(32 * 4 * 4, 16), torch.nn.Linear(16, 10)

    def forward(self, x):
        pool = torch.nn.functional.max_pool2d
        x = pool(torch.relu(self.conv1(x)), 2)  # 16 x 16 x 16
        x = pool(pool(torch.relu(self.conv2(x)), 2), 2)  # 32 x 4 x 4
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


def quantized(module: torch.nn.Module, example: tuple, g: torch.Generator) -> torch.nn.Module:
    """``module`` quantized to int8 by PT2E: XNNPACK's quantizer (symmetric, per
    tensor), calibrated on 8 random inputs, converted to quantize/dequantize nodes;
    lowered later without a delegate, they run on ExecuTorch's quantized kernels."""
    import executorch.kernels.quantized  # noqa: F401  (the out variants of quantize_*)
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    config = get_symmetric_quantization_config(is_per_channel=False)
    graph = torch.export.export(module, example, strict=True).module()
    prepared = prepare_pt2e(graph, XNNPACKQuantizer().set_global(config))
    for _ in range(8):
        prepared(*(torch.randn(t.shape, generator=g) for t in example))
    return convert_pt2e(prepared)


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1, self.l2, self.l3 = (
            torch.nn.Linear(64, 128),
            torch.nn.Linear(128, 32),
            torch.nn.Linear(32, 64),
        )

    def forward(self, x):
        return self.l3(torch.relu(self.l2(torch.relu(self.l1(x)))))


class Attention(torch.nn.Module):
    def __init__(self, d: int = 32) -> None:
        super().__init__()
        self.qkv, self.out = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.ff1, self.ff2 = torch.nn.Linear(d, 2 * d), torch.nn.Linear(2 * d, d)
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        weights = torch.softmax(q @ k.transpose(-2, -1) / 32**0.5, dim=-1)
        x = self.norm(x + self.out(weights @ v))
        return x + self.ff2(torch.relu(self.ff1(x)))


class Rnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wx, self.wh = torch.nn.Linear(16, 32), torch.nn.Linear(32, 32, bias=False)
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x):  # x: 1 x 8 x 16
        h = torch.zeros(1, 32)
        for t in range(8):
            h = torch.tanh(self.wx(x[:, t]) + self.wh(h))
        return self.head(h)


class Views(torch.nn.Module):
    def forward(self, x):  # 4 x 16
        y = (x * 2.0).view(2, 32)[:, 8:24].reshape(32)
        y.add_(1.0)
        return y.relu().view(4, 8) + x[:, :8]


class Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("acc", torch.zeros(8))

    def forward(self, x):
        self.acc.add_(x)
        return self.acc * 2.0


class Gram(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x @ x.t())


class Mix(torch.nn.Module):
    def forward(self, x, y):
        return torch.tanh(x + y) * y


def all_at_zero(alignment, specs, graph_module, graph_signature, extra_padding):
    """A wrong plan ExecuTorch takes without a word: every tensor at offset 0."""
    top = 0
    for spec in specs:
        spec.realign(alignment)
        spec.mem_id, spec.mem_offset = 1, 0
        top = max(top, spec.allocated_memory)
    return [0, top]


def export(path: Path, methods: dict, algo=None, keep_linear: bool = False) -> None:
    programs = {m: torch.export.export(mod, ins, strict=True) for m, (mod, ins) in methods.items()}
    keep = [torch.ops.aten.linear.default] if keep_linear else []
    edge = to_edge(programs, compile_config=EdgeCompileConfig(preserve_ops=keep))
    planning = MemoryPlanningPass(memory_planning_algo=algo, alignment=ALIGNMENT)
    program = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))
    path.write_bytes(program.buffer)
    print(f"{path}: {len(program.buffer):,} bytes")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    cnn, mlp = Cnn().eval(), Mlp().eval()
    x_cnn = (torch.randn(1, 3, 32, 32, generator=g),)
    x_mlp = (torch.randn(1, 64, generator=g),)
    export(out / "cnn.pte", {"forward": (cnn, x_cnn)})
    export(out / "dscnn.pte", {"forward": (DsCnn().eval(), (torch.randn(1, 1, 49, 10),))})
    export(out / "mlp_split.pte", {"forward": (mlp, x_mlp)})
    export(out / "mlp_linear.pte", {"forward": (mlp, x_mlp)}, keep_linear=True)
    attention = Attention().eval()
    export(out / "attention.pte", {"forward": (attention, (torch.randn(1, 16, 32),))})
    export(out / "rnn.pte", {"forward": (Rnn().eval(), (torch.randn(1, 8, 16),))})
    export(out / "rescnn.pte", {"forward": (ResCnn().eval(), (torch.randn(1, 3, 16, 16),))})
    export(out / "lstm.pte", {"forward": (Lstm().eval(), (torch.randn(1, 12, 16),))})
    export(out / "autoencoder.pte", {"forward": (AutoEncoder().eval(), (torch.randn(1, 128),))})
    export(out / "views.pte", {"forward": (Views(), (torch.randn(4, 16, generator=g),))})
    export(out / "counter.pte", {"forward": (Counter(), (torch.randn(8, generator=g),))})
    two = {"gram": (Gram(), (torch.randn(6, 5),)), "mix": (Mix(), (torch.randn(3, 7),) * 2)}
    export(out / "two_methods.pte", two)
    export(out / "cnn_naive.pte", {"forward": (cnn, x_cnn)}, MemoryPlanningAlgorithmSuite([naive]))
    export(out / "cnn_overlap.pte", {"forward": (cnn, x_cnn)}, all_at_zero)
    mine = memory_planning_algo()
    export(out / "cnn_arenaplan.pte", {"forward": (cnn, x_cnn)}, mine)
    export(out / "views_arenaplan.pte", {"forward": (Views(), (torch.randn(4, 16),))}, mine)
    x_attention = (torch.randn(1, 16, 32),)
    export(out / "attention_arenaplan.pte", {"forward": (attention, x_attention)}, mine)
    export(out / "two_methods_arenaplan.pte", two, mine)
    # last, so that the programs above keep their bytes
    unet = {"forward": (UNet().eval(), (torch.randn(1, 3, 32, 32),))}
    export(out / "unet.pte", unet)
    g = torch.Generator().manual_seed(2)
    x_int8 = (torch.randn(1, 3, 32, 32, generator=g),)
    export(out / "int8.pte", {"forward": (quantized(SmallCnn().eval(), x_int8, g), x_int8)})
    banked(out)
    spread = memory_planning_algo(target="imxrt1170", memory={"tcm": SPREAD_TCM})
    export(out / "unet_spread.pte", unet, spread)


SPREAD_TCM = 65536  # bytes of TCM unet_spread is planned for at export (a third of its pool)


# bytes of the fast bank (tcm, memory id 1) each program is planned for by ExecuTorch's
# BankedGreedy, about 40% of its greedy pool; the slow bank (ocram, id 2) has 2 MiB
BANKED = {"cnn": 32768, "unet": 65536, "rescnn": 16384, "attention": 8192, "lstm": 8192}
BANKED |= {"autoencoder": 16384, "int8": 65536}
SLOW = 2 * 1024 * 1024


def banked(out: Path) -> None:
    """``<name>_banked.pte``: programs of the same graphs as above (weights of their
    own) planned by ExecuTorch's BankedGreedy over two banks, and ``banked.json``
    with the banks' bytes."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    inputs = {
        "cnn": (Cnn().eval(), (torch.randn(1, 3, 32, 32, generator=g),)),
        "rescnn": (ResCnn().eval(), (torch.randn(1, 3, 16, 16),)),
        "attention": (Attention().eval(), (torch.randn(1, 16, 32),)),
        "lstm": (Lstm().eval(), (torch.randn(1, 12, 16),)),
        "autoencoder": (AutoEncoder().eval(), (torch.randn(1, 128),)),
        "unet": (UNet().eval(), (torch.randn(1, 3, 32, 32),)),
    }
    g = torch.Generator().manual_seed(2)
    x_int8 = (torch.randn(1, 3, 32, 32, generator=g),)
    inputs["int8"] = (quantized(SmallCnn().eval(), x_int8, g), x_int8)
    for name, fast in BANKED.items():
        banks = TargetMemoryMap([Bank("tcm", fast, 1), Bank("ocram", SLOW, 2)])
        algo = MemoryPlanningAlgorithmSuite(algo_list=[BankedGreedy(banks)])
        export(out / f"{name}_banked.pte", {"forward": inputs[name]}, algo)
    caps = {name: {"tcm": fast, "ocram": SLOW} for name, fast in BANKED.items()}
    (out / "banked.json").write_text(json.dumps(caps, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/export_pte.py OUT_DIR")
    main(Path(sys.argv[1]))
