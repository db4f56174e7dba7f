"""docs/errors.md lists every error reason the service can answer with, and only those.

A client developer builds a table of messages from docs/errors.md, so a reason the code sends that
the page lacks is a refusal the client cannot word, and a row the code no longer sends is dead
weight. This test reads both sides and compares them, and checks the status each row names.

How the reasons are collected from the code (``ast`` over every module of the installed packages'
source folders, nothing imported or run):

- **Reason carriers** are the classes whose ``__init__`` takes a parameter named ``reason``
  (``CommandError``, ``AppError``, ``AuthError``, the lobby's ``LobbyError``), and their
  subclasses. A subclass whose own ``__init__`` takes no ``reason`` (``RateLimited``,
  ``Unavailable``, ``ShuttingDown``) sets it itself, through ``super().__init__``, which counts
  as a call of its base.
- **Forwarders** are functions that pass one of their own parameters on as a carrier's reason
  (``invalid``), or as the value of a ``"reason"`` key of a JSON body (the web pages' ``_error``);
  found until no more are, so that a forwarder of a forwarder counts too.
- A **reason site** is a call of a carrier or a forwarder (or of ``ErrorInfo``, ``PlayRefused``,
  ``Rejection`` with ``reason=``). Its reason argument is resolved to strings: a literal; a name
  bound in the enclosing function (``reason, message = _WAITING_FOR[phase]``) or at module level
  (``STORE_UNAVAILABLE``, imported or not); an element of a module-level dict of tuples
  (``IllegalCommand(*_WAITING[phase], rule)``). A parameter of the enclosing function is a
  forwarder's, resolved at its callers; ``something.reason`` passes on a reason made elsewhere.
  Anything else fails the test, naming the site: a new way of making a reason must be taught
  here rather than be missed.
- **Reason constants**: module-level ``NAME = "NAME"`` strings in a module that defines a carrier
  or a forwarder (``app/errors.py``, ``app/tokens.py``) count even if no site above uses them.

Each site also says its status: the engine's refusals as ``contract/rejections.py`` records them
(illegal: ``FAILED_PRECONDITION``; malformed: ``INVALID_ARGUMENT``), the application's errors by
``service/status.py``'s table, a token's fault as ``UNAUTHENTICATED`` (``Croupier.authenticate``),
an invalid rule set as ``INVALID_ARGUMENT`` (``Croupier.create_game``), ``ErrorInfo`` as
``INTERNAL``, and the web pages' errors by the HTTP status they are given.

In docs/errors.md, a reason table is a Markdown table whose first header cell is ``reason``; each
row starts with one reason in backticks, and its ``status`` cell must name every status the code
gives that reason (over all its rows).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from croupier.app.errors import BadCredentials, BadRequest
from croupier.contract.rejections import ILLEGAL, MALFORMED
from croupier.service.status import CODES, DOMAIN

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "errors.md"
#: The source folders of the installed packages that answer calls (pyproject.toml's package-dir;
#: gen/ is generated code and holds no reason).
PACKAGES = ("engine", "contract", "log", "replays", "app", "service")
REASON = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{3,}")
#: Messages of google.rpc or of the contract that carry a reason given as ``reason=``.
REASON_MESSAGES = {"ErrorInfo": "INTERNAL", "PlayRefused": "", "Rejection": ""}

#: The status of each carrier, by class name: the application's errors by the one table
#: (service/status.py), the engine's refusals as the contract records them, the rest as the core
#: turns them into application errors.
STATUS_OF_CLASS = {kind.__name__: code.name for kind, code in CODES.items()} | {
    "IllegalCommand": ILLEGAL,
    "MalformedCommand": MALFORMED,
    # Croupier.create_game: invalid(error.reason, ...), a BadRequest.
    "InvalidRules": CODES[BadRequest].name,
    # Croupier.authenticate: BadCredentials(error.reason, ...).
    "AuthError": CODES[BadCredentials].name,
}


@dataclass(frozen=True)
class Module:
    path: Path
    tree: ast.Module

    @property
    def where(self) -> str:
        return str(self.path.relative_to(ROOT))


@dataclass
class Callee:
    """A carrier or a forwarder: where its reason goes, and the status it answers with."""

    name: str
    params: list[str]
    #: The position of the reason parameter (``None``: the callee sets the reason itself).
    reason: int | None
    #: The class whose status it answers with (a forwarder: its carrier's), or "" for an HTTP
    #: status given at each call (``status`` among the parameters).
    status_class: str


@dataclass
class Collected:
    #: reason → the statuses the code gives it (gRPC code names, or HTTP numbers as text).
    reasons: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    #: reason → where it is made.
    sites: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    unresolved: list[str] = field(default_factory=list)


def _modules() -> list[Module]:
    return [
        Module(path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "node_modules" not in path.parts
    ]


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The parameters a caller passes (a method's ``self`` or ``cls`` left out)."""
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def _init(cls: ast.ClassDef) -> ast.FunctionDef | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            return node
    return None


