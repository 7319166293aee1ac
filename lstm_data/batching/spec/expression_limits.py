"""The limits of one derived expression or selection, checked before any work is done.

A spec file is data a user may download: what its expressions may cost is bounded
before they are parsed or evaluated. The text is checked first (its length, then
one pass over its tokens: parentheses nested, unary operators in a row, and a count
of names, numbers and operators that the parsed tree has at least), so that the
parser never meets text it would recurse on without end; the parsed tree is then
checked without recursion (its depth, node count, comparison chains and call
arguments). Each limit is a :class:`~lstm_data.errors.SchemaError` that names the
limit, the expression's variable and the character offset where it was passed.
"""
from __future__ import annotations

import ast
import io
import keyword
import tokenize
from bisect import bisect_right
from typing import Iterator

from lstm_data.errors import SchemaError

__all__ = ["MAX_LENGTH", "MAX_DEPTH", "MAX_NODES", "MAX_COMPARISONS", "MAX_ARGUMENTS", "Positions",
           "check_text", "check_tree", "parse"]

#: characters of one expression's text
MAX_LENGTH = 10_000
#: nesting: operators, calls and parentheses inside each other (``a + b + c`` nests two deep)
MAX_DEPTH = 100
#: names, numbers, operators and calls of one expression
MAX_NODES = 1_000
#: comparisons in one chain (``a < b <= c`` has two)
MAX_COMPARISONS = 32
#: arguments of one call (``argmax(a, b, ...)``)
MAX_ARGUMENTS = 64

_OPEN, _CLOSE = "([{", ")]}"
#: operator tokens that are no node of their own (brackets, separators, comparisons: see check_text)
_NOT_NODES = frozenset("()[]{},.:;=") | {"<", ">", "<=", ">=", "==", "!=", "->", ":="}
_UNARY = frozenset({"-", "+", "~"})
#: keywords that are a node (a constant) of their own
_CONSTANT_WORDS = frozenset({"True", "False", "None"})


class Positions:
    """Character offsets in the parsed text mapped back to the text as given.

    Backtick-quoted names are replaced by placeholders before parsing; ``spans``
    holds, in order, ``(start in the replaced text, start in the given text, length
    in the replaced text, length in the given text)`` of each replacement. The
    parsed text is the replaced one without its first ``leading`` characters (white
    space) and its last.
    """

    def __init__(self, parsed: str, spans: list[tuple[int, int, int, int]], leading: int = 0) -> None:
        self.parsed = parsed
        self.spans = spans
        self.leading = leading
        self._starts = [s[0] for s in spans]
        self._lines = [0]
        self._encoded: dict[int, bytes] = {}
        for k, ch in enumerate(parsed):
            if ch == "\n":
                self._lines.append(k + 1)

    def given(self, offset: int) -> int:
        """The offset in the given text of ``offset`` in the parsed text."""
        offset += self.leading
        k = bisect_right(self._starts, offset) - 1
        if k < 0:
            return offset
        start, orig, length, orig_length = self.spans[k]
        if offset < start + length:
            return orig
        return offset - start - length + orig + orig_length

    def of_line(self, line: int, column: int, utf8: bool = False) -> int:
        """The given-text offset of 1-based ``line`` and 0-based ``column`` of the parsed text
        (``utf8``: the column counts bytes, as the nodes of :mod:`ast` do)."""
        start = self._lines[min(max(line, 1), len(self._lines)) - 1]
        if utf8:
            column = len(self.parsed[start:].encode("utf-8")[:column].decode("utf-8", "ignore"))
        return self.given(start + column)

    def of_node(self, node: ast.AST) -> int:
        """The given-text offset where ``node`` starts."""
        return self.of_line(getattr(node, "lineno", 1), getattr(node, "col_offset", 0), utf8=True)

    def _parsed_offset(self, line: int, column: int) -> int:
        """The parsed-text offset of 1-based ``line`` and 0-based UTF-8 byte ``column``."""
        line = min(max(line, 1), len(self._lines))
        start = self._lines[line - 1]
        end = self._lines[line] if line < len(self._lines) else len(self.parsed)
        encoded = self._encoded.get(start)
        if encoded is None:
            encoded = self._encoded[start] = self.parsed[start:end].encode("utf-8")
        return start + len(encoded[:column].decode("utf-8", "ignore"))

    def source(self, node: ast.AST) -> str:
        """The parsed text of ``node`` as written (:mod:`ast` holds identifiers NFKC-normalised)."""
        lo = self._parsed_offset(getattr(node, "lineno", 1), getattr(node, "col_offset", 0))
        end_line: int = getattr(node, "end_lineno", 1)
        end_column: int = getattr(node, "end_col_offset", 0)
        hi = self._parsed_offset(end_line, end_column)
        return self.parsed[lo:hi]


def _limit(where: str, variable: str | None, what: str, limit_name: str, limit: int,
           offset: int) -> SchemaError:
    return SchemaError(f"{where}: the expression {what}; the limit is {limit} "
                       f"(lstm_data.batching.spec.expression_limits.{limit_name})",
                       variable=variable, offset=offset)


