"""One method per catalog tool on both clients, with the tool's parameters as arguments;
and one per control call (base/controls.py) that the clients do not define by hand."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from keyword import iskeyword
from typing import Any, Literal  # noqa: F401  (Literal: named in annotations as text)

from browserskill.base import advice, catalog, controls
from browserskill.client.aio import AsyncClient
from browserskill.client.results import Result
from browserskill.client.sync import Client

_P = inspect.Parameter
_OPTION_PARAMS = [
    _P("session", _P.KEYWORD_ONLY, default=None, annotation="str | None"),
    _P("wait", _P.KEYWORD_ONLY, default=False, annotation="bool"),
    _P("timeout", _P.KEYWORD_ONLY, default=None, annotation="float | None"),
    _P("key", _P.KEYWORD_ONLY, default=None, annotation="str | None"),
    _P("detach", _P.KEYWORD_ONLY, default=False, annotation="bool"),
    _P("op_id", _P.KEYWORD_ONLY, default=None, annotation="str | None"),
]
_PY_TYPE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
            "array": "list[str]", "object": "dict[str, Any]"}


def _py(name: str) -> str:
    """A parameter's Python name: batch's `continue` is `continue_` (a keyword)."""
    return name + "_" if iskeyword(name) else name


def _signature(spec: catalog.ToolSpec) -> tuple[inspect.Signature, list[str], list[str]]:
    """The method's signature: positional CLI arguments stay positional, flags are
    keyword-only, then the call options that no tool parameter shadows."""
    positional: list[inspect.Parameter] = [_P("self", _P.POSITIONAL_OR_KEYWORD)]
    keyword: list[inspect.Parameter] = []
    optional_seen = False
    for p in spec.params:
        kind = (f"Literal[{', '.join(repr(c) for c in p.choices)}]" if p.choices
                and p.type == "string" else _PY_TYPE.get(p.type, "Any"))  # a checker's list
        annotation = kind + ("" if p.required else " | None")
        default = _P.empty if p.required else None
        if p.positional and not (p.required and optional_seen):
            positional.append(_P(_py(p.name), _P.POSITIONAL_OR_KEYWORD, default=default,
                                 annotation=annotation))
            optional_seen = optional_seen or not p.required
        else:
            keyword.append(_P(_py(p.name), _P.KEYWORD_ONLY, default=default,
                              annotation=annotation))
    names = [p.name for p in spec.params]
    options = [o for o in _OPTION_PARAMS if o.name not in names]
    sig = inspect.Signature([*positional, *keyword, *options], return_annotation="Result")
    return sig, names, [o.name for o in options]


def _doc(spec: catalog.ToolSpec) -> str:
    """The tool's summary and parameters in Python's words (base/advice.py)."""
    lines = [advice.in_terms(spec.summary, advice.PYTHON), "",
             f"Effect: {spec.effect.value}. CLI: `bsk {spec.usage()}`."]
    for p in spec.params:
        lines.append(f"  {_py(p.name)} ({p.type}{', required' if p.required else ''}): "
                     f"{advice.in_terms(p.help, advice.PYTHON)}")
    lines.append("Options: session, wait, timeout (s), key, detach, op_id (see `call`).")
    return "\n".join(lines)


def _tool_method(spec: catalog.ToolSpec, is_async: bool) -> Callable[..., Any]:
    sig, names, options = _signature(spec)

    def split(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any],
                                                                      dict[str, Any]]:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        params = {n: values[_py(n)] for n in names if values.get(_py(n)) is not None}
        return params, {o: values[o] for o in options}

    if is_async:
        async def amethod(*args: Any, **kwargs: Any) -> Result:
            params, opts = split(args, kwargs)
            return await args[0].call(spec.name, params, **opts)
        method: Callable[..., Any] = amethod
    else:
        def smethod(*args: Any, **kwargs: Any) -> Result:
            params, opts = split(args, kwargs)
            return args[0].call(spec.name, params, **opts)
        method = smethod
    method.__name__ = method.__qualname__ = spec.name
    method.__doc__ = _doc(spec)
    method.__signature__ = sig  # type: ignore[attr-defined]
    return method


# What install_*_methods added to each client, by class: what client/generated.pyi says.
INSTALLED: dict[type, dict[str, inspect.Signature]] = {Client: {}, AsyncClient: {}}


def _install(cls: type, method: Callable[..., Any]) -> None:
    setattr(cls, method.__name__, method)
    INSTALLED[cls][method.__name__] = method.__signature__  # type: ignore[attr-defined]


def install_tool_methods() -> None:
    for spec in catalog.TOOLS:
        if spec.hidden:  # e.g. `session_stop(ID)` above: DELETE /v1/sessions/ID
            continue
        for cls, is_async in ((Client, False), (AsyncClient, True)):
            if spec.name.isidentifier() and not hasattr(cls, spec.name):
                _install(cls, _tool_method(spec, is_async))




def _control_signature(control: controls.Control) -> inspect.Signature:
    """Path parameters positional, query parameters keyword-only (a switch defaults to
    False, any other to None), then the body as a dict if the control takes one."""
    params = [_P("self", _P.POSITIONAL_OR_KEYWORD)]
    for f in control.params:
        if f.where == "path":
            params.append(_P(f.name, _P.POSITIONAL_OR_KEYWORD, annotation="str"))
    for f in control.params:
        if f.where == "query":
            switch = f.schema.get("type") == "boolean"
            annotation = "bool" if switch else _PY_TYPE.get(f.schema.get("type"), "Any") + " | None"
            params.append(_P(f.name, _P.KEYWORD_ONLY, default=False if switch else None,
                             annotation=annotation))
    if control.body is not None:
        params.append(_P("body", _P.KEYWORD_ONLY, default=None,
                         annotation="dict[str, Any] | None"))
    answer = "Result" if control.answers == "operation" else "dict[str, Any]"
    return inspect.Signature(params, return_annotation=answer)


def _control_request(control: controls.Control, sig: inspect.Signature, args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    from urllib.parse import urlencode

    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    values = bound.arguments
    path = controls.path_of(control, **{f.name: values[f.name] for f in control.params
                                        if f.where == "path"})
    query = {f.name: ("true" if values[f.name] is True else values[f.name])
             for f in control.params if f.where == "query"
             and values[f.name] not in (None, False)}
    return path + ("?" + urlencode(query) if query else ""), values.get("body")


def _control_method(control: controls.Control, is_async: bool) -> Callable[..., Any]:
    sig = _control_signature(control)
    as_result = control.answers == "operation"

    if is_async:
        async def amethod(*args: Any, **kwargs: Any) -> Any:
            path, body = _control_request(control, sig, args, kwargs)
            answer = await args[0]._json(control.method, path, body)
            return Result.from_dict(answer) if as_result else answer
        method: Callable[..., Any] = amethod
    else:
        def smethod(*args: Any, **kwargs: Any) -> Any:
            path, body = _control_request(control, sig, args, kwargs)
            answer = args[0]._json(control.method, path, body)
            return Result.from_dict(answer) if as_result else answer
        method = smethod
    method.__name__ = method.__qualname__ = control.client.name
    method.__doc__ = f"{control.summary}\n\nHTTP: `{control.method} {control.path}`."
    method.__signature__ = sig  # type: ignore[attr-defined]
    return method


def install_control_methods() -> None:
    """The generated ones; a hand-written method (`ClientSpec.args` given) stays as it is
    (tests/test_controls.py holds its parameters to the control's)."""
    for control in controls.CONTROLS:
        if control.client is None or control.client.args is not None:
            continue
        for cls, is_async in ((Client, False), (AsyncClient, True)):
            assert not hasattr(cls, control.client.name), control.client.name
            _install(cls, _control_method(control, is_async))


STUB_HEADER = ("# Generated by `python -m browserskill.docgen --write` from the catalog, the\n"
               "# control calls and the error table (client/methods.py `typing_stub`);\n"
               "# do not edit.\n")


def _stub_def(word: str, name: str, sig: inspect.Signature) -> list[str]:
    """One method of the stub, its parameters a line each when they don't fit in one."""
    one = f"    {word} {name}({', '.join(_stub_params(sig))}) -> {sig.return_annotation}: ..."
    if len(one) <= 100:
        return [one]
    return [f"    {word} {name}(", *(f"        {p}," for p in _stub_params(sig)),
            f"    ) -> {sig.return_annotation}: ..."]


def _stub_params(sig: inspect.Signature) -> list[str]:
    out: list[str] = []
    starred = False
    for p in sig.parameters.values():
        if p.kind is _P.KEYWORD_ONLY and not starred:
            out.append("*")
            starred = True
        text = p.name if p.annotation is _P.empty else f"{p.name}: {p.annotation}"
        out.append(text if p.default is _P.empty else f"{text} = ...")
    return out


def typing_stub() -> str:
    """client/generated.pyi: the methods made at import (one a tool, one a control call)
    and the exception class of each error code, as a type checker needs them spelled —
    both clients inherit these (browserskill.client: `Client`, `AsyncClient`)."""
    from browserskill.client.results import ERRORS

    lines = [STUB_HEADER, "from typing import Any, Literal", "",
             "from browserskill.client.results import BrowserSkillError, Result", "",
             "__all__ = [", *sorted(f'    "{c.__name__}",' for c in ERRORS.values()), "]", ""]
    for cls, word in ((Client, "def"), (AsyncClient, "async def")):
        lines += ["", f"class {cls.__name__}Methods:"]
        for name, sig in sorted(INSTALLED[cls].items()):
            lines += _stub_def(word, name, sig)
        lines.append("")
    for error in ERRORS.values():
        lines += ["", f"class {error.__name__}(BrowserSkillError): ...", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