def _base_names(cls: ast.ClassDef) -> list[str]:
    names = []
    for base in cls.bases:
        if isinstance(base, ast.Name):
            names.append(base.id)
        elif isinstance(base, ast.Attribute):
            names.append(base.attr)
    return names


def _carriers(modules: list[Module]) -> dict[str, Callee]:
    """Every class that takes a reason, and every subclass of one (by name: the carriers'
    names are unique across the packages, which the test checks)."""
    classes: dict[str, list[ast.ClassDef]] = defaultdict(list)
    for module in modules:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                classes[node.name].append(node)
    carriers: dict[str, Callee] = {}
    changed = True
    while changed:
        changed = False
        for name, defs in classes.items():
            if name in carriers:
                continue
            for cls in defs:
                init = _init(cls)
                params = _params(init) if init else []
                parents = [carriers[b] for b in _base_names(cls) if b in carriers]
                if init is not None and "reason" in params:
                    assert len(defs) == 1, f"two classes named {name} take a reason"
                    own = name if name in STATUS_OF_CLASS or not parents else None
                    status = own or parents[0].status_class
                    if "status" in params:  # an HTTP status given at each call
                        status = ""
                    carriers[name] = Callee(name, params, params.index("reason"), status)
                elif parents:
                    parent = parents[0]
                    carriers[name] = Callee(
                        name,
                        params if init else parent.params,
                        None if init else parent.reason,
                        name if name in STATUS_OF_CLASS else parent.status_class,
                    )
                else:
                    continue
                changed = True
                break
    return carriers


def _call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _reason_arg(call: ast.Call, callee: Callee) -> ast.expr | tuple[ast.Starred, int] | None:
    """The expression a call gives as the reason, or a starred argument and the index into it."""
    if callee.reason is None:
        return None
    for keyword in call.keywords:
        if keyword.arg == "reason":
            return keyword.value
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return arg, callee.reason - index
        if index == callee.reason:
            return arg
    return None


def _http_status(call: ast.Call, callee: Callee) -> str:
    index = callee.params.index("status")
    value: ast.expr | None = next((k.value for k in call.keywords if k.arg == "status"), None)
    if value is None and index < len(call.args):
        value = call.args[index]
    assert isinstance(value, ast.Constant), ast.unparse(call)
    return str(value.value)


class _Scopes(ast.NodeVisitor):
    """Every call with the function it is in (``None``: module level) and the class."""

    def __init__(self) -> None:
        self.calls: list[tuple[ast.Call, ast.FunctionDef | ast.AsyncFunctionDef | None, str]] = []
        self.dicts: list[tuple[ast.Dict, ast.FunctionDef | ast.AsyncFunctionDef | None]] = []
        self._function: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self._class: list[str] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._class.append(node.name)
        self.generic_visit(node)
        self._class.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function.append(node)
        self.generic_visit(node)
        self._function.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        here = self._function[-1] if self._function else None
        self.calls.append((node, here, self._class[-1] if self._class else ""))
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        self.dicts.append((node, self._function[-1] if self._function else None))
        self.generic_visit(node)


