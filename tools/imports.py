#!/usr/bin/env python3
"""The import graph of one crate's src/, by file and by folder, and its circles.

Every .rs file under CRATE/src is a module (lib.rs the root, foo.rs and
foo/mod.rs module foo). A file imports another when it uses something of it:
`use crate::|super::|self::..` (nested braces, `pub use`), a child module or
an imported module (`pub use x::Y`, `x::f()`), a path in code such as
`crate::a::b::f()`. A path resolves to the file of its longest prefix that
is a module (`crate::nfs4::Nfs4Server` is nfs4/mod.rs); `mod x;` alone, or
importing a module's name, imports nothing. Comments, strings, #[cfg(test)]
items and test files (a `tests` module, tests.rs, `#[cfg(test)] mod x;`) are
left out. A file's folder is its directory under src ("." for lib.rs).

usage: tools/imports.py [--crate crates/server] [--cycles] [--folders]
         [--dot] [--check] [--max-lines 800] [--deny FROM:TO ...]
         [--depth N] [--file PATH] [--tests] [--macros]
  --cycles   the circles (strongly connected components) of files; for those
             across folders, the shortest cycle through a cross-folder import
             and all such imports in the circle (the default report)
  --folders  the folders each folder imports (counting file imports), and
             the circles of folders
  --dot      the folder graph for Graphviz, circle edges red
  --check    exit 1 if a circle spans folders, if a file has more than
             --max-lines lines of code (not blank, comment or test), or if a
             --deny rule is broken
  --deny FROM:TO  no file whose path under src starts with FROM may import
             one whose path starts with TO (e.g. v3/:nfs4/); implies --check
  --depth N  a folder is the first N levels only (nfs4/ops is nfs4 at 1)
  --file P   what P (e.g. nfs4/deleg.rs) imports and what imports it
  --tests    keep test files and #[cfg(test)] items
  --macros   a local macro_rules! pasting a module into a path (`$m::run`)
             uses each child module named in its invocations
"""
import argparse
import os
import re
import signal
import sys
from collections import defaultdict, deque

# --- lexing ---------------------------------------------------------------------

LEX = re.compile(r'''//[^\n]*|/\*|(?<!\w)[bc]?r(\#*)"|"(?:\\.|[^"\\])*"'''
                 r"""|(?<!\w)b?'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'""", re.S)
CFG_TEST = re.compile(r'#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]')
ATTR = re.compile(r'\s*#\s*\[')
MOD_DECL = re.compile(r'\s*(?:pub\s*(?:\([^)]*\))?\s*)?mod\s+(\w+)\s*;')
MACRO_DEF = re.compile(r'macro_rules!\s*(\w+)\s*\{')
USE = re.compile(r'\buse\b([^;]*);')
VIS_IN = re.compile(r'\bpub\s*\(\s*in\s[^)]*\)')
TOKEN = re.compile(r'::|[{},*]|\w+')
PATH = re.compile(r'\w+(?:\s*::\s*\w+)+')


def fill(s, ch):
    return re.sub(r'[^\n]', ch, s)


def clean(text):
    """Comments become spaces, string and char literals '"'s; offsets and
    line breaks stay."""
    out, i = [], 0
    while (m := LEX.search(text, i)):
        j = m.end()
        if m.group() == '/*':                       # they nest
            depth = 1
            while j < len(text) and depth:
                step = text[j:j + 2]
                depth += {'/*': 1, '*/': -1}.get(step, 0)
                j += 2 if step in ('/*', '*/') else 1
        elif m.group(1) is not None:                # r#"..."#
            end = text.find('"' + m.group(1), j)
            j = len(text) if end < 0 else end + 1 + len(m.group(1))
        out += [text[i:m.start()], fill(text[m.start():j], ' ' if m.group()[0] == '/' else '"')]
        i = j
    return ''.join(out) + text[i:]


def match_bracket(s, i):
    """The index just past the bracket closing the one at s[i]."""
    depth, close = 0, {'{': '}', '(': ')', '[': ']'}[s[i]]
    for j in range(i, len(s)):
        depth += (s[j] == s[i]) - (s[j] == close)
        if depth == 0:
            return j + 1
    return len(s)


