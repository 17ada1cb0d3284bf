#!/usr/bin/env python3
"""Finds import loops between the files of each crate: no module calls back into its caller.

For every package under crates/ and examples/ (a directory with a Cargo.toml and a src/), the
check follows the `mod` declarations from each crate root (src/lib.rs, src/main.rs,
src/bin/*.rs) to map each file to its module path (foo.rs and foo/mod.rs are module `foo`),
then reads each file's references to other files of the same crate:

  * `use` declarations whose path starts with `crate::`, `super::`, `self::`, the name of a
    child module, or a name an earlier `use` bound to a module; grouped uses
    (`use crate::{a::{b, c}, d}`), `self` in groups, renames and globs included;
  * paths written in code: `crate::a::b::f(..)`, `super::x::Y`, `$crate::..` in macros,
    `child::f(..)`, and `m::f(..)` where `use crate::a::m;` bound `m`;
  * `$crate::m!`-style qualified macro calls, which go to the file that defines `macro_rules! m`.

A path goes to the file of the deepest module it names, as written: `crate::a::b::Item` is
a use of `a/b.rs` when that file exists, of `a.rs` (or `a/mod.rs`) when `b` is an item
there, and `crate::Item` of lib.rs even when lib.rs only re-exports `Item`. With
`--follow-reexports` a name a module imports or re-exports is followed to the file that
defines it instead (`crate::Options` -> options.rs). Either way a path that a `use` or
`pub use` leads into another crate (`crate::config::Duration` for `pub use
ferrowizard_config::Duration`) is no use of a file of this crate. A `use` that only brings
a module's name into scope (`use crate::server;`) is not a use by itself; the paths written
through that name are. `mod x;` declarations are not uses. `pub use` re-exports (any
`pub(..) use`) are uses, marked as re-exports: `--no-reexports` leaves them out, and the
summary gives the count both ways. A file's references to itself do not count. Comments,
string literals and items gated on `cfg(test)` (test modules, which legitimately
`use super::*`, also `cfg(all(test, ..))` and `#[cfg(test)] fn`s) are ignored.

A loop is a strongly connected component (Tarjan) of more than one file: a child that uses
its parent's items while the parent uses the child's is one. The check prints each loop with
its files and, for each edge within it, the first reference that makes it (line and path;
`[pub use]` when only re-exports make it), then `files in loops: N, loops: M`.

    python3 .ci/imports.py                   # print the loops
    python3 .ci/imports.py --check N         # exit 1 when more than N files are in loops
    python3 .ci/imports.py --no-reexports    # the same without `pub use` edges
    python3 .ci/imports.py --follow-reexports
    python3 .ci/imports.py --dot | dot -Tsvg > loops.svg   # the edges within loops
    python3 .ci/imports.py --edges           # every edge between files, for a closer look

`--check N` holds a ceiling that only goes down: lower N in the commit that breaks a loop
(the check says so when the count is under N). Use the same flags for the ceiling as when
it was set. Only the Python standard library is needed; nothing is built.

Not handled: `#[path]` attributes (none in src/ today; the check warns when one appears),
unqualified macro calls (`name!` by textual scope), names brought in by glob imports, and
`use` declarations inside function bodies are taken as the module's.
"""

import argparse
import os
import re
import signal
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---------------------------------------------------------------------------- lexing