class Reasons:
    """The reasons of the packages' source, with the statuses the code gives them."""

    def __init__(self, modules: list[Module]) -> None:
        self.modules = modules
        self.carriers = _carriers(modules)
        #: The base classes' names of every carrier (carriers' names are unique).
        self.bases = {
            node.name: _base_names(node)
            for module in modules
            for node in ast.walk(module.tree)
            if isinstance(node, ast.ClassDef) and node.name in self.carriers
        }
        self.scopes = {}
        for module in modules:
            scopes = _Scopes()
            scopes.visit(module.tree)
            self.scopes[module.where] = scopes
        self.constants = self._module_constants()
        self.tables = self._module_tables()
        self.callees: dict[str, Callee] = dict(self.carriers)
        self._find_forwarders()

    # -- module-level names ----------------------------------------------------------------------

    def _assignments(self) -> Iterator[tuple[Module, str, ast.expr]]:
        for module in self.modules:
            for node in module.tree.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, value = node.targets[0], node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    target, value = node.target, node.value
                else:
                    continue
                if isinstance(target, ast.Name):
                    yield module, target.id, value

    def _module_constants(self) -> dict[str, set[str]]:
        """Module-level string constants by name (a name bound to two values holds both: a
        reason resolved through it would then be ambiguous, and the test says so)."""
        found: dict[str, set[str]] = defaultdict(set)
        for _, name, value in self._assignments():
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found[name].add(value.value)
        return found

    def _module_tables(self) -> dict[tuple[str, str], list[tuple[ast.expr, ...]]]:
        """Module-level dicts whose values are tuples, by (module, name)."""
        found = {}
        for module, name, value in self._assignments():
            if isinstance(value, ast.Dict) and all(isinstance(v, ast.Tuple) for v in value.values):
                found[module.where, name] = [
                    tuple(v.elts) for v in value.values if isinstance(v, ast.Tuple)
                ]
        return found

    # -- forwarders ------------------------------------------------------------------------------

    def _find_forwarders(self) -> None:
        changed = True
        while changed:
            changed = False
            for scopes in self.scopes.values():
                for call, function, _ in scopes.calls:
                    callee = self.callees.get(_call_name(call) or "")
                    if callee is None or function is None or function.name in self.callees:
                        continue
                    arg = _reason_arg(call, callee)
                    params = _params(function)
                    if isinstance(arg, ast.Name) and arg.id in params:
                        self.callees[function.name] = Callee(
                            function.name,
                            params,
                            params.index(arg.id),
                            callee.status_class,
                        )
                        changed = True
                for body, function in scopes.dicts:
                    if function is None or function.name in self.callees:
                        continue
                    for key, value in zip(body.keys, body.values, strict=True):
                        params = _params(function)
                        if (
                            isinstance(key, ast.Constant)
                            and key.value == "reason"
                            and isinstance(value, ast.Name)
                            and value.id in params
                        ):
                            assert "status" in params, f"{function.name}: no HTTP status"
                            self.callees[function.name] = Callee(
                                function.name, params, params.index(value.id), ""
                            )
                            changed = True

    # -- resolution ------------------------------------------------------------------------------

    def _resolve(
        self,
        expr: ast.expr,
        function: ast.FunctionDef | ast.AsyncFunctionDef | None,
        where: str,
    ) -> set[str] | None:
        """The strings ``expr`` may be; ``set()`` for a reason passed on (a forwarder's
        parameter, ``something.reason``); ``None`` when it cannot be told."""
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if isinstance(expr, ast.Attribute) and expr.attr == "reason":
            return set()
        if not isinstance(expr, ast.Name):
            return None
        if function is not None:
            if expr.id in _params(function):
                return set()
            local = self._local(expr.id, function, where)
            if local is not None:
                return local
        values = self.constants.get(expr.id)
        if values is not None and len(values) == 1:
            return set(values)
        return None

    def _local(
        self, name: str, function: ast.FunctionDef | ast.AsyncFunctionDef, where: str
    ) -> set[str] | None:
        """A name bound in ``function``: to a constant, or by unpacking a row of a module-level
        dict of tuples."""
        found: set[str] = set()
        bound = False
        for node in ast.walk(function):
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == name:
                bound = True
                values = self._resolve(node.value, None, where)
                if values is None:
                    return None
                found |= values
            elif isinstance(target, ast.Tuple) and any(
                isinstance(e, ast.Name) and e.id == name for e in target.elts
            ):
                bound = True
                index = next(
                    i for i, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name
                )
                values = self._row_values(node.value, index, where)
                if values is None:
                    return None
                found |= values
        return found if bound else None

    def _row_values(self, expr: ast.expr, index: int, where: str) -> set[str] | None:
        """Element ``index`` of every row of the module-level dict ``expr`` subscripts."""
        if not (isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name)):
            return None
        rows = self.tables.get((where, expr.value.id))
        if rows is None:
            return None
        found: set[str] = set()
        for row in rows:
            if index >= len(row):
                return None
            values = self._resolve(row[index], None, where)
            if values is None:
                return None
            found |= values
        return found

    # -- the sites -------------------------------------------------------------------------------

    def collect(self) -> Collected:
        collected = Collected()
        for module in self.modules:
            for call, function, cls in self.scopes[module.where].calls:
                name = _call_name(call)
                callee = self._callee(call, name, cls)
                if callee is None:
                    continue
                arg = _reason_arg(call, callee)
                if arg is None:
                    continue
                if isinstance(arg, tuple):
                    starred, index = arg
                    values = self._row_values(starred.value, index, module.where)
                else:
                    values = self._resolve(arg, function, module.where)
                site = f"{module.where}:{call.lineno}"
                if values is None:
                    collected.unresolved.append(f"{site}: {ast.unparse(call)[:120]}")
                    continue
                if not values:  # a reason passed on: made at another site
                    continue
                status = self._status(call, callee)
                for reason in values:
                    collected.reasons[reason].add(status)
                    collected.sites[reason].add(site)
            if any(callee_defined_in(module, name) for name in self.callees):
                for node in module.tree.body:
                    if (
                        isinstance(node, ast.Assign)
                        and len(node.targets) == 1
                        and isinstance(node.targets[0], ast.Name)
                        and isinstance(node.value, ast.Constant)
                        and node.value.value == node.targets[0].id
                    ):
                        collected.sites[node.value.value].add(f"{module.where}:{node.lineno}")
                        collected.reasons.setdefault(node.value.value, set())
        return collected

    def _callee(self, call: ast.Call, name: str | None, cls: str) -> Callee | None:
        if name in REASON_MESSAGES:
            if not any(k.arg == "reason" for k in call.keywords):
                return None
            return Callee(name, ["reason"], 0, REASON_MESSAGES[name])
        if (
            name == "__init__"
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Call)
            and _call_name(call.func.value) == "super"
            and cls in self.carriers
        ):
            # super().__init__(...) in a carrier: its first carrier base's reason parameter, the
            # status of the class that calls it (RateLimited, not its base RetryLater).
            base = self._carrier_base(cls)
            if base is None:
                return None
            below = self.carriers[base]
            return Callee(cls, below.params, below.reason, self.carriers[cls].status_class)
        if (
            isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id.endswith("_pb2")
        ):
            return None  # a message of the same name (error_details_pb2.BadRequest)
        return self.callees.get(name or "")

    def _carrier_base(self, cls: str) -> str | None:
        return next((b for b in self.bases.get(cls, []) if b in self.carriers), None)

    def _status(self, call: ast.Call, callee: Callee) -> str:
        if callee.status_class == "" and "status" in callee.params:
            return _http_status(call, callee)
        return STATUS_OF_CLASS.get(callee.status_class, callee.status_class)


