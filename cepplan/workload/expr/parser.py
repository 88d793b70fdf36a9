"""A hand-written recursive-descent parser from predicate text to expression trees.

Grammar (lowest precedence first):
    or      := and ('or' and)*
    and     := not ('and' not)*
    not     := 'not' not | compare
    compare := sum (('<'|'<='|'>'|'>='|'=='|'!=') sum)?       -- no chaining: a < b < c is an error
    sum     := product (('+'|'-') product)*
    product := unary (('*'|'/'|'%') unary)*
    unary   := '-' unary | primary
    primary := NUMBER | 'string' | true | false | var '.' attr
             | FUNC '(' args ')' | KFUNC '(' var '.' attr ')' | '(' or ')'

Nothing here executes the text: it is tokenised by a small scanner and built into dataclasses.
Input is bounded (length, bracket nesting and tree depth) so hostile text cannot exhaust the
parser, and no tree is deeper than the recursive printers and evaluators (and the JSON writers of
plan and job files) can walk: a chain `a + b + c + ...` is one tree level per operator.
"""

from __future__ import annotations

from dataclasses import dataclass

from cepplan.workload.expr.ast import (
    COMPARISONS,
    FUNCTIONS,
    KLEENE_FUNCTIONS,
    Attr,
    Binary,
    Call,
    Expr,
    KleeneRef,
    Literal,
    Unary,
    children,
)
from cepplan.workload.expr.errors import ExprError
from cepplan.workload.names import name_length

MAX_LENGTH = 4096
MAX_DEPTH = 64
MAX_TREE_DEPTH = 100

_KEYWORDS = {"and", "or", "not", "true", "false"}
_TWO_CHAR = {"<=", ">=", "==", "!="}
_ONE_CHAR = set("<>+-*/%().,")


@dataclass(frozen=True)
class Token:
    kind: str  # "num", "str", "name", "op", "end"
    text: str
    pos: int
    value: object = None


