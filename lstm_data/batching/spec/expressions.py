"""Safe column expressions: the text of derived variables and selections.

An expression such as ``np.log(part_pt / jet_pt)`` is parsed with Python's
:mod:`ast` and checked against an allow-list; it is never given to ``eval``.
Allowed are the dataset's column names (and other derived variables), numeric
and boolean constants, arithmetic (``+ - * / // % **``), comparisons, the
element-wise logical operators ``& | ^ ~``, and calls of the functions in
:data:`FUNCTIONS`, written bare (``log(x)``) or with weaver-core's prefixes
``np.``, ``numpy.``, ``ak.``, ``awkward.`` and ``math.``. Anything else (other
attributes, subscripts, lambdas, comprehensions, keyword arguments, names
starting with ``__``) is a :class:`~lstm_data.errors.SchemaError` naming it.
A column name that is not a Python name (``png.calE``) is written in backticks:
```` `png.calE` / calE ````.

Evaluation is columnar: a per-row variable is one value per row; a prong
variable of a ragged group is the group's flat values plus its offsets. A
per-row value meeting a prong value is repeated over the row's prongs
(``numpy.repeat(values, lengths)``), so ``part_pt / jet_pt`` divides every
particle by its jet's ``jet_pt``; two different groups cannot meet in one
expression. Constants keep numpy's weak typing: ``float32`` columns stay
``float32``, so the results equal those of the same numpy calls.

What one expression may cost is bounded before it is parsed or evaluated (its
length, nesting, size, comparison chains and call arguments:
:mod:`lstm_data.batching.spec.expression_limits`), and its numbers are never
changed silently: constants are computed exactly, integer values never wrap, an
integer division by zero is an error naming the row
(:mod:`lstm_data.batching.spec.exact_arithmetic`).
"""
from __future__ import annotations

import ast
import keyword
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from lstm_data.batching.spec import exact_arithmetic as exact
from lstm_data.batching.spec.expression_limits import (MAX_ARGUMENTS, MAX_LENGTH, Positions, check_text,
                                                       check_tree, parse)
from lstm_data.errors import PrecisionWarning, SchemaError, warn_user

__all__ = ["Column", "Expression", "FUNCTIONS", "CONSTANTS", "PREFIXES", "call_of_names"]

#: module prefixes a function or constant may carry (weaver-core's spellings)
PREFIXES = ("np", "numpy", "ak", "awkward", "math")


def _argmax(*args: np.ndarray) -> np.ndarray:
    """Index of the largest argument, element by element (first one on ties)."""
    out: np.ndarray = np.argmax(np.stack(np.broadcast_arrays(*args), axis=1), axis=1)
    return out


#: function name -> (numpy function, number of arguments; ``None``: one or more)
FUNCTIONS: dict[str, tuple[Callable[..., Any], int | None]] = {
    **{name: (getattr(np, name), 1) for name in (
        "log", "log1p", "log2", "log10", "exp", "expm1", "sqrt", "cbrt", "square", "sin", "cos", "tan",
        "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "abs",
        "absolute", "fabs", "sign", "floor", "ceil", "rint", "trunc", "isnan", "isinf", "isfinite",
        "logical_not", "negative", "ones_like", "zeros_like", "nan_to_num", "deg2rad", "rad2deg")},
    **{name: (getattr(np, name), 2) for name in (
        "hypot", "arctan2", "minimum", "maximum", "fmin", "fmax", "power", "mod", "fmod", "copysign",
        "logical_and", "logical_or", "logical_xor")},
    "clip": (np.clip, 3),
    "where": (np.where, 3),
    "atan2": (np.arctan2, 2), "atan": (np.arctan, 1), "asinh": (np.arcsinh, 1), "acosh": (np.arccosh, 1),
    "atanh": (np.arctanh, 1), "asin": (np.arcsin, 1), "acos": (np.arccos, 1), "pow": (np.power, 2),
    "argmax": (_argmax, None),
}
#: ``num(x)``: the number of prongs of each row of ``x``'s group (``ak.num``), one value per row
COUNT_FUNCTION = "num"
#: named constants (``np.pi``, ``math.e``, ...)
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

