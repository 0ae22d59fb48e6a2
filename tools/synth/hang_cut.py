#!/usr/bin/env python3
"""Turns a truffld-synth run into the dumps of a job that hung and was killed.

One rank (the culprit) stops inside the operator before its K-th collective of step S: its host
never enters that collective, its dump ends there with the step and the operator still open.
Every other rank of its tensor-parallel group (the ranks on its host, as truffld-synth places
them with --pp 1) enters it (an NCCL launch returns at once), keeps launching the rest of the
step, and blocks in the step's next blocking call (the sampled tokens' device-to-host copy or
a stream synchronisation); the collective's kernel never finishes, so no device op from its
start on is recorded. Ranks of other replicas stop between steps, before step S. Every process stays alive WAIT seconds (the injector's CLOCK records,
one a minute, are its only output), then is killed with SIGKILL: no STATS record, and the
last line is cut in the middle. Writes the cut dumps and hang_truth.json (culprit, step,
collective, waiting ranks) into OUT.

Usage: hang_cut.py RUN_DIR OUT_DIR [--culprit R] [--step S] [--collective K] [--wait SECONDS]
(defaults: rank 1, the first step with K collectives (step index >= 2), K = 3, 312 s)."""
import argparse
import json
import pathlib
import sys


def rank_of(path):
    return int(path.name.split('-r')[1].split('-')[0])


def load(path):
    recs = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        try:
            recs.append(json.loads(line))
        except json.JSONDecodeError as e:
            sys.exit(f'{path}:{n}: not JSON ({e})')
    return recs


def main_thread_pushes(recs):
    meta = recs[0]
    return sorted((r for r in recs if r['type'] == 'NVTX_PUSH' and r.get('thread_id') == meta['process_id']),
                  key=lambda r: r['timestamp'])


def steps_with_collectives(pushes):
    """[(step push, [NCCL pushes in it])] in order (a step ends where the next begins)."""
    out = []
    for r in pushes:
        if r['name'].startswith('step_execute_model'):
            out.append((r, []))
        elif out and r.get('domain') == 'NCCL':
            out[-1][1].append(r)
    return out


def cut_times(recs, step, k, culprit):
    """(host cut, device cut) on this file's clock."""
    pushes = main_thread_pushes(recs)
    s, colls = steps_with_collectives(pushes)[step]
    entry = colls[k - 1]['timestamp']
    if culprit:
        # Inside the last operator that began before the collective: its middle.
        ops = [r for r in pushes if s['timestamp'] < r['timestamp'] < entry and r.get('domain') != 'NCCL'
               and r['name'].startswith('aten::')]
        op = ops[-1]
        ends = sorted(r['end'] for r in recs if r['type'] in ('RUNTIME', 'DRIVER') and r['start'] >= op['timestamp'])
        t = (op['timestamp'] + min([e for e in ends if e < entry] or [entry])) // 2
        return t, t
    blocking = sorted(r['start'] for r in recs if r['type'] == 'RUNTIME' and r['start'] > entry and r.get('thread_id') == recs[0]['process_id']
                      and (r['name'].startswith('cudaStreamSynchronize') or r['name'].startswith('cudaMemcpy_')
                           or (r['name'].startswith('cudaMemcpy') and r.get('copy_kind') == 'DtoH')))
    kernels = sorted(r['gpu_start'] for r in recs if r['type'] == 'KERNEL' and r['gpu_start'] >= entry
                     and r['name'].startswith('ncclDevKernel'))
    return blocking[0], kernels[0]


def before_step(recs, step):
    """Both cuts just before this file's step `step` begins (a replica that was not waiting)."""
    steps = steps_with_collectives(main_thread_pushes(recs))
    t = steps[min(step, len(steps) - 1)][0]['timestamp']
    return t, t


def keep(r, host_cut, device_cut):
    t = r['type']
    if t in ('NVTX_PUSH', 'NVTX_POP', 'NVTX_MARK', 'NVTX_START', 'NVTX_END', 'GRAPH_NODE'):
        return r['timestamp'] < host_cut
    if t in ('RUNTIME', 'DRIVER', 'SYNC'):
        return r['end'] < host_cut
    if t in ('KERNEL', 'MEMCPY', 'MEMSET'):
        return r['gpu_end'] < device_cut
    return t not in ('STATS',)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('run'), ap.add_argument('out')
    ap.add_argument('--culprit', type=int, default=1)
    ap.add_argument('--step', type=int, default=None)
    ap.add_argument('--collective', type=int, default=3)
    ap.add_argument('--wait', type=float, default=312.0)
    a = ap.parse_args()
    files = sorted(pathlib.Path(a.run).glob('truffld-*-r*-p*.jsonl'))
    if not files:
        sys.exit(f'hang_cut: no truffld-*.jsonl dumps in {a.run}')
    dumps = {rank_of(p): (p, load(p)) for p in files}
    if a.culprit not in dumps:
        sys.exit(f'hang_cut: no dump of rank {a.culprit} in {a.run}')
    steps = steps_with_collectives(main_thread_pushes(dumps[a.culprit][1]))
    step = a.step if a.step is not None else next(
        (i for i, (_, c) in enumerate(steps) if i >= 2 and len(c) >= a.collective), None)
    if step is None or step >= len(steps) or len(steps[step][1]) < a.collective:
        sys.exit(f'hang_cut: rank {a.culprit} has no step with {a.collective} collectives to stop in')
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    truth = {'culprit_rank': a.culprit, 'step_index': step, 'collective': a.collective,
             'collective_name': steps[step][1][a.collective - 1]['name'], 'waiting_ranks': [], 'wait_s': a.wait}
    for rank, (path, recs) in sorted(dumps.items()):
        same_group = recs[0]['host'] == dumps[a.culprit][1][0]['host']
        host_cut, device_cut = (cut_times(recs, step, a.collective, rank == a.culprit) if same_group
                                else before_step(recs, step))
        kept = [r for r in recs if keep(r, host_cut, device_cut)]
        dropped = [r for r in recs if not keep(r, host_cut, device_cut) and r['type'] != 'STATS']
        sync = recs[0]['clock_sync']
        lines = [json.dumps(r, separators=(',', ':')) for r in kept]
        for minute in range(1, int(a.wait // 60) + 1):  # CLOCK records while stuck
            d = int(host_cut - sync['realtime_ns'] + minute * 60e9)
            lines.append(json.dumps({'type': 'CLOCK', 'clock_sync': {'realtime_ns': sync['realtime_ns'] + d,
                                     'monotonic_ns': sync['monotonic_ns'] + d}}, separators=(',', ':')))
        tail = json.dumps(dropped[0], separators=(',', ':')) if dropped else '{"type":"NVTX_PUSH","name":"x"}'
        (out / path.name).write_text('\n'.join(lines) + '\n' + tail[:len(tail) // 2])
        if rank != a.culprit and same_group:
            truth['waiting_ranks'].append(rank)
    (out / 'hang_truth.json').write_text(json.dumps(truth, indent=1) + '\n')
    print(json.dumps(truth))


if __name__ == '__main__':
    main()