def clean(text):
    """`text` with comments, string and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)

    def blank(s):
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif c == "/" and text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif c in "rbc" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            # raw strings r"..", r#".."#, br#".."#, byte/C strings b"..", c"..", byte char b'.'
            m = re.compile(r'(?:br|cr|r)(#*)"').match(text, i)
            if m:
                end = text.find('"' + m.group(1), m.end())
                end = n if end < 0 else end + 1 + len(m.group(1))
                out.append(blank(text[i:end]))
                i = end
                continue
            if c in "bc" and i + 1 < n and text[i + 1] in "\"'":
                out.append(" ")
                i += 1
                continue
            m = re.compile(r"[A-Za-z0-9_]+").match(text, i)
            out.append(m.group(0))
            i = m.end()
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i : j + 1]))
            i = j + 1
        elif c == "'":
            # a char literal ('a', '\n', '\u{..}', '{') or a lifetime/label ('a, 'static)
            if i + 1 < n and text[i + 1] == "\\":
                j = i + 3  # past the escaped character, which may be a quote
                while j < n and text[j] != "'":
                    j += 1
                out.append(blank(text[i : j + 1]))
                i = j + 1
            elif i + 2 < n and text[i + 2] == "'":
                out.append(blank(text[i : i + 3]))
                i += 3
            else:
                out.append(c)
                i += 1
        elif c.isalnum() or c == "_":
            m = re.compile(r"[A-Za-z0-9_]+").match(text, i)
            if m is None:  # a non-ASCII letter
                out.append(c)
                i += 1
            else:
                out.append(m.group(0))
                i = m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


TOKEN = re.compile(r"r#[A-Za-z_]\w*|\$?[A-Za-z_]\w*|\d\w*|::|\S")


def tokenize(text):
    """[(token, line)] of cleaned source."""
    tokens, line, pos = [], 1, 0
    for m in TOKEN.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        tok = m.group(0)
        tokens.append((tok[2:] if tok.startswith("r#") else tok, line))
    return tokens


def is_ident(tok):
    return bool(re.fullmatch(r"[A-Za-z_]\w*", tok))


OPEN, CLOSE = "([{", ")]}"


def matching(tokens, i):
    """Index of the bracket closing the one at `i`."""
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j][0]
        if t in OPEN:
            depth += 1
        elif t in CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1


# ------------------------------------------------------------------ cfg(test) items


def cfg_needs_test(toks):
    """Whether a cfg predicate (tokens inside `cfg(..)`) holds only under `cfg(test)`."""

    def parse(i):  # -> (needs_test, next index)
        t = toks[i][0] if i < len(toks) else ""
        if t in ("all", "any", "not") and i + 1 < len(toks) and toks[i + 1][0] == "(":
            j, kids = i + 2, []
            while j < len(toks) and toks[j][0] != ")":
                if toks[j][0] == ",":
                    j += 1
                    continue
                v, j = parse(j)
                kids.append(v)
            j += 1
            if t == "all":
                return any(kids), j
            if t == "any":
                return bool(kids) and all(kids), j
            return False, j
        # `test`, `feature = ".."` (string blanked), `loom`, ...
        j = i + 1
        if j < len(toks) and toks[j][0] == "=":
            j += 1
        return t == "test", j

    return parse(0)[0] if toks else False


ITEM_TO_SEMI = {"use", "const", "static", "type", "let"}
ITEM_TO_BLOCK = {"mod", "fn", "impl", "struct", "enum", "trait", "union", "macro_rules"}
QUALIFIERS = {"pub", "unsafe", "async", "extern", "default", "crate"}


def drop_test_items(tokens):
    """Tokens without the items under a `#[cfg(test)]`-like attribute."""
    out, i, n = [], 0, len(tokens)
    # `#![cfg(test)]` at the top: the whole file is a test.
    if n > 4 and tokens[0][0] == "#" and tokens[1][0] == "!" and tokens[2][0] == "[":
        k = 0
        while k + 2 < n and tokens[k][0] == "#" and tokens[k + 1][0] == "!" and tokens[k + 2][0] == "[":
            end = matching(tokens, k + 2)
            body = tokens[k + 3 : end]
            if body and body[0][0] == "cfg" and cfg_needs_test(body[2:-1]):
                return []
            k = end + 1
    while i < n:
        t = tokens[i][0]
        if t == "#" and i + 1 < n and tokens[i + 1][0] == "[":
            end = matching(tokens, i + 1)
            body = tokens[i + 2 : end]
            if body and body[0][0] == "cfg" and len(body) > 1 and body[1][0] == "(" and cfg_needs_test(body[2:-1]):
                j = end + 1
                while j + 1 < n and tokens[j][0] == "#" and tokens[j + 1][0] == "[":
                    j = matching(tokens, j + 1) + 1
                k = j
                while k < n and tokens[k][0] in QUALIFIERS:
                    k += 1
                    if k < n and tokens[k][0] == "(" and tokens[k - 1][0] == "pub":
                        k = matching(tokens, k) + 1
                kw = tokens[k][0] if k < n else ""
                if kw in ITEM_TO_SEMI or kw in ITEM_TO_BLOCK:
                    while k < n:
                        tk = tokens[k][0]
                        if tk == ";":
                            break
                        if tk == "{" and kw in ITEM_TO_BLOCK:
                            k = matching(tokens, k)
                            break
                        if tk in OPEN:
                            k = matching(tokens, k)
                        k += 1
                    i = k + 1
                    continue
            out.extend(tokens[i : end + 1])
            i = end + 1
            continue
        out.append(tokens[i])
        i += 1
    return out


# ------------------------------------------------------------------------- crates


class File:
    def __init__(self, path, module, dir_owner):
        self.path = path  # relative to the package
        self.module = module  # tuple of names from the crate root
        self.dir_owner = dir_owner  # lib.rs / main.rs / mod.rs: children sit beside it
        self.tokens = []
        self.scopes = []  # per token: the module path it is in (inline `mod x { }` counted)
        self.module_level = []  # per token: outside any fn body, impl or other block


class Crate:
    """One crate (lib, bin) of a package: its module tree and its files."""

    def __init__(self, package, root_file):
        self.package = package
        self.root = root_file
        self.modules = {}  # module path -> file path (an inline module: its file)
        self.children = defaultdict(set)  # module path -> names of child modules
        self.files = {}  # file path -> File
        self.macros = {}  # macro_rules name -> file path
        self.self_names = {"crate", "$crate"}  # `extern crate self as x;` adds x


def read_tokens(abspath):
    with open(abspath, encoding="utf-8") as f:
        text = f.read()
    cleaned = clean(text)
    if re.search(r"#\s*\[\s*path\s*=", cleaned):
        print(f"imports.py: warning: {abspath} has a #[path] attribute, which this check does not follow",
              file=sys.stderr)
    return drop_test_items(tokenize(cleaned))


def load_crate(pkg_dir, package, root_rel, follow):
    crate = Crate(package, root_rel)
    crate.follow = follow
    pending = [(root_rel, ())]
    while pending:
        rel, module = pending.pop()
        if rel in crate.files:
            continue
        name = os.path.basename(rel)
        dir_owner = rel == root_rel or name == "mod.rs"
        f = File(rel, module, dir_owner)
        f.tokens = read_tokens(os.path.join(pkg_dir, rel))
        crate.files[rel] = f
        crate.modules[module] = rel
        base = os.path.dirname(rel) if dir_owner else rel[: -len(".rs")]
        # Walk the braces: inline modules open scopes; `mod x;` names a file.
        stack = []  # entries: name of an inline module, or None
        want_mod = None
        toks = f.tokens
        for idx, (t, _) in enumerate(toks):
            scope = module + tuple(s for s in stack if s)
            f.scopes.append(scope)
            f.module_level.append(all(stack))
            if t == "mod" and idx + 1 < len(toks) and is_ident(toks[idx + 1][0]):
                child = toks[idx + 1][0]
                after = toks[idx + 2][0] if idx + 2 < len(toks) else ""
                crate.children[scope].add(child)
                if after == "{":
                    want_mod = child
                    crate.modules.setdefault(scope + (child,), rel)
                elif after == ";":
                    sub = os.path.join(base, *[s for s in stack if s])
                    for cand in (os.path.join(sub, child + ".rs"), os.path.join(sub, child, "mod.rs")):
                        if os.path.isfile(os.path.join(pkg_dir, cand)):
                            pending.append((cand, scope + (child,)))
                            break
                    else:
                        print(f"imports.py: warning: {package}/{rel}: no file for `mod {child};`", file=sys.stderr)
            elif t == "{":
                stack.append(want_mod)
                want_mod = None
            elif t == "}":
                if stack:
                    stack.pop()
            elif t == "macro_rules" and idx + 2 < len(toks) and toks[idx + 1][0] == "!":
                crate.macros.setdefault(toks[idx + 2][0], rel)
            elif (t == "extern" and rel == root_rel and idx + 4 < len(toks)
                  and [x[0] for x in toks[idx + 1 : idx + 4]] == ["crate", "self", "as"]):
                crate.self_names.add(toks[idx + 4][0])
    return crate


def find_packages(root):
    pkgs = []
    for top in ("crates", "examples"):
        d = os.path.join(root, top)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            p = os.path.join(d, name)
            if os.path.isfile(os.path.join(p, "Cargo.toml")) and os.path.isdir(os.path.join(p, "src")):
                pkgs.append((os.path.join(top, name), p))
    return pkgs


def crate_roots(pkg_dir):
    roots = [r for r in ("src/lib.rs", "src/main.rs") if os.path.isfile(os.path.join(pkg_dir, r))]
    bindir = os.path.join(pkg_dir, "src", "bin")
    if os.path.isdir(bindir):
        for name in sorted(os.listdir(bindir)):
            if name.endswith(".rs"):
                roots.append("src/bin/" + name)
            elif os.path.isfile(os.path.join(bindir, name, "main.rs")):
                roots.append(f"src/bin/{name}/main.rs")
    return roots


# ---------------------------------------------------------------------- references


def parse_use_tree(toks, i, prefix, out):
    """Expands the use tree at toks[i]; appends (segments, bound name or None). Returns end."""
    segs = list(prefix)
    n = len(toks)
    while i < n:
        t = toks[i][0]
        if t == "{":
            i += 1
            while i < n and toks[i][0] != "}":
                if toks[i][0] == ",":
                    i += 1
                    continue
                i = parse_use_tree(toks, i, segs, out)
            return i + 1
        if t == "*":
            out.append((segs + ["*"], None))
            return i + 1
        if t == "::":
            i += 1
            continue
        if is_ident(t) or t == "$crate":
            segs.append(t)
            i += 1
            if i < n and toks[i][0] == "::":
                continue
            alias = segs[-1]
            if i + 1 < n and toks[i][0] == "as":
                alias = toks[i + 1][0]
                i += 2
            if segs[-1] == "self" and len(segs) > 1:
                segs = segs[:-1]
                if alias == "self":
                    alias = segs[-1]
            out.append((segs, alias))
            return i
        return i + 1  # unexpected token: stop here
    return i


class Ref:
    def __init__(self, line, text, reexport):
        self.line, self.text, self.reexport = line, text, reexport


def collect_uses(crate):
    """Reads every file's `use` declarations: f.uses, and crate.bindings for lookups."""
    crate.bindings = defaultdict(dict)  # module path -> name -> (segments, scope)
    for f in crate.files.values():
        toks, n = f.tokens, len(f.tokens)
        f.uses = []  # (start, end, line, reexport, [(segments, bound name)], scope)
        f.local = defaultdict(dict)  # scope -> name -> (segments, scope): every use, fn bodies too
        i = 0
        while i < n:
            if toks[i][0] == "use" and (i == 0 or toks[i - 1][0] != "::"):
                j = i - 1
                if j >= 0 and toks[j][0] == ")":
                    while j >= 0 and toks[j][0] != "(":
                        j -= 1
                    j -= 1
                reexport = j >= 0 and toks[j][0] == "pub"
                trees, start = [], i + 1
                lead_colons = start < n and toks[start][0] == "::"
                end = parse_use_tree(toks, start + lead_colons, [], trees)
                while end < n and toks[end][0] != ";":
                    end += 1
                scope = f.scopes[i]
                if lead_colons:  # `use ::x::y` names another crate's item
                    trees = [(["::"] + segs, alias) for segs, alias in trees]
                else:
                    f.uses.append((i, end, toks[i][1], reexport, trees, scope))
                for segs, alias in trees:
                    if alias and alias != "_":
                        f.local[scope][alias] = (segs, scope)
                        if f.module_level[i]:
                            crate.bindings[scope].setdefault(alias, (segs, scope))
                i = end + 1
                continue
            i += 1