#: the checked operation (exact_arithmetic.CHECKED) of each operator and function
_KEYS: dict[Any, str] = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv",
                         ast.Mod: "mod", ast.Pow: "pow", ast.USub: "neg", ast.UAdd: "pos", "negative": "neg", "abs": "abs",
                         "absolute": "abs", "square": "square", "power": "pow", "pow": "pow", "mod": "mod",
                         "fmod": "fmod"}
#: functions of integer constants computed exactly, as their operators are
_FOLDED_CALLS: dict[str, Callable[..., Any]] = {
    "pow": lambda a, b: exact.fold_binary(ast.Pow(), a, b), "mod": lambda a, b: exact.fold_binary(ast.Mod(), a, b),
    "neg": lambda a: exact.fold_unary(ast.USub(), a), "abs": abs,
    "square": lambda a: exact.fold_binary(ast.Mult(), a, a)}
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide, ast.Mod: np.mod, ast.Pow: np.power,
    ast.BitAnd: np.bitwise_and, ast.BitOr: np.bitwise_or, ast.BitXor: np.bitwise_xor,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal,
    ast.Eq: np.equal, ast.NotEq: np.not_equal,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: np.negative, ast.UAdd: np.positive,
                                             ast.Invert: np.invert}
#: a backtick-quoted column name, e.g. `png.calE`
_QUOTED = re.compile(r"`([^`]+)`")
_LOGICAL = (ast.BitAnd, ast.BitOr, ast.BitXor)
#: per-row values repeated over a group's prongs during one evaluation: (id, group) -> (source, repeat)
_Repeats = dict[Any, tuple[np.ndarray, np.ndarray]]
#: what a refused construct is called in messages
_CONSTRUCTS = {ast.Lambda: "lambda", ast.Subscript: "subscript", ast.ListComp: "comprehension",
               ast.SetComp: "comprehension", ast.DictComp: "comprehension", ast.GeneratorExp: "comprehension",
               ast.IfExp: "'... if ... else ...'", ast.NamedExpr: "':='", ast.Starred: "'*'",
               ast.JoinedStr: "f-string", ast.List: "list", ast.Tuple: "tuple", ast.Dict: "dict",
               ast.Set: "set", ast.Await: "await", ast.Yield: "yield", ast.Slice: "slice"}


def call_of_names(function: str, names: list[str], *, where: str, variable: str | None = None) -> str:
    """The expression calling ``function`` on the columns ``names``, each exactly that column.

    A name other than a plain ASCII identifier is written quoted (```a, b``` is the one
    column ``a, b``), so no name is read as text of the expression; the result is
    checked to read exactly ``names``.

    Parameters
    ----------
    function
        A function of :data:`FUNCTIONS` taking any number of arguments (``argmax``).
    names
        Column names, in argument order.
    where, variable
        Named in errors.

    Returns
    -------
    str
        The expression's text, e.g. ``argmax(`a, b`, c)``.

    Raises
    ------
    SchemaError
        More names than a call takes, a name that cannot be quoted (empty, or
        holding a backtick), or text past the expression limits.
    """
    if len(names) > MAX_ARGUMENTS:
        raise SchemaError(f"{where}: {len(names)} names; a call takes at most {MAX_ARGUMENTS} "
                          "(lstm_data.batching.spec.expression_limits.MAX_ARGUMENTS)", variable=variable)
    for name in names:
        if not isinstance(name, str) or not name or "`" in name:
            raise SchemaError(f"{where}: {name!r} cannot name a column in an expression (a name is "
                              "non-empty text without backticks)", variable=variable)
    if sum(len(n) + 4 for n in names) > MAX_LENGTH:
        raise SchemaError(f"{where}: the names are longer than an expression may be ({MAX_LENGTH} characters: "
                          "lstm_data.batching.spec.expression_limits.MAX_LENGTH)", variable=variable)
    text = f"{function}({', '.join(_written(n) for n in names)})"
    if Expression(text, where=where, variable=variable).names != tuple(dict.fromkeys(names)):
        raise SchemaError(f"{where}: the names {names!r} do not read as themselves", variable=variable)
    return text