def check_text(text: str, where: str, variable: str | None) -> None:
    """Refuse a text longer than :data:`MAX_LENGTH` (before anything else reads it)."""
    if len(text) > MAX_LENGTH:
        raise _limit(where, variable, f"is {len(text)} characters long", "MAX_LENGTH", MAX_LENGTH, MAX_LENGTH)


def _tokens(text: str) -> Iterator[tokenize.TokenInfo]:
    """The tokens of ``text``, up to the first one the tokenizer cannot read (the parser
    then names the error)."""
    try:
        yield from tokenize.generate_tokens(io.StringIO(text).readline)
    except (tokenize.TokenError, SyntaxError):
        return


def scan_tokens(parsed: str, positions: Positions, where: str, variable: str | None) -> None:
    """Refuse the parsed text when its nesting or size is certainly past the limits.

    One pass over the tokens: the depth of parentheses (and brackets), the longest
    run of unary operators, and the number of names, numbers and operators other
    than comparisons, each of which is a distinct node of the tree (keywords and
    strings are not counted; a comparison chain's operands are). What passes parses without deep
    recursion; the tree is then checked exactly by :func:`check_tree`.
    """
    depth = unary = nodes = 0
    after_operand = False
    for tok in _tokens(parsed):
        if tok.type == tokenize.NUMBER or (tok.type == tokenize.NAME and (
                not keyword.iskeyword(tok.string) or tok.string in _CONSTANT_WORDS)):
            nodes += 1
            unary = 0
            after_operand = True
        elif tok.type == tokenize.NAME:  # and, or, not, if, ...: no node of their own counted
            after_operand = False
        elif tok.type == tokenize.OP:
            s = tok.string
            if s in _OPEN:
                depth += 1
                unary = 0
                after_operand = False
                if depth > MAX_DEPTH:
                    raise _limit(where, variable, f"nests parentheses more than {MAX_DEPTH} deep", "MAX_DEPTH",
                                 MAX_DEPTH, positions.of_line(*tok.start))
            elif s in _CLOSE:
                depth = max(0, depth - 1)
                after_operand = True
            elif s not in _NOT_NODES:
                nodes += 1
                if s in _UNARY and not after_operand:
                    unary += 1
                    if unary > MAX_DEPTH:
                        raise _limit(where, variable, f"nests more than {MAX_DEPTH} unary operators",
                                     "MAX_DEPTH", MAX_DEPTH, positions.of_line(*tok.start))
                after_operand = False
            else:
                after_operand = False
        if nodes > MAX_NODES:
            raise _limit(where, variable, f"has more than {MAX_NODES} names, numbers and operators",
                         "MAX_NODES", MAX_NODES, positions.of_line(*tok.start))


def parse(parsed: str, positions: Positions, where: str, variable: str | None, given: str) -> ast.expr:
    """``ast.parse`` of the scanned text; what it cannot nest is the depth limit, not a crash."""
    scan_tokens(parsed, positions, where, variable)
    try:
        tree = ast.parse(parsed, mode="eval")
    except SyntaxError as exc:
        if "too many nested" in str(exc.msg):
            raise _limit(where, variable, "nests too deep", "MAX_DEPTH", MAX_DEPTH, 0) from None
        raise SchemaError(f"{where}: {given!r} is not a valid expression ({exc.msg})",
                          variable=variable) from None
    except (RecursionError, MemoryError):
        raise _limit(where, variable, "nests too deep to parse", "MAX_DEPTH", MAX_DEPTH, 0) from None
    return tree.body


def check_tree(tree: ast.expr, positions: Positions, where: str, variable: str | None) -> None:
    """Refuse a tree past :data:`MAX_DEPTH`, :data:`MAX_NODES`, :data:`MAX_COMPARISONS` or
    :data:`MAX_ARGUMENTS` (walked with a stack: any depth is measured without recursion)."""
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise _limit(where, variable, f"has more than {MAX_NODES} nodes", "MAX_NODES", MAX_NODES,
                         positions.of_node(node))
        if depth > MAX_DEPTH:
            raise _limit(where, variable, f"nests more than {MAX_DEPTH} deep", "MAX_DEPTH", MAX_DEPTH,
                         positions.of_node(node))
        if isinstance(node, ast.Compare) and len(node.ops) > MAX_COMPARISONS:
            raise _limit(where, variable, f"chains {len(node.ops)} comparisons", "MAX_COMPARISONS",
                         MAX_COMPARISONS, positions.of_node(node))
        if isinstance(node, ast.Call) and len(node.args) + len(node.keywords) > MAX_ARGUMENTS:
            raise _limit(where, variable, f"calls a function with {len(node.args)} arguments",
                         "MAX_ARGUMENTS", MAX_ARGUMENTS, positions.of_node(node))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                stack.append((child, depth + 1))
