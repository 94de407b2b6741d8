#!/usr/bin/env python3
"""Write the sizes of the structs TFLM puts in its tail (analysis/data/tail_structs.json).

    python scripts/gen_tail_structs.py [--jobs 2] [--out FILE]

For every struct of ``OPTIONS`` (what a ``Parse*`` function of
``flatbuffer_conversions.cc`` allocates) and ``STATE`` (what a kernel allocates in Init
or Prepare), a probe: ``sizeof`` and ``alignof`` appended as an array to a copy of the
translation unit that defines the struct (so that types in anonymous namespaces
resolve; the structs headers define, and the options, share one unit that includes
those headers), compiled to assembly, the values read from it. Against the TFLM tree
of the build root (``<root>/tflite-micro``, which ``scripts/build_tflm.py`` extracts
with the CMSIS and CMSIS-NN downloads), with ``-DTF_LITE_STATIC_MEMORY``, per profile:

- ``host``: g++ (x86-64), the source as ``verify.native`` builds it;
- ``pypi``: g++ with ``-DUSE_TFLM_COMPRESSION`` (the wheel is a compression build),
  and the options read from the wheel itself: the size and alignment each ``Parse*``
  of its ``_runtime.so`` passes to the allocator (objdump; the wheel is a newer TFLM
  than the bundle, its ``TfLiteFullyConnectedParams`` 32/8 where the source's is 16/4).
  Its kernel state is not read from the wheel: some Init functions there are
  anonymous (two are named ``Init``) and others allocate in Prepare, so no symbol
  names the struct; the compression probes give what the wheel allocates;
- ``arm32``: arm-none-eabi-g++ ``-mcpu=cortex-m4 -mthumb`` (its default one-byte enums);
- ``int32``: the same with ``-fno-short-enums`` (int-sized enums: RISC-V, Xtensa, i386).

The ``cmsis_nn:`` rows and the other structs of ``kernels/cmsis_nn`` are compiled with
``-DCMSIS_NN`` and CMSIS-NN's headers. The header records the TFLM bundle, the
compilers, the wheel's version and this command. Two to four minutes with two jobs
(180 compiles, the common headers precompiled per profile).
Exit status 0, 1 when a probe fails, 2 when a tool or the tree is absent.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from arenaplan.tflm.verify.native import BUILD_COMMAND, build_root, bundle_key  # noqa: E402
from arenaplan.tflm.verify.native import compiler_identity as identity  # noqa: E402

OUT = REPO / "src" / "arenaplan" / "tflm" / "data" / "tail_structs.json"
PROFILES = ("pypi", "arm32", "int32", "host")
DOWNLOADS = "tensorflow/lite/micro/tools/make/downloads"
COMMON = ("-std=c++17", "-O0", "-w", "-fno-rtti", "-fno-exceptions", "-Winvalid-pch")
DEFINES = ("-DTF_LITE_STATIC_MEMORY",)
ARM = ("-mcpu=cortex-m4", "-mthumb")
# profile -> (compiler, its flags)
COMPILERS = {
    "host": ("g++", ()),
    "pypi": ("g++", ("-DUSE_TFLM_COMPRESSION",)),
    "arm32": ("arm-none-eabi-g++", ARM),
    "int32": ("arm-none-eabi-g++", (*ARM, "-fno-short-enums")),
}
CONVERSIONS = "tensorflow/lite/core/api/flatbuffer_conversions.cc"  # the Parse* functions
OPTIONS_HEADER = "tensorflow/lite/core/c/builtin_op_data.h"  # the options structs
WHEEL_LIBRARY = "python/tflite_micro/_runtime.so"  # inside the tflite_micro package
PCH = "arenaplan_probe_headers.h"  # precompiled, included first by every probe
PCH_HEADERS = (
    "tensorflow/lite/schema/schema_generated.h",
    "tensorflow/lite/micro/kernels/kernel_util.h",
    "tensorflow/lite/kernels/internal/common.h",
)

# Builtin options: what each Parse* of flatbuffer_conversions.cc allocates, at
# alignof(struct), from the MicroBuiltinDataAllocator (parsers not listed allocate
# nothing).
OPTIONS = (
    "TfLiteAddParams",
    "TfLiteSubParams",
    "TfLiteMulParams",
    "TfLiteDivParams",
    "TfLiteCastParams",
    "TfLiteShapeParams",
    "TfLiteArgMaxParams",
    "TfLiteArgMinParams",
    "TfLiteL2NormParams",
    "TfLiteMirrorPaddingParams",
    "TfLiteFullyConnectedParams",
    "TfLiteSVDFParams",
    "TfLiteTransposeConvParams",
    "TfLiteVarHandleParams",
    "TfLiteConvParams",
    "TfLiteDepthwiseConvParams",
    "TfLitePoolParams",
    "TfLiteSoftmaxParams",
    "TfLiteConcatenationParams",
    "TfLiteReshapeParams",
    "TfLiteSqueezeParams",
    "TfLiteStridedSliceParams",
    "TfLiteReducerParams",
    "TfLitePackParams",
    "TfLiteUnpackParams",
    "TfLiteSplitParams",
    "TfLiteSplitVParams",
    "TfLiteGatherParams",
    "TfLiteLeakyReluParams",
    "TfLiteDepthToSpaceParams",
    "TfLiteSpaceToDepthParams",
    "TfLiteResizeBilinearParams",
    "TfLiteResizeNearestNeighborParams",
    "TfLiteBatchMatMulParams",
    "TfLiteCumsumParams",
    "TfLiteUnidirectionalSequenceLSTMParams",
    "TfLiteCallOnceParams",
    "TfLiteIfParams",
    "TfLiteWhileParams",
)

# Kernel state (allocated with AllocatePersistentBuffer, 16-aligned): the table's name
# ("file:Type" where the type name is not unique in TFLM), the file that defines the
# type (k/ kernels, m/ tensorflow/lite/micro, s/ signal kernels, i/ kernels/internal,
# c/ tensorflow/lite/core/c) and, where it is not the name's last part, the type: in
# namespace tflite unless it starts with "::". "if MACRO": the type exists only under
# that macro (else 0 bytes).
STATE = """
OpDataConv                       k/conv.h
OpDataFullyConnected             k/fully_connected.h
transpose_conv:OpData            k/transpose_conv.cc
concatenation:OpData             k/concatenation.cc
SoftmaxParams                    i/types.h
OpDataAdd                        k/add.h
OpDataSub                        k/sub.h
OpDataMul                        k/mul.h
OpDataDiv                        k/div.cc
OpDataSvdf                       k/svdf.h
OpDataLSTM                       k/lstm_shared.h
StridedSliceParams               i/types.h
OpDataReduce                     k/reduce.h
OpDataPooling                    k/pooling.h
OpDataLogistic                   k/logistic.h
tanh:OpData                      k/tanh.cc
OpDataQuantizeReference          k/quantize.h
DequantizeOpData                 k/dequantize.h
pad:OpData                       k/pad.h
ReluOpData                       k/activations.h
Relu6OpData                      k/activations.h
LeakyReluOpData                  k/leaky_relu.h
HardSwishParams                  i/types.h
PreluParams                      i/types.h
elu:OpData                       k/elu.cc
OpDataAbsRsqrt                   k/elementwise.cc
comparisons:OpData               k/comparisons.cc
select:OpData                    k/select.cc
squared_difference:OpData        k/squared_difference.cc
L2NormalizationParams            i/types.h
OpDataMirrorPad                  k/mirror_pad.cc
SpaceToBatchParams               i/types.h
OpDataBatchMatmul                k/batch_matmul.h
QuantizationOpDataBatchMatmul    k/batch_matmul.h
TfLiteEvalTensor                 c/common.h                           ::TfLiteEvalTensor
add_n:OpData                     k/add_n.cc
cumsum:OpData                    k/cumsum.cc
LogSoftmaxOpData                 k/log_softmax.cc
embedding_lookup:OpData          k/embedding_lookup.cc
call_once:OpData                 k/call_once.cc
if:OpData                        k/if.cc
while:OpData                     k/while.cc
var_handle:OpData                k/var_handle.cc
assign_variable:OpData           k/assign_variable.cc                 if USE_TFLM_COMPRESSION
OpDataCircularBuffer             k/circular_buffer.h
detection_postprocess:OpData     k/detection_postprocess.cc
TFLMSignalWindowParams           s/window.cc
TFLMSignalEnergyParams           s/energy.cc
TFLMSignalLogParams              s/filter_bank_log.cc
TfLitePcanParams                 s/pcan.cc                            tflm_signal::TfLitePcanParams
TFLMSignalFilterBankParams       s/filter_bank.cc
TFLMSignalSpectralSubtractionParams s/filter_bank_spectral_subtraction.cc
TfLiteAudioFrontendRfftParams s/rfft.cc TfLiteAudioFrontendRfftParams<int16_t>
TfLiteAudioFrontendIrfftParams   s/irfft.cc
TFLMSignalFrontendDelayParams    s/delay.cc
TFLMSignalFramerParams           s/framer.cc
TFLMSignalOverlapAddParams s/overlap_add.cc TFLMSignalOverlapAddParams<int16_t>
TFLMSignalStackerParams          s/stacker.cc
CircularBuffer                   signal/src/circular_buffer.h         tflm_signal::CircularBuffer
IrfftFloatState                  signal/src/irfft_float.cc            tflm_signal::IrfftFloatState
MicroResourceVariables           m/micro_resource_variable.cc
MicroResourceVariable m/micro_resource_variable.cc MicroResourceVariables::MicroResourceVariable
cmsis_nn:conv:OpData             k/cmsis_nn/conv.cc
cmsis_nn:depthwise_conv:OpData   k/cmsis_nn/depthwise_conv.cc
cmsis_nn:fully_connected:OpData  k/cmsis_nn/fully_connected.cc
cmsis_nn:pooling:OpData          k/cmsis_nn/pooling.cc
CMSISNNSoftmaxParams             k/cmsis_nn/softmax.cc
CmsisNnOpDataSvdf                k/cmsis_nn/svdf.cc
cmsis_nn:lstm:OpData             k/cmsis_nn/unidirectional_sequence_lstm.cc
cmsis_nn:transpose_conv:OpData   k/cmsis_nn/transpose_conv.cc
cmsis_nn:add:OpData              k/cmsis_nn/add.cc
cmsis_nn:batch_matmul:OpData     k/cmsis_nn/batch_matmul.cc
"""
_FOLDERS = {
    "k/": "tensorflow/lite/micro/kernels/",
    "m/": "tensorflow/lite/micro/",
    "s/": "signal/micro/kernels/",
    "i/": "tensorflow/lite/kernels/internal/",
    "c/": "tensorflow/lite/core/c/",
}
# The struct MicroResourceVariables keeps private is probed by making the copy's
# members public (before anything is included, so without the precompiled headers).
_PUBLIC = "#define private public\n"


class ProbeError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Probe:
    """One struct: its name in the table, its type, the macro it exists under."""

    name: str
    type: str
    only_if: str = ""  # "" = always


@dataclass(frozen=True, slots=True)
class Unit:
    """One compile: a copy of a translation unit (types in anonymous namespaces
    resolve in it), or one that includes the headers defining the other types."""

    source: str  # relative to the TFLM tree; "" for the headers' unit
    text: str  # the source, before the probes are appended
    probes: tuple[Probe, ...]
    precompiled: bool  # starts with the precompiled headers


def state_rows() -> list[tuple[str, Probe]]:
    """(the file defining the type, relative to the TFLM tree; its probe) per line of
    ``STATE``, in order."""
    rows = []
    for line in STATE.strip().splitlines():
        name, source, *rest = line.split()
        only_if = ""
        if rest[-2:-1] == ["if"]:
            only_if, rest = rest[-1], rest[:-2]
        type_ = rest[0] if rest else name.split(":")[-1]
        type_ = type_[2:] if type_.startswith("::") else f"tflite::{type_}"
        source = _FOLDERS.get(source[:2], source[:2]) + source[2:]
        rows.append((source, Probe(name, type_, only_if)))
    return rows


def units(tree: Path) -> list[Unit]:
    """The options and every header-defined state struct in one unit, then one unit
    per source file that defines the other structs."""
    by_source: dict[str, list[Probe]] = {}
    for source, found in state_rows():
        by_source.setdefault(source, []).append(found)
    headers = [h for h in by_source if h.endswith(".h")]
    text = "".join(f'#include "{h}"\n' for h in [OPTIONS_HEADER, *headers])
    probes = [Probe(name, name) for name in OPTIONS] + [p for h in headers for p in by_source[h]]
    out = [Unit("", text, tuple(probes), precompiled=True)]
    for source, found in by_source.items():
        if source in headers:
            continue
        public = any("::MicroResourceVariables::" in p.type for p in found)
        text = (_PUBLIC if public else "") + (tree / source).read_text()
        out.append(Unit(source, text, tuple(found), precompiled=not public))
    return out


def _appendix(probes: tuple[Probe, ...]) -> str:
    """sizeof and alignof of every probe, as one array in the assembly."""
    lines = ['extern "C" const unsigned arenaplan_probe[] = {']
    for p in probes:
        if p.only_if:
            lines += [f"#ifdef {p.only_if}", f"  sizeof({p.type}), alignof({p.type}),"]
            lines += ["#else", "  0, 0,", "#endif"]
        else:
            lines.append(f"  sizeof({p.type}), alignof({p.type}),")
    return "\n".join([*lines, "};", ""])


def _command(tree: Path, profile: str, source: str = "") -> list[str]:
    """The compiler and its flags for ``profile`` (CMSIS-NN's for its kernels)."""
    compiler, extra = COMPILERS[profile]
    dl = tree / DOWNLOADS
    includes = [tree, dl, dl / "flatbuffers/include", dl / "gemmlowp", dl / "ruy", dl / "kissfft"]
    flags = [*COMMON, *extra, *DEFINES]
    if "/cmsis_nn/" in source:
        flags.append("-DCMSIS_NN")
        includes += [dl / "cmsis_nn", dl / "cmsis_nn/Include", dl / "cmsis/CMSIS/Core/Include"]
    if source:  # the copy's quoted includes, relative to the original
        includes.append((tree / source).parent)
    return [compiler, *flags, *(f"-I{p}" for p in includes)]


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-8:])
        raise ProbeError(f"{what} failed:\n{tail}")