def callee_defined_in(module: Module, name: str) -> bool:
    return any(
        isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name
        for node in module.tree.body
    )


# --- the page ------------------------------------------------------------------------------------


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def documented(text: str) -> dict[str, list[str]]:
    """reason → the status cells of its rows, from the page's reason tables."""
    rows: dict[str, list[str]] = defaultdict(list)
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if not line.startswith("|") or number + 1 >= len(lines):
            continue
        header = _cells(line)
        if header[0].lower() != "reason" or not set(lines[number + 1]) <= set("|-: "):
            continue
        assert "status" in [h.lower() for h in header], f"line {number + 1}: no status column"
        status_at = [h.lower() for h in header].index("status")
        for row in lines[number + 2 :]:
            if not row.startswith("|"):
                break
            cells = _cells(row)
            names = re.findall(r"`([^`]+)`", cells[0])
            assert len(names) == 1 and REASON.fullmatch(names[0]), f"a reason row: {row}"
            rows[names[0]].append(cells[status_at])
    return rows


# --- the tests -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def collected() -> Collected:
    return Reasons(_modules()).collect()


@pytest.fixture(scope="module")
def page() -> dict[str, list[str]]:
    return documented(DOC.read_text(encoding="utf-8"))


def test_every_reason_site_is_understood(collected: Collected) -> None:
    assert not collected.unresolved, (
        "reason arguments this test cannot resolve (teach it the new form):\n"
        + "\n".join(collected.unresolved)
    )