def resolve_start(crate, scope, segs, names, seen=frozenset()):
    """Resolves `segs` written in `scope`, where `names` are the `use` bindings in sight.

    Returns ("module", path) for a module, ("item", path) for an item of the module at
    `path`, or None for a path into another crate (or one this check does not follow).
    """
    if not segs:
        return None
    head, rest = segs[0], segs[1:]
    if head in crate.self_names:
        return resolve_rest(crate, (), rest, seen)
    if head in ("self", "super"):
        return resolve_rest(crate, scope, segs, seen)
    if head in crate.children.get(scope, ()):
        return resolve_rest(crate, scope + (head,), rest, seen)
    if head in names.get(scope, {}):
        bsegs, bscope = names[scope][head]
        key = (bscope, head)
        if key in seen or (len(bsegs) == 1 and bsegs[0] == head):
            # `pub(crate) use m;` re-exports a macro_rules defined here; `pub use serde;` a crate
            return ("item", bscope) if head in crate.macros else None
        r = resolve_start(crate, bscope, bsegs, crate.bindings, seen | {key})
        if r is None or not rest:
            return r
        if r[0] == "module":
            return resolve_rest(crate, r[1], rest, seen)
        return r
    return None


def resolve_rest(crate, module, segs, seen):
    cur = module
    for k, s in enumerate(segs):
        if s == "super":
            if not cur:
                return None
            cur = cur[:-1]
        elif s == "self":
            continue
        elif s == "*":
            return ("item", cur)
        elif s in crate.children.get(cur, ()):
            cur = cur + (s,)
        elif s in crate.bindings.get(cur, {}):
            # a name this module imports or re-exports
            r = resolve_start(crate, cur, [s] + list(segs[k + 1 :]), crate.bindings, seen)
            if r is None:
                return None  # it names another crate's item: no file of this crate
            return r if crate.follow else ("item", cur)
        else:
            return ("item", cur)
    return ("module", cur)


