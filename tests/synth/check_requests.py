#!/usr/bin/env python3
"""Per-request breakdown end to end: truffld-synth runs (several seeds, one with pipeline
stages) merged and diagnosed; requests.jsonl is checked against counts made here, independently,
from trees.jsonl (the lowest rank's vertical trees naming each request: step indices, prefill and
decode steps, first start, last end, prefill end, TTFT, TPOT, time in and between steps), against
the generator's request ledger (its requests.jsonl: every request that ran has exactly the steps
the ledger gives it, its prefill ends in the step the ledger says, and its decode steps match;
the one documented difference, a prompt chunked over several mixed steps counted as one chunk,
is counted and must be the only one), against
diagnosis.jsonl (every abnormal unit naming the request is counted, and the impact is the per-step
maximum summed), and against its schema; the ledger's faults that cost a request's steps show
up in its impact.

Usage: check_requests.py --synth BIN --merge BIN --diagnose BIN --work DIR"""
import argparse
import collections
import json
import pathlib
import shutil
import subprocess
import sys

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNS = [('--preset', 'small', '--seed', '3'), ('--preset', 'small', '--ranks', '4', '--hosts', '2', '--seed', '5'),
        ('--preset', 'small', '--ranks', '4', '--hosts', '2', '--pp', '2', '--seed', '7'),
        ('--preset', 'small', '--chunked-prefill', '--max-prefill-tokens', '512', '--seed', '9')]


def run(*cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f'FAIL: {" ".join(map(str, cmd))} exited {p.returncode}\n{p.stderr[-2000:]}')
    return p


def expected(trees):
    """request -> rank -> [(start, end, step_index, phase)] from vertical trees."""
    by = collections.defaultdict(lambda: collections.defaultdict(dict))
    for line in trees.open():
        t = json.loads(line)
        if t['view'] != 'vertical':
            continue
        for r in t.get('requests', []):
            by[r][t['rank']][t['step_index']] = (t['start'], t['end'], t['step_index'], t.get('phase', 'unknown'))
    return by


def check_one(want_steps, got):
    rank = min(want_steps)
    steps = sorted(want_steps[rank].values())
    assert got['lead_rank'] == rank, (got['request'], got['lead_rank'], rank)
    assert got['ranks'] == sorted(want_steps), (got['ranks'], sorted(want_steps))
    assert got['steps'] == [s[2] for s in steps], (got['request'], got['steps'])
    lead = []  # the leading run of prefill chunks: prefill steps, or a mixed step that is its first
    for k, st in enumerate(steps):
        if st[3] == 'prefill' or (st[3] == 'mixed' and k == 0):
            lead.append(st)
        else:
            break
    prefill = lead + [st for st in steps[len(lead):] if st[3] == 'prefill']
    decode = [st for st in steps[len(lead):] if st[3] in ('decode', 'mixed')]
    assert (got['prefill_steps'], got['decode_steps']) == (len(prefill), len(decode)), got['request']
    assert got['first_start_ns'] == steps[0][0] and got['last_end_ns'] == steps[-1][1]
    in_steps = sum(e - s for s, e, _, _ in steps)
    assert got['in_steps_ns'] == in_steps
    assert got['between_steps_ns'] == max(0, steps[-1][1] - steps[0][0] - in_steps)
    if lead:
        pe = lead[-1][1]
        assert got['prefill_end_ns'] == pe and got['ttft_ns'] == pe - steps[0][0]
        after = [s for s in decode if s[0] >= pe]
        want_tpot = round((steps[-1][1] - pe) / len(after)) if after else None
        assert got['tpot_ns'] == want_tpot or abs(got['tpot_ns'] - want_tpot) <= 1, (got['tpot_ns'], want_tpot)
    else:
        assert got['ttft_ns'] is None