def tokenize(text: str) -> list[Token]:
    """Split predicate text into tokens; anything outside the language is an error here."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n":
            i += 1
        elif ch.isascii() and (ch.isdigit() or (ch == "." and i + 1 < n and text[i + 1].isdigit())):
            i = _scan_number(text, i, tokens)
        elif ch == "'":
            i = _scan_string(text, i, tokens)
        elif name_length(text, i):
            j = i + name_length(text, i)
            word = text[i:j]
            if word.startswith("__"):
                raise ExprError(f"names beginning with '__' are not allowed: {word!r}", i)
            tokens.append(Token("name", word, i))
            i = j
        elif text[i : i + 2] in _TWO_CHAR:
            tokens.append(Token("op", text[i : i + 2], i))
            i += 2
        elif ch in _ONE_CHAR:
            tokens.append(Token("op", ch, i))
            i += 1
        elif ch == "=":
            raise ExprError(_lone_equals(text, i), i)
        elif ch == '"':
            raise ExprError("strings use single quotes: 'text'", i)
        else:
            raise ExprError(f"unexpected character {ch!r}", i)
    tokens.append(Token("end", "", n))
    return tokens


def _scan_number(text: str, i: int, tokens: list[Token]) -> int:
    n, start, is_float = len(text), i, False
    while i < n and text[i].isascii() and text[i].isdigit():
        i += 1
    followed_by_name = i + 1 < n and name_length(text, i + 1) > 0
    if i < n and text[i] == "." and not followed_by_name:
        is_float = True
        i += 1
        while i < n and text[i].isascii() and text[i].isdigit():
            i += 1
    if i < n and text[i] in "eE":
        j = i + 1
        if j < n and text[j] in "+-":
            j += 1
        if j < n and text[j].isascii() and text[j].isdigit():
            is_float = True
            i = j
            while i < n and text[i].isascii() and text[i].isdigit():
                i += 1
    literal = text[start:i]
    if i < n and name_length(text, i):
        raise ExprError(f"malformed number {text[start : i + 1]!r}", i)
    if is_float:
        value: object = float(literal)
        if value in (float("inf"), float("-inf")):
            raise ExprError(f"number out of range: {literal}", start)
    else:
        if len(literal) > 18:
            raise ExprError(f"integer too large: {literal}", start)
        value = int(literal)
    tokens.append(Token("num", literal, start, value))
    return i


def _scan_string(text: str, i: int, tokens: list[Token]) -> int:
    start, i, chars = i, i + 1, []
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in "\\'":
            chars.append(text[i + 1])
            i += 2
        elif ch == "'":
            tokens.append(Token("str", text[start : i + 1], start, "".join(chars)))
            return i + 1
        else:
            chars.append(ch)
            i += 1
    raise ExprError("unterminated string", start)


class _Parser:
    def __init__(self, text: str):
        self.tokens = tokenize(text)
        self.index = 0
        self.depth = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def at(self, kind: str, text: str | None = None) -> bool:
        tok = self.tok
        return tok.kind == kind and (text is None or tok.text == text)

    def expect(self, kind: str, text: str, what: str) -> Token:
        if not self.at(kind, text):
            raise ExprError(f"expected {what}, found {_describe(self.tok)}", self.tok.pos)
        return self.advance()

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError(f"expression nested more than {MAX_DEPTH} levels deep", self.tok.pos)

    def parse(self) -> Expr:
        expr = self.or_expr()
        if not self.at("end"):
            raise ExprError(f"unexpected {_describe(self.tok)}", self.tok.pos)
        return expr

    def or_expr(self) -> Expr:
        left = self.and_expr()
        while self.at("name", "or"):
            op = self.advance()
            left = Binary("or", left, self.and_expr(), op.pos)
        return left

    def and_expr(self) -> Expr:
        left = self.not_expr()
        while self.at("name", "and"):
            op = self.advance()
            left = Binary("and", left, self.not_expr(), op.pos)
        return left

    def not_expr(self) -> Expr:
        if self.at("name", "not"):
            op = self.advance()
            self.enter()
            operand = self.not_expr()
            self.depth -= 1
            return Unary("not", operand, op.pos)
        return self.compare()

    def compare(self) -> Expr:
        left = self.sum()
        if self.tok.kind == "op" and self.tok.text in COMPARISONS:
            op = self.advance()
            right = self.sum()
            if self.tok.kind == "op" and self.tok.text in COMPARISONS:
                raise ExprError(
                    "comparisons cannot be chained; write 'x < y and y < z'", self.tok.pos
                )
            return Binary(op.text, left, right, op.pos)
        return left

    def sum(self) -> Expr:
        left = self.product()
        while self.tok.kind == "op" and self.tok.text in "+-":
            op = self.advance()
            left = Binary(op.text, left, self.product(), op.pos)
        return left

    def product(self) -> Expr:
        left = self.unary()
        while self.tok.kind == "op" and self.tok.text in "*/%":
            op = self.advance()
            left = Binary(op.text, left, self.unary(), op.pos)
        return left

    def unary(self) -> Expr:
        if self.at("op", "-"):
            op = self.advance()
            self.enter()
            operand = self.unary()
            self.depth -= 1
            return Unary("-", operand, op.pos)
        return self.primary()

    def primary(self) -> Expr:
        tok = self.tok
        if tok.kind == "num":
            self.advance()
            return Literal(tok.value, "double" if isinstance(tok.value, float) else "long", tok.pos)
        if tok.kind == "str":
            self.advance()
            return Literal(tok.value, "string", tok.pos)
        if tok.kind == "op" and tok.text == "(":
            self.advance()
            self.enter()
            inner = self.or_expr()
            self.depth -= 1
            self.expect("op", ")", "')'")
            return inner
        if tok.kind == "name":
            return self.name()
        raise ExprError(f"expected a value, found {_describe(tok)}", tok.pos)

    def name(self) -> Expr:
        tok = self.advance()
        if tok.text in ("true", "false"):
            return Literal(tok.text == "true", "bool", tok.pos)
        if tok.text in _KEYWORDS:
            raise ExprError(f"expected a value, found '{tok.text}'", tok.pos)
        if self.at("op", "("):
            return self.call(tok)
        if self.at("op", "."):
            self.advance()
            attr = self.tok
            if attr.kind != "name" or attr.text in _KEYWORDS:
                raise ExprError(f"expected an attribute name after '{tok.text}.'", attr.pos)
            self.advance()
            return Attr(tok.text, attr.text, tok.pos)
        raise ExprError(
            f"'{tok.text}' is neither 'variable.attribute' nor a function call", tok.pos
        )

    def call(self, name: Token) -> Expr:
        if name.text not in FUNCTIONS and name.text not in KLEENE_FUNCTIONS:
            known = ", ".join(FUNCTIONS + KLEENE_FUNCTIONS)
            raise ExprError(f"unknown function '{name.text}' (known: {known})", name.pos)
        self.expect("op", "(", "'('")
        self.enter()
        args: list[Expr] = []
        if not self.at("op", ")"):
            args.append(self.or_expr())
            while self.at("op", ","):
                self.advance()
                args.append(self.or_expr())
        self.depth -= 1
        self.expect("op", ")", "')' or ','")
        if name.text in KLEENE_FUNCTIONS:
            if len(args) != 1 or not isinstance(args[0], Attr):
                raise ExprError(f"{name.text}() takes one 'variable.attribute'", name.pos)
            return KleeneRef(name.text, args[0], name.pos)
        return Call(name.text, tuple(args), name.pos)


def _describe(tok: Token) -> str:
    return "end of text" if tok.kind == "end" else repr(tok.text)


def parse(text: str) -> Expr:
    """Parse predicate text into an expression tree, or raise `ExprError` with a position."""
    if not isinstance(text, str):
        raise ExprError("a predicate must be a string", 0)
    if len(text) > MAX_LENGTH:
        raise ExprError(f"predicate longer than {MAX_LENGTH} characters", MAX_LENGTH)
    if not text.strip():
        raise ExprError("empty predicate", 0)
    tree = _Parser(text).parse()
    check_depth(tree)
    return tree


def check_depth(tree: Expr) -> None:
    """Raise `ExprError` at the first node deeper than `MAX_TREE_DEPTH` (walked iteratively)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            raise ExprError(f"expression nested more than {MAX_TREE_DEPTH} levels deep "
                            "(each operator of a chain like a + b + c adds a level): split "
                            "it into several predicates", node.pos)
        stack.extend((child, depth + 1) for child in children(node))



def _lone_equals(text: str, i: int) -> str:
    """What a lone '=' most likely meant: `=<` and `=>` are `<=` and `>=` written backwards."""
    after = text[i + 1 : i + 2]
    if after in ("<", ">"):
        return f"'={after}' is not an operator; use '{after}='"
    if after == "!":
        return "'=!' is not an operator; use '!='"
    return "'=' is not an operator; use '==' to compare"