def target_file(crate, r, name):
    """The file a resolution lands in; a #[macro_export] macro (at the root) where it is defined."""
    if r[0] == "item" and name in crate.macros and (r[1] == () or crate.modules[r[1]] == crate.macros[name]):
        return crate.macros[name]
    return crate.modules[r[1]]


def references(crate, f):
    """{target file: [Ref]} for the file `f` of `crate`."""
    toks, scopes = f.tokens, f.scopes
    n = len(toks)
    refs = defaultdict(list)

    def add(target, line, text, reexport):
        if target != f.path:
            refs[target].append(Ref(line, text, reexport))

    in_use = set()
    for start, end, line, reexport, trees, scope in f.uses:
        in_use.update(range(start, end + 1))
        for segs, alias in trees:
            r = resolve_start(crate, scope, segs, f.local)
            if r is None:
                continue
            # `use crate::m;` only binds a name (the paths written through it are the uses),
            # unless it is re-exported; `use m::*` uses m's items.
            if r[0] == "module" and not (reexport or segs[-1] == "*"):
                continue
            add(target_file(crate, r, segs[-1]), line, "use " + "::".join(segs), reexport)

    # Paths in code: crate::a::f(..), super::x::Y, $crate::m!, child::f(..), alias::f(..).
    i = 0
    while i < n:
        if i in in_use:
            i += 1
            continue
        t = toks[i][0]
        prev = toks[i - 1][0] if i > 0 else ""
        nxt = toks[i + 1][0] if i + 1 < n else ""
        if nxt == "::" and (is_ident(t) or t == "$crate") and prev not in ("::", ".", "in"):
            scope = scopes[i]
            head_ok = t in crate.self_names or t in ("self", "super") or t in crate.children.get(scope, ())
            if not head_ok and t in f.local.get(scope, {}):
                # a name bound by `use` to a module (`use crate::ticker;` .. `ticker::f()`);
                # one bound to an item is the use's reference already
                r = resolve_start(crate, scope, [t], f.local)
                head_ok = r is not None and r[0] == "module"
            if head_ok:
                segs, j = [t], i + 1
                while j + 1 < n and toks[j][0] == "::" and is_ident(toks[j + 1][0]):
                    segs.append(toks[j + 1][0])
                    j += 2
                is_macro = j < n and toks[j][0] == "!" and not (j + 1 < n and toks[j + 1][0] == "=")
                r = resolve_start(crate, scope, segs, f.local)
                if r is not None:
                    add(target_file(crate, r, segs[-1]), toks[i][1], "::".join(segs) + ("!" if is_macro else ""), False)
                i = j
                continue
        i += 1
    return refs