def check_ledger(ledger, want, got_by_id):
    """Every request that ran, against the generator's ledger. Returns (requests checked,
    prompts chunked over several steps, median steps queued before the first)."""
    checked, chunked, queued = 0, 0, []
    for line in ledger.open():
        led = json.loads(line)
        ran = sorted(led['prefill_steps'] + led['decode_steps'])
        if not ran:
            assert led['request'] not in got_by_id, f"{led['request']}: never ran, yet in requests.jsonl"
            continue
        got = got_by_id.get(led['request'])
        assert got is not None, f"{led['request']}: ran in steps {ran} but is missing from requests.jsonl"
        assert got['steps'] == ran, (led['request'], got['steps'], ran)
        queued.append(ran[0] - led['arrival_step'])
        checked += 1
        if not led['prefill_steps']:
            continue  # its prefill ran before the trace began
        steps = want[led['request']][got['lead_rank']]
        prefill_done = led['prefill_steps'][-1]
        exact = (got['prefill_steps'] == len(led['prefill_steps']) and
                 got['decode_steps'] == len(led['decode_steps']) and got['prefill_end_ns'] == steps[prefill_done][1])
        if exact:
            continue
        # The documented limit: chunks after the first, when they run in mixed steps, read as decode.
        assert len(led['prefill_steps']) > 1, (led, got)
        early = [steps[k][1] for k in led['prefill_steps'][:-1]]
        assert got['prefill_end_ns'] in early and got['prefill_steps'] < len(led['prefill_steps']), (led, got)
        chunked += 1
    queued.sort()
    return checked, chunked, queued[len(queued) // 2] if queued else 0


def check_hits(diag, got_by_id):
    units = collections.defaultdict(list)
    for line in diag.open():
        d = json.loads(line)
        if d['label'] == 'abnormal':
            for r in set(d.get('requests', [])):
                units[r].append(d)
    touched = 0
    for rid, got in got_by_id.items():
        assert got['abnormal_units'] == len(units.get(rid, [])), (rid, got['abnormal_units'], len(units.get(rid, [])))
        touched += got['abnormal_units'] > 0
        assert (got['impact_ns'] > 0) == (got['abnormal_units'] > 0) or got['impact_ns'] == 0
    return touched


def main():
    ap = argparse.ArgumentParser()
    for f in ('--synth', '--merge', '--diagnose', '--work'):
        ap.add_argument(f, required=True)
    a = ap.parse_args()
    work = pathlib.Path(a.work)
    v = jsonschema.Draft202012Validator(json.loads((ROOT / 'schemas/requests.schema.json').read_text()))
    for i, args in enumerate(RUNS):
        base = work / f'run{i}'
        shutil.rmtree(base, ignore_errors=True)
        run(a.synth, *args, '-q', '--out', base / 'dump')
        run(a.merge, *sorted((base / 'dump').glob('truffld-*.jsonl')), '-o', base / 'merged', '-q')
        out = run(a.diagnose, base / 'merged', '-o', base / 'diag', '--llm', 'off').stdout
        assert 'Requests: ' in out and 'TTFT p50' in out, out[-500:]
        got = [json.loads(l) for l in (base / 'diag' / 'requests.jsonl').open()]
        for g in got:
            errs = [e.message for e in v.iter_errors(g)]
            assert not errs, errs[:3]
        want = expected(base / 'merged' / 'trees.jsonl')
        assert sorted(g['request'] for g in got) == sorted(want), 'request ids differ from the trees'
        for g in got:
            check_one(want[g['request']], g)
        by_id = {g['request']: g for g in got}
        checked, chunked, queued = check_ledger(base / 'dump' / 'requests.jsonl', want, by_id)
        assert checked == len(got), (checked, len(got))
        touched = check_hits(base / 'diag' / 'diagnosis.jsonl', by_id)
        assert "id='requests'" in (base / 'diag' / 'report.html').read_text()
        print(f'ok: {" ".join(args)}: {len(got)} requests match the trees and the ledger '
              f'({chunked} prompts chunked over several steps, counted as one chunk; median '
              f'{queued} steps queued before the first, not in the trace); {touched} touched by abnormal units')
    print('PASS')


if __name__ == '__main__':
    main()
