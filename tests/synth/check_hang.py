#!/usr/bin/env python3
"""Hang localisation end to end: truffld-synth runs turned into hung, killed jobs by
tools/synth/hang_cut.py (one rank stops inside the operator before a collective, the others of
its group enter it and block, every dump cut mid-line without STATS), merged, then
truffld-diagnose --hang must name the culprit rank, its group's waiting ranks and its open
stack, on every seed and topology; hang.json and summary.json validate against their schemas.
A normal diagnosis of a hung run writes hang.json and the report section too; a clean run's
--hang says complete, and a normal diagnosis there removes an earlier hang.json.

Usage: check_hang.py --synth BIN --merge BIN --diagnose BIN --work DIR"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = [  # (ranks, hosts, culprit, seed, collective)
    (4, 1, 1, 1, 3), (4, 1, 3, 2, 5), (4, 2, 2, 3, 3), (4, 2, 1, 4, 2), (6, 3, 4, 5, 4)]


def run(*cmd, ok=True):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if ok and p.returncode != 0:
        sys.exit(f'FAIL: {" ".join(map(str, cmd))} exited {p.returncode}\n{p.stdout}\n{p.stderr}')
    return p


def validator(name):
    schema = json.loads((ROOT / 'schemas' / name).read_text())
    return jsonschema.Draft202012Validator(schema)


def check_case(a, work, ranks, hosts, culprit, seed, k, hang_v, summary_v):
    base = work / f'r{ranks}h{hosts}c{culprit}s{seed}'
    shutil.rmtree(base, ignore_errors=True)
    run(a.synth, '--ranks', ranks, '--hosts', hosts, '--steps', 10, '--layers', 4, '--faults', 'none',
        '--seed', seed, '-q', '--out', base / 'run')
    truth = json.loads(run(sys.executable, ROOT / 'tools/synth/hang_cut.py', base / 'run', base / 'hung',
                           '--culprit', culprit, '--collective', k).stdout)
    dumps = sorted(str(p) for p in (base / 'hung').glob('truffld-*.jsonl'))
    run(a.merge, *dumps, '-o', base / 'merged', '-q', ok=False)  # problems (cut lines) make it exit 1
    summary = json.loads((base / 'merged' / 'summary.json').read_text())
    errs = [e.message for e in summary_v.iter_errors(summary)]
    assert not errs, f'summary.json invalid: {errs[:3]}'
    out = run(a.diagnose, base / 'merged', '-o', base / 'hang', '--hang').stdout
    hang = json.loads((base / 'hang' / 'hang.json').read_text())
    errs = [e.message for e in hang_v.iter_errors(hang)]
    assert not errs, f'hang.json invalid: {errs[:3]}'
    tp = ranks // hosts
    group = [r for r in range(ranks) if r // tp == culprit // tp]
    want_wait = [f'rank {r}' for r in group if r != culprit]
    assert hang['status'] == 'hang', hang['status']
    assert hang['culprits'] == [f'rank {culprit}'], (hang['culprits'], hang['sentence'])
    assert set(want_wait) <= set(hang['waiting']), (hang['waiting'], want_wait)
    assert hang['sentence'].startswith(f'rank {culprit} never entered collective #'), hang['sentence']
    assert f"step {truth['step_index']} > " in hang['sentence'], hang['sentence']
    assert 'open for 300' in hang['sentence'], hang['sentence']
    culprit_rec = next(r for r in hang['ranks'] if r['rank'] == culprit)
    assert culprit_rec['role'] == 'culprit' and 'aten::' in culprit_rec['open_stack'], culprit_rec
    assert out.startswith('hang: '), out
    print(f'ok: {ranks} ranks / {hosts} hosts, culprit {culprit}, seed {seed}: {hang["sentence"][:140]}...')
    return base


def check_auto_and_clean(a, base):
    """A normal diagnosis of the hung run writes hang.json and the report's section; a clean
    run says complete with --hang and its diagnosis removes a stale hang.json."""
    d = base / 'diag'
    p = run(a.diagnose, base / 'merged', '-o', d, '--llm', 'off', '-q')
    assert 'stopped without a clean exit (hang)' in p.stderr, p.stderr
    assert (d / 'hang.json').exists()
    assert "id='hang'" in (d / 'report.html').read_text()
    clean = base / 'clean'
    run(a.merge, *sorted(str(p) for p in (base / 'run').glob('truffld-*.jsonl')), '-o', clean / 'merged', '-q')
    out = run(a.diagnose, clean / 'merged', '-o', clean / 'hang', '--hang').stdout
    assert out.startswith('complete: every process exited normally'), out
    shutil.copy(d / 'hang.json', clean / 'hang' / 'stale-check.json')
    (clean / 'diag').mkdir()
    shutil.copy(d / 'hang.json', clean / 'diag' / 'hang.json')
    run(a.diagnose, clean / 'merged', '-o', clean / 'diag', '--llm', 'off', '-q')
    assert not (clean / 'diag' / 'hang.json').exists(), 'a stale hang.json survived a clean run'
    assert "id='hang'" not in (clean / 'diag' / 'report.html').read_text()
    print('ok: automatic hang section, clean run complete, stale hang.json removed')


def main():
    ap = argparse.ArgumentParser()
    for f in ('--synth', '--merge', '--diagnose', '--work'):
        ap.add_argument(f, required=True)
    a = ap.parse_args()
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    hang_v, summary_v = validator('hang.schema.json'), validator('summary.schema.json')
    bases = [check_case(a, work, *c, hang_v, summary_v) for c in CASES]
    check_auto_and_clean(a, bases[0])
    print(f'PASS: {len(CASES)} hung runs localised')


if __name__ == '__main__':
    main()
