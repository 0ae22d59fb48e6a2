#!/usr/bin/env python3
"""A real hang on CPU: three processes of hang_app (tests/inject/programs/hang_app.cc) traced
by the real injector through NVTX injection; rank 2 stops inside aten::index_select before a
collective while ranks 0 and 1 wait inside it; after a flush and a CLOCK record every process is
killed with SIGKILL (by PID). truffld-merge then truffld-diagnose --hang must name rank 2 as the
culprit with its open stack and ranks 0 and 1 as waiting inside the collective.

Usage: hang_kill_test.py --app BIN --injector SO --merge BIN --diagnose BIN --work DIR"""
import argparse
import json
import os
import pathlib
import select
import shutil
import signal
import subprocess
import sys
import time

WORLD, CULPRIT, STEP, COLL = 3, 2, 3, 1


def wait_for(procs, want, timeout=30.0):
    """Reads each process's stdout until it printed its expected word."""
    seen = {}
    deadline = time.time() + timeout
    while len(seen) < len(procs) and time.time() < deadline:
        fds = [p.stdout for r, p in procs.items() if r not in seen]
        ready, _, _ = select.select(fds, [], [], 0.5)
        for f in ready:
            r = next(r for r, p in procs.items() if p.stdout is f)
            line = f.readline().strip()
            if line == want[r]:
                seen[r] = line
    return seen


def main():
    ap = argparse.ArgumentParser()
    for f in ('--app', '--injector', '--merge', '--diagnose', '--work'):
        ap.add_argument(f, required=True)
    a = ap.parse_args()
    work = pathlib.Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    (work / 'barrier').mkdir(parents=True)
    (work / 'dumps').mkdir()
    procs = {}
    try:
        for r in range(WORLD):
            env = dict(os.environ, RANK=str(r), NVTX_INJECTION64_PATH=a.injector, TRUFFLD_OUTPUT_DIR=str(work / 'dumps'),
                       TRUFFLD_CLOCK_SYNC_S='1')
            procs[r] = subprocess.Popen([a.app, str(work / 'barrier'), str(WORLD), '10', str(CULPRIT), str(STEP), str(COLL)],
                                        env=env, stdout=subprocess.PIPE, text=True)
        want = {r: 'stuck' if r == CULPRIT else 'waiting' for r in range(WORLD)}
        seen = wait_for(procs, want)
        if len(seen) < WORLD:
            sys.exit(f'FAIL: the ranks did not reach the hang in 30 s (saw {seen})')
        time.sleep(2.5)  # past a 500 ms flush and a CLOCK record (TRUFFLD_CLOCK_SYNC_S=1)
    finally:
        for p in procs.values():
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
    dumps = sorted(str(p) for p in (work / 'dumps').glob('truffld-*.jsonl'))
    assert len(dumps) == WORLD, dumps
    subprocess.run([a.merge, *dumps, '-o', str(work / 'merged'), '-q'], capture_output=True)
    p = subprocess.run([a.diagnose, str(work / 'merged'), '-o', str(work / 'hang'), '--hang'], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    hang = json.loads((work / 'hang' / 'hang.json').read_text())
    print(p.stdout)
    assert hang['status'] == 'hang', hang['status']
    assert hang['culprits'] == [f'rank {CULPRIT}'], hang['sentence']
    assert sorted(hang['waiting']) == ['rank 0', 'rank 1'], hang['waiting']
    want_n = STEP * 3 + COLL + 1
    assert hang['sentence'].startswith(f'rank {CULPRIT} never entered collective #{want_n} '), hang['sentence']
    ranks = {r['rank']: r for r in hang['ranks']}
    assert ranks[CULPRIT]['open_stack'] == f'step {STEP} > aten::index_select', ranks[CULPRIT]['open_stack']
    for r in (0, 1):
        assert ranks[r]['open_stack'] == f'step {STEP} > nccl:all_reduce', ranks[r]['open_stack']
        assert not ranks[r]['clean_exit']
    assert 'open for 2' in hang['sentence'] or 'open for 3' in hang['sentence'], hang['sentence']
    print('PASS: the killed CPU job\'s culprit, its stack and the waiting ranks are named')


if __name__ == '__main__':
    main()