def strip_cfg_test(s):
    """Blanks each #[cfg(test)] item, up to its first ';' outside brackets
    or the '}' matching its first '{'; returns the text and the names of
    the `#[cfg(test)] mod x;` declared."""
    test_mods = set()
    for m in reversed(list(CFG_TEST.finditer(s))):
        j = m.end()
        while (a := ATTR.match(s, j)):              # more attributes
            j = match_bracket(s, a.end() - 1)
        if (d := MOD_DECL.match(s, j)):
            test_mods.add(d.group(1))
        depth = 0
        while j < len(s) and not (s[j] == ';' and depth == 0):
            if s[j] == '{' and depth == 0:
                j = match_bracket(s, j) - 1
                break
            depth += (s[j] in '([') - (s[j] in ')]')
            j += 1
        s = s[:m.start()] + fill(s[m.start():j + 1], ' ') + s[j + 1:]
    return s, test_mods


def parse_use_tree(tokens, i, prefix, out):
    """Appends (segments, name bound, glob?) for each leaf of the use tree
    at tokens[i]; returns the index after it."""
    segs = []
    while True:
        tok = tokens[i]
        if tok == '{':
            i += 1
            while tokens[i] not in ('}', ';'):
                j = parse_use_tree(tokens, i, prefix + segs, out)
                i = j if j > i else i + 1
                i += tokens[i] == ','
            return i + 1
        if tok == '*':
            out.append((prefix + segs, None, True))
            return i + 1
        if not re.match(r'\w', tok):
            return i
        segs.append(tok)
        if tokens[i + 1] != '::':
            break
        i += 2
    path = prefix if segs == ['self'] else prefix + segs
    name = path[-1] if path else None
    if tokens[i + 1] == 'as':
        name, i = tokens[i + 2], i + 2
    out.append((path, name, False))
    return i + 1


# --- the crate ------------------------------------------------------------------

class Crate:
    def __init__(self, root, with_tests=False, macros=False):
        self.src, self.with_tests, self.macros = os.path.join(root, 'src'), with_tests, macros
        self.mods = {}                  # module path (tuple) -> file under src
        self.files = {}                 # file -> {mod, text, test, loc, test_mods}
        self.edges = defaultdict(dict)  # file -> {file: [paths used]}
        self.warnings = []
        self._read()
        for f in sorted(self.files):
            if not self.files[f]['test']:
                self._scan(f)

    def _read(self):
        has_lib = os.path.exists(os.path.join(self.src, 'lib.rs'))
        for dirpath, dirs, names in os.walk(self.src):
            dirs.sort()
            for name in sorted(n for n in names if n.endswith('.rs')):
                rel = os.path.relpath(os.path.join(dirpath, name), self.src).replace(os.sep, '/')
                parts = rel.split('/')
                if parts[0] == 'bin' and len(parts) > 1 or rel == 'main.rs' and has_lib:
                    continue                    # crates of their own
                if rel in ('lib.rs', 'main.rs'):
                    mod = ()
                else:
                    mod = tuple(parts[:-1] + ([] if name == 'mod.rs' else [name[:-3]]))
                if mod in self.mods:
                    self.warnings.append(f'{rel} and {self.mods[mod]} are both module {"::".join(mod)}')
                    continue
                with open(os.path.join(dirpath, name), encoding='utf-8', errors='replace') as fh:
                    text = clean(fh.read())
                test = '#![cfg(test)]' in re.sub(r'\s', '', text) or 'tests' in mod or name == 'tests.rs'
                test_mods = set()
                if not self.with_tests:
                    text, test_mods = strip_cfg_test(text)
                self.mods[mod] = rel
                self.files[rel] = dict(mod=mod, text=text, test=test, test_mods=test_mods,
                                       loc=sum(1 for line in text.splitlines() if line.strip()))
        test_mods = {i['mod'] + (m,) for i in self.files.values() for m in i['test_mods']}
        for f, info in self.files.items():
            mod = info['mod']
            info['test'] = not self.with_tests and (
                info['test'] or any(mod[:k] in test_mods for k in range(1, len(mod) + 1)))
            parent = self.mods.get(mod[:-1]) if mod else None
            if parent and not info['test'] and not re.search(
                    r'\bmod\s+%s\s*[;{]' % mod[-1], self.files[parent]['text']):
                self.warnings.append(f'{f}: no `mod {mod[-1]}` in {parent}')

    def resolve(self, path):
        """The file of the longest prefix of path that is a module, and its length."""
        for k in range(len(path), -1, -1):
            if tuple(path[:k]) in self.mods:
                return self.mods[tuple(path[:k])], k
        return None, 0

    def _absolute(self, mod, segs, aliases, globs):
        """The path from the crate root that segs, written in mod, names;
        None for other crates."""
        first, k = segs[0], 0
        if first == 'crate':
            return segs[1:]
        if first == 'self':
            return list(mod) + segs[1:]
        if first == 'super':
            while k < len(segs) and segs[k] == 'super':
                k += 1
            return list(mod[:-k]) + segs[k:] if k <= len(mod) else None
        if mod + (first,) in self.mods:
            return list(mod) + segs
        if first in aliases:
            return aliases[first] + segs[1:]
        for g in globs:                 # a module brought in by `use g::*`
            if tuple(g) + (first,) in self.mods:
                return g + segs
        return None

    def _edge(self, src, path, used):
        dst = self.resolve(path)[0]
        if dst and dst != src and (self.with_tests or not self.files[dst]['test']):
            self.edges[src].setdefault(dst, []).append(used)

    def _scan(self, f):
        mod, text = self.files[f]['mod'], VIS_IN.sub(' ', self.files[f]['text'])
        leaves = []
        for m in USE.finditer(text):
            tokens = TOKEN.findall(m.group(1)) + [';'] * 3
            if tokens[0] != '::':
                parse_use_tree(tokens, 0, [], leaves)
        aliases, globs = {}, []
        for _ in range(3):              # a use may start with what another imported
            pending, leaves = leaves, []
            for segs, name, glob in pending:
                path = self._absolute(mod, segs, aliases, globs) if segs else None
                if path is None:
                    leaves.append((segs, name, glob))
                    continue
                if name and name not in ('self', '_'):
                    aliases[name] = path
                if glob:
                    globs.append(path)
                if glob or self.resolve(path)[1] < len(path):   # not just a module's name
                    self._edge(f, path, '::'.join(segs) + '::*' * glob)
        code = USE.sub(lambda m: fill(m.group(), ' '), text)
        for m in PATH.finditer(code):
            before = code[max(0, m.start() - 200):m.start()].rstrip()[-1:]
            if before and (before in ':$.' or before.isalnum() or before == '_'):
                continue                    # the middle of a path, or a method
            segs = re.split(r'\s*::\s*', m.group())
            path = self._absolute(mod, segs, aliases, globs)
            if path is not None:
                self._edge(f, path, '::'.join(segs))
        for m in MACRO_DEF.finditer(code if self.macros else ''):
            body = code[m.end() - 1:match_bracket(code, m.end() - 1)]
            if re.search(r'\$(?!crate\b)\w+\s*::', body):
                for call in re.finditer(r'\b%s!\s*[({[]' % m.group(1), code):
                    args = code[call.end() - 1:match_bracket(code, call.end() - 1)]
                    for name in sorted(set(re.findall(r'\b[a-z_]\w*', args))):
                        if mod + (name,) in self.mods:
                            self._edge(f, list(mod) + [name], f'{m.group(1)}!(.. {name} ..)')

    def graph(self):
        return {f: set(self.edges.get(f, ())) for f, i in self.files.items() if not i['test']}


