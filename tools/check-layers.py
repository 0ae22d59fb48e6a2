#!/usr/bin/env python3
"""Checks that diagnose/'s stage folders include only themselves and folders before them.

The order is diagnose/CMakeLists.txt's TRUFFLD_DIAGNOSE_STAGES (read, peer, stage2, legacy,
report, run): data flows that way, so an include of a later folder is an arrow running back up.
The CLI (diagnose/tools/) may include any folder. Prints each upward include as
FILE:LINE: FOLDER includes LATER and exits 1 when there is one; prints the include count per
pair of folders with --graph.

Usage: tools/check-layers.py [--graph] [ROOT]   (ROOT: the checkout, default this script's)"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z0-9_]+)/[^"]+"')


def stages(root):
    text = (root / 'diagnose' / 'CMakeLists.txt').read_text()
    m = re.search(r'set\(TRUFFLD_DIAGNOSE_STAGES ([a-z0-9_ ]+)\)', text)
    if not m:
        sys.exit('check-layers: TRUFFLD_DIAGNOSE_STAGES not found in diagnose/CMakeLists.txt')
    return m.group(1).split()


def main(argv):
    graph = '--graph' in argv
    args = [a for a in argv if a != '--graph']
    root = pathlib.Path(args[0]) if args else pathlib.Path(__file__).resolve().parent.parent
    order = stages(root)
    rank = {s: i for i, s in enumerate(order)}
    bad, edges, files = [], {}, 0
    for stage in order:
        folder = root / 'diagnose' / stage
        if not folder.is_dir():
            bad.append(f'diagnose/{stage}: listed in TRUFFLD_DIAGNOSE_STAGES but missing')
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix not in ('.h', '.cc'):
                continue
            files += 1
            for n, line in enumerate(path.read_text().splitlines(), 1):
                m = INCLUDE.match(line)
                if not m or m.group(1) not in rank:
                    continue
                target = m.group(1)
                edges[(stage, target)] = edges.get((stage, target), 0) + 1
                if rank[target] > rank[stage]:
                    bad.append(f'{path.relative_to(root)}:{n}: {stage} includes {target}, a later stage')
    for line in bad:
        print(line)
    if graph:
        for (a, b), n in sorted(edges.items(), key=lambda e: (rank[e[0][0]], rank[e[0][1]])):
            print(f'{a} -> {b}: {n}')
    print(f'check-layers: {files} files in {len(order)} folders, {sum(edges.values())} includes '
          f'between or within them, {len(bad)} upward')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