def test_the_collection_finds_what_it_must(collected: Collected) -> None:
    """A collection that finds little is broken, not clean: reasons made in each way above."""
    expected = {
        "DRAW_FIRST",  # Gin: a starred row of a dict of tuples
        "DECIDE_FIRST",  # Koi-Koi: a local unpacked from a dict of tuples
        "CARD_NOT_IN_HAND",  # a literal in an engine refusal
        "MISSING_FIELD",  # through the forwarder invalid()
        "STORE_UNAVAILABLE",  # super().__init__ with a module constant
        "RATE_LIMITED",  # super().__init__ with a literal
        "UNKNOWN_KEY",  # AuthError with an imported constant
        "INTERNAL_ERROR",  # ErrorInfo(reason=...)
        "NO_TIMELINE",  # the web pages' _error forwarder
        "OUT_OF_RANGE",  # InvalidRules and invalid()
    }
    assert expected <= collected.reasons.keys()
    assert len(collected.reasons) >= 100


def test_every_reason_the_code_sends_is_documented(
    collected: Collected, page: dict[str, list[str]]
) -> None:
    missing = sorted(set(collected.reasons) - set(page))
    assert not missing, "reasons the code sends that docs/errors.md lacks:\n" + "\n".join(
        f"{reason} ({', '.join(sorted(collected.sites[reason]))})" for reason in missing
    )


def test_every_documented_reason_is_sent(collected: Collected, page: dict[str, list[str]]) -> None:
    stale = sorted(set(page) - set(collected.reasons))
    assert not stale, f"rows of docs/errors.md no code sends: {stale}"


def test_each_row_names_the_status_the_code_gives(
    collected: Collected, page: dict[str, list[str]]
) -> None:
    wrong = []
    for reason, statuses in sorted(collected.reasons.items()):
        cells = " ".join(page.get(reason, []))
        for status in sorted(s for s in statuses if s):
            if not re.search(rf"\b{re.escape(status)}\b", cells):
                wrong.append(f"{reason}: the code gives {status}; the page says {cells!r}")
    assert not wrong, "\n".join(wrong)


def test_the_page_names_the_domain() -> None:
    assert f"`{DOMAIN}`" in DOC.read_text(encoding="utf-8")
