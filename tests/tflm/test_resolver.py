"""The operator resolver of the generated headers, held against TFLM's own
``micro_mutable_op_resolver.h``: the tables are its methods (read from the header of
the TFLM source tarball, so a wrong or missing name fails), a resolver adding every
operator in them compiles against TFLM's real headers, and what TFLM cannot know
stops the build, naming it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from testkit import model_path

from arenaplan.cli import main
from arenaplan.ir.model import Model, Operator, Subgraph
from arenaplan.tflm.resolver import (
    BUILTIN_METHODS,
    CUSTOM_METHODS,
    resolver_lines,
    resolver_needs,
)

RESOLVER_H = "tensorflow/lite/micro/micro_mutable_op_resolver.h"
ETHOSU_CC = "tflite-micro/tensorflow/lite/micro/kernels/ethos_u/ethosu.cc"


def _tflm_methods(text: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """From micro_mutable_op_resolver.h: builtin -> method (``AddBuiltin(
    BuiltinOperator_X``), custom name -> method (``AddCustom("name"``), and the
    other public Add methods (their custom name not a literal)."""
    public = text.split("\n private:")[0]
    parts = re.split(r"TfLiteStatus (Add\w+)\(", public)[1:]
    builtins, customs, others = {}, {}, []
    for method, body in zip(parts[::2], parts[1::2], strict=True):
        builtin = re.search(r"AddBuiltin\(\s*(?:tflite::)?BuiltinOperator_(\w+)", body)
        custom = re.search(r'AddCustom\(\s*"([^"]+)"', body)
        if builtin:
            builtins[builtin.group(1)] = method
        elif custom:
            customs[custom.group(1)] = method
        elif method != "AddCustom":
            others.append(method)
    return builtins, customs, others


def _model(*ops: tuple[str, bool]) -> Model:
    """A model of one subgraph with these (opcode, is_custom) operators, no tensors."""
    operators = tuple(Operator(i, name, custom, (), ()) for i, (name, custom) in enumerate(ops))
    return Model((Subgraph(0, "main", (), operators, (), ()),))


def _source(folder: Path, model: Model, body: str, defines: str = "") -> Path:
    """use.cc: the resolver block of ``model`` (as ops.h), then ``body``."""
    (folder / "ops.h").write_text("\n".join(["#pragma once", *resolver_lines(model), ""]))
    use = folder / "use.cc"
    lines = [f"#define {d}" for d in ("ARENAPLAN_DEFINE_OP_RESOLVER", *defines.split())]
    use.write_text("\n".join([*lines, '#include "ops.h"', body, ""]))
    return use


def _compile(flags: list[str], source: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["g++", *flags, "-fsyntax-only", str(source)], capture_output=True, text=True, check=False
    )


def test_tables_are_tflms_methods(tflm_headers) -> None:
    builtins, customs, others = _tflm_methods((tflm_headers.root / RESOLVER_H).read_text())
    assert builtins == BUILTIN_METHODS
    ethos = {k: v for k, v in CUSTOM_METHODS.items() if v == "AddEthosU"}
    assert {k: v for k, v in CUSTOM_METHODS.items() if k not in ethos} == customs
    # AddEthosU adds GetString_ETHOSU(), which names the Ethos-U kernel's operator
    assert others == ["AddEthosU"]
    tflm_headers.extract(ETHOSU_CC)
    ethosu_cc = (tflm_headers.root.parent / ETHOSU_CC).read_text()
    said = re.search(r'GetString_ETHOSU\(\) \{ return "([^"]*)"; \}', ethosu_cc)
    assert said is not None and list(ethos) == [said.group(1)]


def test_every_method_compiles_against_tflm(tflm_headers, tmp_path: Path) -> None:
    """A model with every operator of the tables: RegisterOps calls each method (the
    template is instantiated, so a name TFLM lacks fails) and OpResolver has room."""
    ops = [(name, False) for name in BUILTIN_METHODS] + [(name, True) for name in CUSTOM_METHODS]
    model = _model(*reversed(ops))
    needs = resolver_needs(model)
    assert needs.count == len(ops) and not needs.own_custom and not needs.unknown_builtin
    methods = [m for m, _ in needs.methods]
    assert methods == sorted(methods)
    body = (
        "TfLiteStatus Register() {\n"
        "  static arenaplan::OpResolver resolver;\n"
        f'  static_assert(ARENAPLAN_OP_COUNT == {len(ops)}u, "room for every operator");\n'
        "  return arenaplan::RegisterOps(resolver);\n"
        "}"
    )
    tflm_headers.syntax_check(_source(tmp_path, model, body))


def test_a_wrong_method_name_fails_to_compile(tflm_headers, tmp_path: Path) -> None:
    """The check above would see a wrong name: a method TFLM lacks fails the build."""
    text = "\n".join(resolver_lines(_model(("ADD", False))))
    (tmp_path / "ops.h").write_text(text.replace("AddAdd()", "AddAddition()"))
    use = tmp_path / "use.cc"
    use.write_text(
        '#define ARENAPLAN_DEFINE_OP_RESOLVER\n#include "ops.h"\n'
        "TfLiteStatus Register() { static arenaplan::OpResolver r; "
        "return arenaplan::RegisterOps(r); }\n"
    )
    run = _compile(tflm_headers.flags, use)
    assert run.returncode != 0 and "AddAddition" in run.stderr


def test_custom_operator_tflm_does_not_ship_stops_the_build(tflm_headers, tmp_path: Path) -> None:
    """Counted in ARENAPLAN_OP_COUNT; the build stops naming it until the firmware
    says it adds it itself (ARENAPLAN_OWN_CUSTOM_OPS), then it compiles."""
    model = _model(("ADD", False), ("MyGate", True), ("SignalWindow", True))
    assert resolver_needs(model).own_custom == ("MyGate",)
    body = (
        "extern const TFLMRegistration* MyGateRegistration();\n"
        "TfLiteStatus Register() {\n"
        "  static arenaplan::OpResolver resolver;\n"
        '  static_assert(ARENAPLAN_OP_COUNT == 3u, "MyGate has room");\n'
        "  if (arenaplan::RegisterOps(resolver) != kTfLiteOk) return kTfLiteError;\n"
        '  return resolver.AddCustom("MyGate", MyGateRegistration());\n'
        "}"
    )
    refused = _compile(tflm_headers.flags, _source(tmp_path, model, body))
    assert refused.returncode != 0
    assert "custom operators TFLM does not ship (MyGate)" in refused.stderr
    assert "ARENAPLAN_OWN_CUSTOM_OPS" in refused.stderr
    tflm_headers.syntax_check(_source(tmp_path, model, body, "ARENAPLAN_OWN_CUSTOM_OPS"))


def test_builtin_tflm_has_no_kernel_for_stops_the_build(tflm_headers, tmp_path: Path) -> None:
    model = _model(("FULLY_CONNECTED", False), ("LSTM", False))
    assert resolver_needs(model).unknown_builtin == ("LSTM",)
    run = _compile(tflm_headers.flags, _source(tmp_path, model, ""))
    assert run.returncode != 0
    assert "the builtin operator LSTM, which TFLM has no kernel for" in run.stderr


def test_odd_custom_names_stay_inside_their_strings_and_comments(
    tflm_headers, tmp_path: Path
) -> None:
    """A custom name with a quote, a comment end, a "?" and a backslash: named whole
    in the #error, and the header still compiles once the firmware adds it."""
    odd = 'a"b*/c?\\'
    model = _model((odd, True))
    refused = _compile(tflm_headers.flags, _source(tmp_path, model, ""))
    assert refused.returncode != 0
    assert 'custom operators TFLM does not ship (a\\"b*/c\\077\\\\)' in refused.stderr
    tflm_headers.syntax_check(_source(tmp_path, model, "", "ARENAPLAN_OWN_CUSTOM_OPS"))


def test_keyword_scrambled_resolver_in_the_arena_header(tmp_path: Path) -> None:
    """--header: its four operators, added by method name."""
    header = tmp_path / "arena.h"
    src = model_path("tflite-micro__keyword_scrambled")
    assert main(["plan", str(src), "-q", "--target", "imxrt1170", "--header", str(header)]) == 0
    text = header.read_text()
    assert "#define ARENAPLAN_OP_COUNT 4u" in text
    calls = re.findall(r"resolver\.(Add\w+)\(\) != kTfLiteOk", text)
    assert calls == ["AddFullyConnected", "AddQuantize", "AddSoftmax", "AddSvdf"]


def test_both_headers_carry_one_resolver(tflm_headers, tmp_path: Path) -> None:
    """The arena header and planner.h of one model, both included with
    ARENAPLAN_DEFINE_OP_RESOLVER: one RegisterOps (the signal library's operators)."""
    src = model_path("tflite-micro__audio_preprocessor_int8")
    argv = ["plan", str(src), "-q", "--target", "imxrt1170"]
    assert main([*argv, "--header", str(tmp_path / "arena.h")]) == 0
    assert main([*argv, "--memory", "tcm=2KiB", "--planner-cpp", str(tmp_path / "planner.h")]) == 0
    use = tmp_path / "use.cc"
    use.write_text(
        """#define ARENAPLAN_DEFINE_OP_RESOLVER
#include "planner.h"
#include "arena.h"
TfLiteStatus Register() {
  static arenaplan::OpResolver resolver;
  return arenaplan::RegisterOps(resolver);
}
"""
    )
    tflm_headers.syntax_check(use)
    assert "resolver.AddWindow()" in (tmp_path / "planner.h").read_text()
