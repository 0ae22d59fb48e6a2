#!/usr/bin/env python3
"""Reports C++ functions longer than a limit (default 80 lines) and files longer than another
(default 400 lines) under the given folders: the developers' guide's size rules.

Usage: tools/check-sizes.py [--function-lines N] [--file-lines N] DIR...
Exit status 1 when anything is over. A function is a brace block opened after a parameter list
(control statements and lambdas count towards the function around them)."""
import argparse
import pathlib
import re
import sys

CONTROL = re.compile(r'\b(if|for|while|switch|catch|do|else|return)\b\s*(\(|$)')


def strip(text):
    """Blanks out comments, string and character literals, keeping line breaks."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append('\n' * text.count('\n', i, j))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = ')' + (m.group(1) if m else '') + '"'
            j = text.find(end, i)
            j = n if j < 0 else j + len(end)
            out.append('""' + '\n' * text.count('\n', i, j))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def functions(text):
    s = re.sub(r'(?m)^[ \t]*#.*$', '', strip(text))  # preprocessor lines hold no code blocks
    stack = []  # (is_function, start_line)
    last = 0
    line = 1
    for i, c in enumerate(s):
        if c == '\n':
            line += 1
        elif c == '{':
            head = s[last:i]
            head_flat = ' '.join(head.split())
            is_fn = (')' in head_flat and not CONTROL.search(head_flat.split(')')[0][-60:] if '(' in head_flat else '')
                     and not re.search(r'\]\s*(\([^)]*\))?\s*(mutable)?\s*(->\s*[\w:<>]+)?\s*$', head_flat)
                     and not re.search(r'[=,(]\s*$', head_flat)
                     and not any(f['fn'] for f in stack))
            m = re.search(r'([\w:~<>]+)\s*\(', head_flat)
            stack.append({'fn': is_fn, 'line': line, 'name': m.group(1) if m else '?'})
            last = i + 1
        elif c == '}':
            if stack:
                f = stack.pop()
                if f['fn']:
                    yield f['name'], f['line'], line - f['line'] + 1
            last = i + 1
        elif c == ';':
            last = i + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--function-lines', type=int, default=80)
    ap.add_argument('--file-lines', type=int, default=400)
    ap.add_argument('dirs', nargs='+')
    a = ap.parse_args()
    bad = 0
    for d in a.dirs:
        for p in sorted(pathlib.Path(d).rglob('*')):
            if p.suffix not in ('.cc', '.h', '.inc', '.cpp') or not p.is_file():
                continue
            text = p.read_text(errors='replace')
            lines = text.count('\n')
            if lines > a.file_lines:
                print(f'{p}: {lines} lines (file limit {a.file_lines})')
                bad += 1
            for name, start, length in functions(text):
                if length > a.function_lines:
                    print(f'{p}:{start}: {name}: {length} lines (function limit {a.function_lines})')
                    bad += 1
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