def _written(name: str) -> str:
    """``name`` as an expression reads the column of exactly that name."""
    plain = name.isascii() and name.isidentifier() and not keyword.iskeyword(name) and name not in PREFIXES \
        and not name.startswith("__")
    return name if plain else f"`{name}`"


@dataclass(frozen=True)
class Column:
    """The values of one variable, per row or per prong.

    Attributes
    ----------
    values
        1-D: one value per row (``group is None``) or one per prong of ``group``.
    offsets
        ``(n + 1,)`` int64 row offsets into ``values`` for a prong variable, else ``None``.
    group
        The ragged group of a prong variable, else ``None``.
    """

    values: np.ndarray
    offsets: np.ndarray | None = None
    group: str | None = None


class Expression:
    """One checked expression over a dataset's variables.

    Parameters
    ----------
    text
        The expression, e.g. ``"np.log(part_pt / jet_pt)"``.
    where
        What the expression belongs to (``"derived 'x'"``), named in errors.
    variable
        The variable it defines (named in errors as their ``variable``), if any.

    Attributes
    ----------
    text
        The expression as given.
    names
        The variables it reads, in order of first use.
    value_names
        Those whose values it reads; the others only have their prongs counted
        (``num(x)``), which needs their group's offsets, not its values.

    Raises
    ------
    SchemaError
        Not a valid expression, past a limit of
        :mod:`~lstm_data.batching.spec.expression_limits`, or a construct,
        attribute or function outside the allow-list (the message names it).
    """

    def __init__(self, text: str, *, where: str = "expression", variable: str | None = None) -> None:
        if not isinstance(text, str) or not text.strip():
            raise SchemaError(f"{where}: an expression must be non-empty text, got {text!r}", variable=variable)
        check_text(text, where, variable)
        self.text = text
        self.where = where
        self.variable = variable
        #: placeholder identifier -> the backtick-quoted column name it stands for
        self._quoted: dict[str, str] = {}
        self._positions = self._placeholders(text)
        self._tree = parse(self._positions.parsed, self._positions, where, variable, text)
        check_tree(self._tree, self._positions, where, variable)
        self._exact_names()
        names: dict[str, None] = {}
        values: dict[str, None] = {}
        self._check(self._tree, names, values)
        self.names: tuple[str, ...] = tuple(names)
        self.value_names: tuple[str, ...] = tuple(values)
        self._warned = False

    def _exact_names(self) -> None:
        """Every name and attribute of the tree as written: :mod:`ast` folds identifiers to their
        NFKC form (``ﬁt`` to ``fit``, a fullwidth ``ｘ`` to ``x``), and a name means the column of
        exactly that name."""
        for node in ast.walk(self._tree):
            if isinstance(node, ast.Name):
                written = self._positions.source(node)
                parsed = node.id
            elif isinstance(node, ast.Attribute):
                written = _trailing_identifier(self._positions.source(node))
                parsed = node.attr
            else:
                continue
            if unicodedata.normalize("NFKC", written) != parsed:  # the text was not read as expected
                raise SchemaError(f"{self.where}: cannot read the name {parsed!r} as written in {self.text!r}",
                                  variable=self.variable, offset=self._positions.of_node(node))
            if isinstance(node, ast.Name):
                node.id = written
            else:
                node.attr = written

    def _placeholders(self, text: str) -> Positions:
        """``text`` with each backtick-quoted name replaced by an identifier, and where each went."""
        parts: list[str] = []
        spans: list[tuple[int, int, int, int]] = []
        at = length = 0
        for match in _QUOTED.finditer(text):
            key = f"q{len(self._quoted)}_quoted_"
            self._quoted[key] = match.group(1)
            parts.append(text[at:match.start()])
            length += match.start() - at
            spans.append((length, match.start(), len(key), match.end() - match.start()))
            parts.append(key)
            length += len(key)
            at = match.end()
        parts.append(text[at:])
        parsed = "".join(parts)
        return Positions(parsed.strip(), spans, leading=len(parsed) - len(parsed.lstrip()))

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    # -- checking -----------------------------------------------------------------------------
    def _refuse(self, what: str, variable: str | None = None) -> SchemaError:
        return SchemaError(f"{self.where}: {what} is not allowed in an expression ({self.text!r}); "
                           "use column names, numbers, arithmetic, comparisons, & | ~ and the "
                           "numpy functions of lstm_data.batching.spec.expressions.FUNCTIONS", variable=variable)

    def _function(self, node: ast.expr) -> str:
        """The allowed function name that ``node`` (a call's ``func``) spells."""
        name = self._dotted(node, "function")
        if name not in FUNCTIONS and name != COUNT_FUNCTION:
            raise self._refuse(f"function {self._spelling(node)!r}", self._spelling(node))
        return name

    def _dotted(self, node: ast.expr, kind: str) -> str:
        """``np.log`` -> ``log``; ``log`` -> ``log``; anything else refused."""
        if isinstance(node, ast.Name):
            if node.id.startswith("__"):
                raise self._refuse(f"name {node.id!r}", node.id)
            return node.id
        if isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name) and base.id in PREFIXES:
                return node.attr
            raise self._refuse(f"attribute {self._spelling(node)!r}", self._spelling(node))
        raise self._refuse(f"{kind} {ast.unparse(node)!r}")

    @staticmethod
    def _spelling(node: ast.expr) -> str:
        return ast.unparse(node)

    def _check(self, node: ast.expr, names: dict[str, None], values: dict[str, None] | None) -> None:
        """Refuse what is outside the allow-list; collect the names read (into ``values`` too
        unless only counted: ``values`` is ``None`` for the direct argument of ``num()``)."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, int) and node.value.bit_length() > exact.MAX_INT_BITS:
                raise SchemaError(f"{self.where}: an integer of {node.value.bit_length()} bits in "
                                  f"{self.text[:200]!r} is beyond float64's range: no dtype holds it",
                                  variable=self.variable)
            if isinstance(node.value, (bool, int, float)):
                return
            raise self._refuse(f"constant {node.value!r}")
        if isinstance(node, ast.Name):
            if node.id.startswith("__"):
                raise self._refuse(f"name {node.id!r}", node.id)
            if node.id in PREFIXES:
                raise self._refuse(f"module {node.id!r} on its own", node.id)
            name = self._quoted.get(node.id, node.id)
            names.setdefault(name)
            if values is not None:
                values.setdefault(name)
            return
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in PREFIXES and node.attr in CONSTANTS:
                return
            spelled = self._spelling(node)
            hint = f" (quote a column name with dots in backticks: `{spelled}`)" \
                if isinstance(node.value, ast.Name) and node.value.id not in PREFIXES else ""
            raise self._refuse(f"attribute {spelled!r}{hint}", spelled)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            self._check(node.left, names, values)
            self._check(node.right, names, values)
            return
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                raise self._refuse("'not' (use ~ on comparisons)")
            self._check(node.operand, names, values)
            return
        if isinstance(node, ast.Compare):
            bad = [op for op in node.ops if type(op) not in _COMPARE]
            if bad:
                raise self._refuse(f"comparison {type(bad[0]).__name__!r}")
            for part in (node.left, *node.comparators):
                self._check(part, names, values)
            return
        if isinstance(node, ast.BoolOp):
            raise self._refuse("'and'/'or' (use & and | on comparisons, in parentheses)")
        if isinstance(node, ast.Call):
            name = self._function(node.func)
            if node.keywords:
                raise self._refuse(f"keyword argument {node.keywords[0].arg!r} of {name!r}",
                                   node.keywords[0].arg)
            arity = 1 if name == COUNT_FUNCTION else FUNCTIONS[name][1]
            if (arity is not None and len(node.args) != arity) or not node.args:
                raise SchemaError(f"{self.where}: {name}() takes {arity or 'one or more'} argument(s), "
                                  f"got {len(node.args)} in {self.text!r}", variable=name)
            counted = name == COUNT_FUNCTION and isinstance(node.args[0], ast.Name)
            for arg in node.args:
                self._check(arg, names, None if counted else values)
            return
        kind = _CONSTRUCTS.get(type(node), type(node).__name__)
        raise self._refuse(kind if kind.startswith("'") else f"a {kind}")

    # -- kind: per row or per prong of which group ------------------------------------------
    def kind(self, kinds: Mapping[str, str | None],
             why: Callable[[list[str]], str] | None = None) -> str | None:
        """The group whose prongs the result has one value each for; ``None``: one per row.

        Parameters
        ----------
        kinds
            Every name of :attr:`names` -> its group, or ``None`` for a per-row variable.
        why
            Groups that meet -> why they cannot, for the error (e.g. the first row
            where their prong counts differ).

        Returns
        -------
        str or None
            The result's group.

        Raises
        ------
        SchemaError
            Prong variables of two groups meet, or ``num()`` of a per-row value.
        """
        return self._kind(self._tree, kinds, why)

    def _kind(self, node: ast.expr, kinds: Mapping[str, str | None],
              why: Callable[[list[str]], str] | None) -> str | None:
        if isinstance(node, ast.Name):
            return kinds[self._quoted.get(node.id, node.id)]
        if isinstance(node, ast.Call) and self._dotted(node.func, "function") == COUNT_FUNCTION:
            if self._kind(node.args[0], kinds, why) is None:
                raise SchemaError(f"{self.where}: num() needs a prong variable, got the per-row "
                                  f"{ast.unparse(node.args[0])!r} in {self.text!r}")
            return None
        parts = [self._kind(child, kinds, why) for child in _operands(node)]
        return self._one_group(parts, why)

    def _one_group(self, groups: list[str | None], why: Callable[[list[str]], str] | None = None) -> str | None:
        found = list(dict.fromkeys(g for g in groups if g is not None))
        if len(found) > 1:
            reason = why(found[:2]) if why is not None else "prong variables of two groups cannot meet"
            raise SchemaError(f"{self.where}: {self.text!r} mixes prong variables of groups "
                              f"{found[0]!r} and {found[1]!r} ({reason})")
        return found[0] if found else None

    # -- evaluation -------------------------------------------------------------------------------
    def evaluate(self, columns: Mapping[str, Column], n_rows: int, rows: np.ndarray | None = None,
                 deferred: list[tuple[Expression, str]] | None = None) -> Column:
        """The expression's values over the rows of ``columns``.

        Parameters
        ----------
        columns
            Every name of :attr:`names` -> its :class:`Column` (all of the same rows).
            A name outside :attr:`value_names` may hold any values of the right
            length: only its offsets are read.
        n_rows
            The number of rows (the length of a per-row result).
        rows
            The data's row number of each of those rows, named in errors and
            warnings (``None``: ``0 .. n_rows - 1``).
        deferred
            When given, a precision warning is appended to it as ``(self, message)``
            instead of being given (evaluations of several blocks of rows at once give
            theirs in row order afterwards, with :meth:`warn_once`).

        Returns
        -------
        Column
            Per row, or per prong of the operands' group. A constant expression
            gives one value per row.

        Raises
        ------
        SchemaError
            Two groups meet, numpy refuses an operation (e.g. ``&`` of floats), or
            a value has no right result (an integer that does not fit, a division
            by zero: see :mod:`~lstm_data.batching.spec.exact_arithmetic`), naming
            the first row.

        Warns
        -----
        PrecisionWarning
            Once per expression, when an integer becomes a float that changes it.
        """
        run = _Run(rows)
        with np.errstate(all="ignore"):
            out = self._eval(self._tree, columns, run)
            if not isinstance(out, Column):  # a constant: one value per row
                value = exact.as_array_value(out, lambda p: run.problem(p, self._tree, None))
                out = Column(np.full(n_rows, value))
        for problem, node, row in run.warnings[:1]:
            if not self._warned:
                message = self._message(problem, node, row) + "; only integers up to 2**24 (float32) or " \
                    "2**53 (float64) are exact in floats"
                if deferred is None:
                    self.warn_once(message)
                else:
                    deferred.append((self, message))
        return out

    def warn_once(self, message: str) -> None:
        """Give the precision warning ``message``, unless this expression gave one already."""
        if not self._warned:
            self._warned = True
            warn_user(message, PrecisionWarning)

    def _message(self, problem: exact.ValueProblem, node: ast.expr, row: int | None) -> str:
        what = ast.unparse(node)
        at = "" if row is None else f" at row {row}"
        within = "" if node is self._tree else f" (in {self.text!r})"
        return f"{self.where}: {what!r}{at}: {problem.message}{within}"

    def _eval(self, node: ast.expr, columns: Mapping[str, Column], run: _Run) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return columns[self._quoted.get(node.id, node.id)]
        if isinstance(node, ast.Attribute):
            return CONSTANTS[node.attr]
        if isinstance(node, ast.Call):
            name = self._dotted(node.func, "function")
            if name == COUNT_FUNCTION:
                arg = self._eval(node.args[0], columns, run)
                if not isinstance(arg, Column) or arg.offsets is None:
                    raise SchemaError(f"{self.where}: num() needs a prong variable in {self.text!r}",
                                      variable=self.variable)
                return Column(np.diff(arg.offsets))
            args = [self._eval(a, columns, run) for a in node.args]
            return self._apply(node, _KEYS.get(name), FUNCTIONS[name][0], args, run)
        if isinstance(node, ast.BinOp):
            args = [self._eval(node.left, columns, run), self._eval(node.right, columns, run)]
            return self._apply(node, _KEYS.get(type(node.op)), _BINARY[type(node.op)], args, run,
                               logical=isinstance(node.op, _LOGICAL))
        if isinstance(node, ast.UnaryOp):
            arg = self._eval(node.operand, columns, run)
            return self._apply(node, _KEYS.get(type(node.op)), _UNARY[type(node.op)], [arg], run,
                               logical=isinstance(node.op, ast.Invert))
        if isinstance(node, ast.Compare):  # a < b < c is (a < b) & (b < c)
            result = None
            left = self._eval(node.left, columns, run)
            for op, comp in zip(node.ops, node.comparators):
                right = self._eval(comp, columns, run)
                part = self._apply(node, None, _COMPARE[type(op)], [left, right], run, compare=op)
                if result is None:
                    result = part
                elif isinstance(result, Column) or isinstance(part, Column):
                    result = self._apply(node, None, np.logical_and, [result, part], run)
                else:
                    result = bool(result and part)
                left = right
            return result
        raise self._refuse(type(node).__name__)  # pragma: no cover - _check refused it already

    def _fold(self, node: ast.expr, key: str | None, func: Callable[..., Any], args: list[Any],
              run: _Run, compare: ast.cmpop | None) -> Any:
        """Constants only: computed exactly (see :mod:`~lstm_data.batching.spec.exact_arithmetic`)."""
        try:
            if compare is not None:
                return exact.fold_compare(compare, *args)
            if isinstance(node, ast.BinOp):
                return exact.fold_binary(node.op, *args)
            if isinstance(node, ast.UnaryOp):
                return exact.fold_unary(node.op, *args)
            if key in _FOLDED_CALLS and not any(isinstance(a, float) for a in args):
                return _FOLDED_CALLS[key](*args)
            warn = lambda p: run.problem(p, node, None)  # noqa: E731
            values = [np.asarray(exact.as_array_value(a, warn)) for a in args]
            if key in exact.CHECKED:
                values = exact.widen(values)
            return exact.computed(key, func, values, warn).item()
        except exact.ValueProblem as problem:
            raise SchemaError(self._message(problem, node, None), variable=self.variable) from None
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"{self.where}: cannot evaluate {ast.unparse(node)!r} in {self.text!r}: {exc}",
                              variable=self.variable) from None

    def _apply(self, node: ast.expr, key: str | None, func: Callable[..., Any], args: list[Any],
               run: _Run, logical: bool = False, compare: ast.cmpop | None = None) -> Any:
        cols = [a for a in args if isinstance(a, Column)]
        if not cols:  # constants only
            return self._fold(node, key, func, args, run, compare)
        group = self._one_group([c.group for c in cols])
        owner = next((c for c in cols if c.group == group), cols[0])
        values = [self._align(a, owner, run.repeated) for a in args]
        arrays = [v for v in values if isinstance(v, np.ndarray)]
        if logical:
            floats = [v for v in arrays if v.dtype.kind in "fc"]
            if floats:
                raise SchemaError(f"{self.where}: {ast.unparse(node)!r} applies & | ^ ~ to {floats[0].dtype} "
                                  f"values in {self.text!r}; they combine booleans (comparisons) or integers",
                                  variable=self.variable)
        warn = lambda p: run.problem(p, node, owner)  # noqa: E731
        try:
            values = [v if isinstance(v, np.ndarray) else exact.operand(v, arrays, compare is not None, warn)
                      for v in values]
            if key in exact.CHECKED:
                values = exact.widen(values)
            result = exact.computed(key, func, values, warn)
        except exact.ValueProblem as problem:
            raise SchemaError(self._message(problem, node, None), variable=self.variable,
                              row=run.row(problem.index, owner)) from None
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"{self.where}: cannot evaluate {ast.unparse(node)!r} in {self.text!r}: {exc}",
                              variable=self.variable) from None
        return Column(result, owner.offsets, owner.group)

    @staticmethod
    def _align(arg: Any, owner: Column, repeated: _Repeats) -> Any:
        """``arg``'s values on ``owner``'s rows or prongs (per-row values repeated over prongs)."""
        if not isinstance(arg, Column):
            return arg
        if arg.group == owner.group:
            return arg.values
        assert owner.offsets is not None  # the owner is a prong column here
        key = (id(arg.values), owner.group)
        hit = repeated.get(key)
        if hit is None:  # the source is kept with its repeat: its id stays its own meanwhile
            hit = repeated[key] = (arg.values, np.repeat(arg.values, np.diff(owner.offsets)))
        return hit[1]


class _Run:
    """One evaluation: per-row values repeated over prongs, the rows' numbers, warnings met."""

    def __init__(self, rows: np.ndarray | None) -> None:
        self.repeated: _Repeats = {}
        self.rows = rows
        self.warnings: list[tuple[exact.ValueProblem, ast.expr, int | None]] = []

    def row(self, index: int | None, owner: Column | None) -> int | None:
        """The data's row of element ``index`` of ``owner``'s values (``None``: a constant)."""
        if index is None or owner is None:
            return None
        local = index if owner.offsets is None else int(np.searchsorted(owner.offsets, index, "right")) - 1
        return local if self.rows is None else int(self.rows[local])

    def problem(self, problem: exact.ValueProblem, node: ast.expr, owner: Column | None) -> None:
        """A precision warning met at ``node`` (the first of an evaluation is given)."""
        if not self.warnings:
            self.warnings.append((problem, node, self.row(problem.index, owner)))


def _trailing_identifier(text: str) -> str:
    """The identifier ``text`` ends with (an attribute's name: after its dot, white space or a
    line continuation, which are ASCII and no part of an identifier)."""
    k = len(text)
    while k and (not text[k - 1].isascii() or text[k - 1].isalnum() or text[k - 1] == "_"):
        k -= 1
    return text[k:]


def _operands(node: ast.expr) -> list[ast.expr]:
    """The sub-expressions whose kinds decide ``node``'s kind."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.Call):
        return list(node.args)
    return []