# --- graphs ---------------------------------------------------------------------

def tarjan(graph):
    """The strongly connected components, without recursion."""
    index, low, on, stack, sccs = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = []

        def visit(v):
            index[v] = low[v] = len(index)
            stack.append(v)
            on.add(v)
            work.append((v, iter(sorted(graph.get(v, ())))))
        visit(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    visit(w)
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                scc = []
                while not scc or scc[-1] != v:
                    scc.append(stack.pop())
                    on.discard(scc[-1])
                sccs.append(sorted(scc))
    return sccs


def shortest_path(graph, start, goal, within):
    prev, queue = {start: None}, deque([start])
    while queue and goal not in prev:
        v = queue.popleft()
        for w in sorted(graph.get(v, set()) & within - prev.keys()):
            prev[w] = v
            queue.append(w)
    path, v = [], goal if goal in prev else None
    while v is not None:
        path, v = [v] + path, prev[v]
    return path


def shortest_cycle(graph, scc, edge_ok=lambda a, b: True):
    """The shortest cycle inside scc through an edge a -> b that edge_ok
    accepts, as [a, b, .., a]."""
    best = None
    for a in scc:
        for b in sorted(graph[a] & set(scc)):
            back = edge_ok(a, b) and shortest_path(graph, b, a, set(scc))
            if back and (best is None or len(back) + 1 < len(best)):
                best = [a] + back
    return best


# --- reports --------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--crate', default='crates/server')
    for flag in ('--cycles', '--folders', '--dot', '--check', '--tests', '--macros'):
        ap.add_argument(flag, action='store_true')
    ap.add_argument('--max-lines', type=int, default=800)
    ap.add_argument('--deny', action='append', default=[], metavar='FROM:TO')
    ap.add_argument('--depth', type=int, default=0)
    ap.add_argument('--file')
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.crate, 'src')):
        sys.exit(f'{args.crate}/src: no such directory')
    crate = Crate(args.crate, args.tests, args.macros)
    graph = crate.graph()
    for w in crate.warnings:
        print(f'warning: {w}', file=sys.stderr)

    def folder(f):
        parts = f.split('/')[:-1]
        return '/'.join(parts[:args.depth] if args.depth else parts) or '.'

    def edge(a, b):
        return f'{a} -> {b} ({crate.edges[a][b][0]})'

    def crosses(a, b):
        return folder(a) != folder(b)

    sccs = sorted((s for s in tarjan(graph) if len(s) > 1), key=len, reverse=True)
    crossing = [s for s in sccs if len({folder(f) for f in s}) > 1]
    if args.cycles or not (args.folders or args.dot or args.check or args.deny or args.file):
        print(f'{len(graph)} files, {sum(map(len, graph.values()))} imports between them; '
              f'{len(sccs)} circles of files')
        for s in sccs:
            print(f'\n{len(s)} files in {len({folder(f) for f in s})} folder(s):')
            print(''.join(f'  {f}\n' for f in s), end='')
        print(f'\n{len(crossing)} circles cross folders')
        for s in crossing:
            cycle = shortest_cycle(graph, s, crosses)
            print(f'\n{len(s)} files in {", ".join(sorted({folder(f) for f in s}))}'
                  f'\n  cycle: {" -> ".join(cycle)}')
            print(''.join(f'    {edge(a, b)}\n' for a, b in zip(cycle, cycle[1:])), end='')
            print('  every import across folders inside it:')
            print(''.join(f'    {edge(a, b)}\n' for a in s for b in sorted(graph[a] & set(s))
                          if crosses(a, b)), end='')

    fgraph = defaultdict(lambda: defaultdict(int))
    for a in graph:
        fgraph[folder(a)]
        for b in graph[a]:
            if crosses(a, b):
                fgraph[folder(a)][folder(b)] += 1
    fsets = {a: set(bs) for a, bs in fgraph.items()}
    fsccs = [s for s in tarjan(fsets) if len(s) > 1]
    if args.folders:
        print('\nfolders, and the folders they import (how many file imports):')
        for a in sorted(fgraph):
            print(f'  {a} -> ' + (', '.join(f'{b} ({n})' for b, n in sorted(fgraph[a].items())) or '-'))
        print(f'\n{len(fsccs)} circles of folders')
        for s in fsccs:
            print(f'\n{len(s)} folders: {", ".join(s)}')
            seen = set()
            for a in s:                 # the shortest cycle through each
                cycle = shortest_cycle(fsets, s, lambda x, y: x == a)
                key = frozenset(zip(cycle, cycle[1:]))
                if key not in seen:
                    seen.add(key)
                    print(f'  {" -> ".join(cycle)}')

    if args.file:
        f = args.file
        print(f'\n{f} imports:')
        for b in sorted(crate.edges.get(f, ())):
            print(f'  {b} ({", ".join(sorted(set(crate.edges[f][b]))[:4])})')
        print(f'{f} is imported by:')
        for a in sorted(a for a in graph if f in graph[a]):
            print(f'  {a} ({", ".join(sorted(set(crate.edges[a][f]))[:4])})')

    if args.dot:
        red = {(a, b) for s in fsccs for a in s for b in fsets[a] & set(s)}
        print('digraph folders {\n  rankdir=LR;\n  node [shape=box];')
        for a in sorted(fgraph):
            print(f'  "{a}";')
            for b, n in sorted(fgraph[a].items()):
                print(f'  "{a}" -> "{b}" [label={n}{", color=red" if (a, b) in red else ""}];')
        print('}')

    failed = False
    if args.check or args.deny:
        for s in crossing:
            failed = True
            print(f'circle across folders ({len(s)} files): '
                  + ' -> '.join(shortest_cycle(graph, s, crosses)))
        for f in sorted(graph):
            if crate.files[f]['loc'] > args.max_lines:
                failed = True
                print(f'{f}: {crate.files[f]["loc"]} lines of code, over {args.max_lines}')
        for rule in args.deny:
            src, _, dst = rule.partition(':')
            for a in sorted(a for a in graph if a.startswith(src)):
                for b in sorted(b for b in graph[a] if b.startswith(dst)):
                    failed = True
                    print(f'denied by {rule}: {edge(a, b)}')
        print('check: ' + ('FAILED' if failed else 'ok'))
    return int(failed)


if __name__ == '__main__':
    if hasattr(signal, 'SIGPIPE'):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # quiet under | head
    sys.exit(main())