# -------------------------------------------------------------------------- graph


def tarjan(nodes, edges):
    """Strongly connected components of the graph (iteratively)."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for v0 in nodes:
        if v0 in index:
            continue
        work = [(v0, iter(sorted(edges.get(v0, ()))))]
        index[v0] = low[v0] = counter[0]
        counter[0] += 1
        stack.append(v0)
        on.add(v0)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


def analyse(root, follow=False):
    """[(package, files, edges)]: edges[(a, b)] = [Ref], files relative to the package."""
    out = []
    for package, pkg_dir in find_packages(root):
        files, edges = set(), defaultdict(list)
        for root_rel in crate_roots(pkg_dir):
            crate = load_crate(pkg_dir, package, root_rel, follow)
            collect_uses(crate)
            for rel, f in crate.files.items():
                files.add(rel)
                for target, refs in references(crate, f).items():
                    edges[(rel, target)].extend(refs)
        on_disk = {os.path.relpath(os.path.join(dp, fn), pkg_dir)
                   for dp, _, fns in os.walk(os.path.join(pkg_dir, "src")) for fn in fns if fn.endswith(".rs")}
        for rel in sorted(on_disk - files):
            print(f"imports.py: warning: {package}/{rel} is in no crate's module tree", file=sys.stderr)
        out.append((package, sorted(files), edges))
    return out


def loops(files, edges, reexports):
    graph = defaultdict(set)
    for (a, b), refs in edges.items():
        if reexports or any(not r.reexport for r in refs):
            graph[a].add(b)
    comps = [c for c in tarjan(files, graph) if len(c) > 1]
    return sorted(comps, key=lambda c: (-len(c), c)), graph


def describe(refs, reexports):
    refs = sorted((r for r in refs if reexports or not r.reexport), key=lambda r: (r.reexport, r.line))
    first = refs[0]
    more = f" (+{len(refs) - 1} more)" if len(refs) > 1 else ""
    tag = " [pub use]" if all(r.reexport for r in refs) else ""
    return f"line {first.line}: {first.text}{more}{tag}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", type=int, metavar="N", help="exit 1 when more than N files are in loops")
    ap.add_argument("--no-reexports", action="store_true", help="leave out `pub use` re-export edges")
    ap.add_argument("--follow-reexports", action="store_true",
                    help="resolve an item through `use`/`pub use` to the file that defines it")
    ap.add_argument("--dot", action="store_true", help="print a Graphviz drawing of the edges within loops")
    ap.add_argument("--edges", action="store_true", help="print every edge between files")
    ap.add_argument("--root", default=ROOT, help="the workspace (default: this script's ..)")
    args = ap.parse_args(argv)
    reexports = not args.no_reexports
    result = analyse(args.root, args.follow_reexports)

    if args.edges:
        for package, files, edges in result:
            for (a, b), refs in sorted(edges.items()):
                if reexports or any(not r.reexport for r in refs):
                    print(f"{package}: {a} -> {b}  {describe(refs, reexports)}")
        return 0

    if args.dot:
        print("digraph imports {\n  rankdir=LR;\n  node [shape=box, fontname=monospace];")
        for package, files, edges in result:
            comps, graph = loops(files, edges, reexports)
            for k, comp in enumerate(comps):
                cid = re.sub(r"\W", "_", f"{package}_{k}")
                print(f'  subgraph cluster_{cid} {{\n    label="{package} loop {k + 1}";')
                members = set(comp)
                for a in comp:
                    print(f'    "{package}/{a}" [label="{a}"];')
                for a in comp:
                    for b in sorted(graph[a] & members):
                        refs = edges[(a, b)]
                        style = ' [style=dashed, label="pub use"]' if all(r.reexport for r in refs) else ""
                        print(f'    "{package}/{a}" -> "{package}/{b}"{style};')
                print("  }")
        print("}")
        return 0

    totals = {}
    for mode in (True, False):
        nfiles = nloops = 0
        for package, files, edges in result:
            comps, _ = loops(files, edges, mode)
            nfiles += sum(len(c) for c in comps)
            nloops += len(comps)
        totals[mode] = (nfiles, nloops)

    for package, files, edges in result:
        comps, graph = loops(files, edges, reexports)
        for comp in comps:
            print(f"{package}: loop of {len(comp)} files")
            members = set(comp)
            for a in comp:
                print(f"  {a}")
                for b in sorted(graph[a] & members):
                    print(f"    -> {b}  {describe(edges[(a, b)], reexports)}")
    nfiles, nloops = totals[reexports]
    other = totals[not reexports]
    label = "without `pub use` re-exports" if reexports else "with `pub use` re-exports"
    print(f"files in loops: {nfiles}, loops: {nloops}"
          f"  ({label}: files in loops: {other[0]}, loops: {other[1]})")
    if args.check is not None and nfiles > args.check:
        print(f"imports.py: {nfiles} files are in import loops, more than the ceiling of {args.check}",
              file=sys.stderr)
        return 1
    if args.check is not None and nfiles < args.check:
        print(f"imports.py: {nfiles} files are in loops, under the ceiling of {args.check}: lower it to {nfiles}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly
    sys.exit(main())