def read_array(assembly: str, n: int) -> list[int]:
    """The ``n`` values of ``arenaplan_probe`` in ``assembly`` (.long on x86-64, .word
    on ARM, .zero or .space for a run of zero bytes)."""
    lines = assembly.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("arenaplan_probe:"))
    values: list[int] = []
    for line in lines[start + 1 :]:
        m = re.match(r"\s*\.(long|word|4byte|zero|space)\s+(\d+)\s*$", line)
        if m is None:
            break
        count = int(m.group(2))
        values += [0] * (count // 4) if m.group(1) in ("zero", "space") else [count]
    if len(values) != n:
        raise ProbeError(f"read {len(values)} values of arenaplan_probe, expected {n}")
    return values


def precompile(tree: Path, profile: str, folder: Path) -> None:
    """The headers every kernel includes (flatbuffers' schema most of all), precompiled
    for ``profile`` in ``folder``: each probe then parses only its own source."""
    folder.mkdir()
    header = folder / PCH
    header.write_text("".join(f'#include "{h}"\n' for h in PCH_HEADERS))
    cmd = [*_command(tree, profile), "-x", "c++-header", str(header), "-o", f"{header}.gch"]
    _run(cmd, f"{profile} headers")


def probe(tree: Path, unit: Unit, profile: str, folder: Path) -> list[int]:
    """(size, align, size, align, ...) of the unit's probes for ``profile``, with the
    headers ``precompile`` left in ``folder``."""
    copy = folder / f"{unit.source.replace('/', '_') or 'headers.cc'}"
    asm = copy.with_suffix(".s")
    first = f'#include "{PCH}"\n' if unit.precompiled else ""
    copy.write_text(f"{first}{unit.text}\n{_appendix(unit.probes)}")
    cmd = [*_command(tree, profile, unit.source), f"-I{folder}", "-S", str(copy), "-o", str(asm)]
    what = f"{profile} probe of {unit.source or 'the headers'}"
    _run(cmd, what)
    try:
        return read_array(asm.read_text(), 2 * len(unit.probes))
    except ProbeError as exc:
        raise ProbeError(f"{what}: {exc}") from exc


def compile_all(tree: Path, jobs: int) -> dict[str, dict[str, tuple[int, int]]]:
    """Struct name -> profile -> (size, align); stops at the first probe that fails."""
    todo = units(tree)
    out: dict[str, dict[str, tuple[int, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="arenaplan-structs-") as tmp:
        folders = {profile: Path(tmp) / profile for profile in PROFILES}
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for done in [pool.submit(precompile, tree, p, folders[p]) for p in PROFILES]:
                done.result()
            futures = {
                pool.submit(probe, tree, unit, p, folders[p]): (unit, p)
                for unit in todo
                for p in PROFILES
            }
            for future in as_completed(futures):
                if future.exception() is not None:
                    pool.shutdown(cancel_futures=True)
                    raise future.exception()
                unit, profile = futures[future]
                values = future.result()
                for k, p in enumerate(unit.probes):
                    out.setdefault(p.name, {})[profile] = (values[2 * k], values[2 * k + 1])
    return out


# ---------------------------------------------------------------- the wheel's options


def wheel_library() -> Path:
    spec = importlib.util.find_spec("tflite_micro")
    if spec is None or spec.origin is None:
        raise ProbeError("the tflite-micro wheel is not installed: pip install tflite-micro")
    return Path(spec.origin).parent / WHEEL_LIBRARY


def parsers(conversions: str) -> dict[str, str]:
    """Parse function -> the options struct it allocates (the first Allocate<T> in its
    body), from flatbuffer_conversions.cc."""
    out = {}
    for m in re.finditer(r"^TfLiteStatus (Parse\w+)\(.*?^}", conversions, re.S | re.M):
        first = re.search(r"Allocate<(\w+)>", m.group(0))
        if first is not None:
            out[m.group(1)] = first.group(1)
    return out


def _functions(library: Path) -> dict[str, list[str]]:
    """Parse function name -> its instructions, from objdump of the wheel's library."""
    text = subprocess.run(
        ["objdump", "-d", "-C", "--no-show-raw-insn", str(library)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        head = re.match(r"[0-9a-f]+ <tflite::(?:micro::)?(Parse\w+)\(", line)
        if head is not None:
            current = out.setdefault(head.group(1), [])
        elif re.match(r"[0-9a-f]+ <", line):
            current = None
        elif current is not None:
            current.append(line)
    return out


def allocation(instructions: list[str]) -> tuple[int, int]:
    """(size, align) a parser passes to the allocator: the immediates last moved into
    the second and third argument registers (esi, edx) before its first indirect call
    (BuiltinDataAllocator::Allocate, a virtual call)."""
    regs: dict[str, int] = {}
    for line in instructions:
        m = re.search(r"mov\s+\$0x([0-9a-f]+),%[er](si|dx)\b", line)
        if m is not None:
            regs[m.group(2)] = int(m.group(1), 16)
        if re.search(r"call\s+\*", line):
            break
    if set(regs) != {"si", "dx"}:
        raise ProbeError("no allocation before the first indirect call")
    return regs["si"], regs["dx"]


def wheel_options(tree: Path) -> dict[str, tuple[int, int]]:
    """Options struct -> (size, align) as the wheel's parsers allocate them."""
    by_struct: dict[str, set[tuple[int, int]]] = {}
    functions = _functions(wheel_library())
    for parser, struct in parsers((tree / CONVERSIONS).read_text()).items():
        if struct in OPTIONS and parser in functions:
            by_struct.setdefault(struct, set()).add(allocation(functions[parser]))
    out = {}
    for struct in OPTIONS:
        found = by_struct.get(struct, set())
        if len(found) != 1:
            raise ProbeError(f"the wheel's parsers allocate {struct} as {sorted(found)}")
        out[struct] = found.pop()
    return out


# ---------------------------------------------------------------- the file


def header() -> dict:
    return {
        "about": (
            "Sizes of the structs TFLM puts in its tail, per build profile: options "
            "[bytes, alignment] (what each Parse* allocates), state bytes (what kernels "
            "allocate, 16-aligned; 0 = not allocated in that build). pypi: the 64-bit "
            "wheel (a compression build; its options from its own parsers); host: 64-bit, "
            "the source as verify.native builds it; arm32: arm-none-eabi-g++ Cortex-M4, "
            "one-byte enums; int32: the same with -fno-short-enums."
        ),
        "generated_by": "python scripts/gen_tail_structs.py",
        "tflm_bundle": bundle_key(),
        "compilers": {"host": identity("g++"), "arm32": identity("arm-none-eabi-g++")},
        "wheel": f"tflite-micro {importlib.metadata.version('tflite-micro')}",
        "profiles": list(PROFILES),
    }


def _rows(table: dict) -> str:
    """One line per struct, the profiles in PROFILES order."""
    lines = [f"  {json.dumps(name)}: {json.dumps(row)}" for name, row in table.items()]
    return "{\n" + ",\n".join(lines) + "\n }"


def document(sizes: dict[str, dict[str, tuple[int, int]]]) -> str:
    """The file: the header, then one line per struct (options: [bytes, alignment] per
    profile; state: bytes per profile)."""
    head = json.dumps(header(), indent=1)[:-2]  # without the closing brace
    options = {n: {p: list(sizes[n][p]) for p in PROFILES} for n in OPTIONS}
    state = {s.name: {p: sizes[s.name][p][0] for p in PROFILES} for _, s in state_rows()}
    return f'{head},\n "options": {_rows(options)},\n "state": {_rows(state)}\n}}\n'


def missing(tree: Path) -> str | None:
    """Why the probes cannot run here (naming what to install or build), or None."""
    for tool, package in (("g++", "g++"), ("arm-none-eabi-g++", "gcc-arm-none-eabi")):
        if shutil.which(tool) is None:
            return f"{tool} is absent: apt-get install {package}"
    if shutil.which("objdump") is None:
        return "objdump is absent: apt-get install binutils"
    if importlib.util.find_spec("tflite_micro") is None:
        return "the tflite-micro wheel is not installed: pip install tflite-micro"
    if not (tree / DOWNLOADS / "cmsis_nn").is_dir():
        return f"no TFLM tree with CMSIS-NN at {tree}: {BUILD_COMMAND} --variants host-cmsis_nn"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="compilers run at once")
    ap.add_argument("--out", type=Path, default=OUT, help=f"default: {OUT.relative_to(REPO)}")
    args = ap.parse_args(argv)
    tree = build_root() / "tflite-micro"
    why = missing(tree)
    if why is not None:
        print(f"gen_tail_structs: {why}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        sizes = compile_all(tree, args.jobs)
        for name, found in wheel_options(tree).items():
            sizes[name]["pypi"] = found
    except ProbeError as exc:
        print(f"gen_tail_structs: {exc}", file=sys.stderr)
        return 1
    args.out.write_text(document(sizes))
    seconds = time.perf_counter() - start
    print(f"wrote {args.out}: {len(sizes)} structs in {seconds:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
