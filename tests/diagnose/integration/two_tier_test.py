#!/usr/bin/env python3
"""Diagnosis of a two-tier capture (issue #41): truffld-synth --device-windows --two-tier, merged
and diagnosed, scored against the generator's labels, window by window.

Outside a detail window a step keeps only its step range, communication and blocking calls. The
test checks, on runs that differ only in the capture (same seed, same faults):
  (a) faults inside windows are found and blamed as in full capture (same units);
  (b) step-level classes are found in every step, inside or outside windows: a slow scheduler
      (time between steps) and slow collectives that cost their step at least 10%;
  (c) no step outside a window is abnormal on a healthy run, none is blamed on an operator or on
      time between operators it never recorded, and stats.json counts the step-level steps;
  (d) outside windows, a rank whose host ran late (engine, host gap or software faults costing at
      least 10% of the step) is named in the straggler table, from its host's entries into the
      collectives (no device times there).
Prints the figures per class. Exit 0 on success, 1 with the failed checks."""
import argparse, collections, json, os, shutil, subprocess, sys

STEP_LEVEL_FAMILIES = {'(whole step)', '(between steps)'}


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def generate(a, name, synth_args):
    out = os.path.join(a.work, name)
    shutil.rmtree(out, ignore_errors=True)
    run([a.synth, '--preset', 'suite', '-q', '--out', out] + synth_args)
    dumps = sorted(os.path.join(out, f) for f in os.listdir(out) if f.startswith('truffld-'))
    run([a.merge, *dumps, '-o', os.path.join(out, 'merged'), '-q'])
    run([a.diag, os.path.join(out, 'merged'), '-o', os.path.join(out, 'diag'), '--llm', 'off', '-q'])
    return Run(out)


class Run:
    """One generated, merged and diagnosed run: labels, ledger, verdicts and each step's tier."""

    def __init__(self, out):
        self.out = out
        self.detail, self.host = {}, {}
        for line in open(os.path.join(out, 'merged', 'trees.jsonl')):
            t = json.loads(line)
            self.detail[(t['rank'], t['step_index'])] = t.get('device_detail', True)
            self.host[t['rank']] = t.get('host', '')
        self.ledger = {e['id']: e for e in map(json.loads, open(os.path.join(out, 'ledger.jsonl')))}
        self.labels = {(x['rank'], x['step_index'], x['view']): x
                       for x in map(json.loads, open(os.path.join(out, 'labels.jsonl')))}
        self.units = {(x['rank'], x['step_index'], x['view']): x
                      for x in map(json.loads, open(os.path.join(out, 'diag', 'diagnosis.jsonl')))}
        self.stats = json.load(open(os.path.join(out, 'diag', 'stats.json')))
        self.report = open(os.path.join(out, 'diag', 'report.html'), encoding='utf-8').read()

    def abnormal(self, key):
        u = self.units.get(key)
        return u is not None and u['label'] == 'abnormal'

    def step_abnormal(self, rank, step):
        return self.abnormal((rank, step, 'vertical')) or self.abnormal((rank, step, 'horizontal'))

    def group_labelled(self, rank, step):
        """Whether a rank of `rank`'s tensor-parallel group (its host) carries a fault in `step`:
        lockstep ranks wait for a slowed peer, so the whole group's step is slower."""
        return any(self.labels.get((r, step, v), {}).get('abnormal') for r, h in self.host.items()
                   if h == self.host[rank] for v in ('vertical', 'horizontal'))

    def classes(self, label):
        return {self.ledger[i]['class'] for i in label['fault_ids'] if i in self.ledger}


def found_by_class(r, full=None):
    """Per (class, tier): [found, labelled] over labelled units. Inside a window a unit is found
    when its own view is abnormal (and, with `full`, only units full capture found count); outside
    one when either view of its step is (step-level evidence has no per-view operator)."""
    out = collections.defaultdict(lambda: [0, 0])
    for key, lab in r.labels.items():
        if not lab['abnormal']:
            continue
        inside = r.detail.get(key[:2], True)
        if full is not None and not (inside and full.abnormal(key)):
            continue
        hit = r.abnormal(key) if inside else r.step_abnormal(*key[:2])
        for c in r.classes(lab):
            cell = out[(c, 'in' if inside else 'out')]
            cell[0] += hit
            cell[1] += 1
    return out


def costly_step_level(r, cls, share):
    """[found, labelled] for `cls` outside windows, steps whose faults cost >= share of the step."""
    cell = [0, 0]
    for key, lab in r.labels.items():
        if not lab['abnormal'] or r.detail.get(key[:2], True) or cls not in r.classes(lab):
            continue
        cf = lab.get('counterfactual_ns') or 0
        if cf <= 0 or lab.get('cost_ns', 0) < share * cf:
            continue
        cell[0] += r.step_abnormal(*key[:2])
        cell[1] += 1
    return cell


def false_alarms(r):
    """Abnormal units of steps whose group carries no labelled fault, by tier."""
    fa = collections.Counter()
    for key, u in r.units.items():
        if u['label'] == 'abnormal' and not r.group_labelled(*key[:2]):
            fa['in' if r.detail.get(key[:2], True) else 'out'] += 1
    return fa


def missing_detail_blame(r):
    """Units outside windows blamed on anything but step-level evidence (what was not recorded)."""
    bad = []
    for key, u in r.units.items():
        if r.detail.get(key[:2], True) or u['label'] != 'abnormal':
            continue
        for f in u['faulty']:
            fam = f.get('family', '')
            if key[2] == 'vertical' and fam not in STEP_LEVEL_FAMILIES:
                bad.append((key, fam))
    return bad


HOST_CLASSES = {'engine', 'host_gap', 'software'}


def host_stragglers_outside(r, share):
    """[named, labelled]: vertical units outside windows with a host-side fault costing at least
    `share` of the step, and how many of them the straggler table names (rank and step)."""
    named = {(s['rank'], s['step_index']) for s in r.stats['peer']['stragglers']}
    cell = [0, 0]
    for key, lab in r.labels.items():
        if key[2] != 'vertical' or not lab['abnormal'] or r.detail.get(key[:2], True):
            continue
        cf = lab.get('counterfactual_ns') or 0
        if not (r.classes(lab) & HOST_CLASSES) or cf <= 0 or lab.get('cost_ns', 0) < share * cf:
            continue
        cell[0] += key[:2] in named
        cell[1] += 1
    return cell


def show(title, table):
    print(title)
    for k in sorted(table):
        f, n = table[k]
        print(f'  {k[0]:14s} {k[1]:3s} windows: {f}/{n} found')


def main():
    ap = argparse.ArgumentParser()
    for k in ('synth', 'merge', 'diag', 'work'):
        ap.add_argument('--' + k, required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    tiers = ['--device-windows', 'steps:4:2', '--two-tier']
    fails = []

    def check(ok, what):
        print(('ok   ' if ok else 'FAIL ') + what)
        if not ok:
            fails.append(what)

    # (c) A healthy two-tier run: nothing outside a window is abnormal.
    h = generate(a, 'healthy', ['--faults', 'none', '--seed', '3'] + tiers)
    out_steps = sum(1 for d in h.detail.values() if not d)
    fa = false_alarms(h)
    print(f'healthy two-tier: {len(h.units)} units, {out_steps} steps outside windows, false alarms {dict(fa)}')
    check(out_steps > 0 and h.stats['input']['step_level_steps'] == out_steps,
          f'stats.json input.step_level_steps = steps outside windows ({out_steps})')
    check(fa['out'] == 0, 'healthy run: 0 false alarms outside windows')
    check('judged on step-level evidence only' in json.dumps([u['evidence'] for u in h.units.values()]),
          'evidence of step-level units says so')
    check('steps inside a detail window' in h.report, 'report.html explains the window marks')

    # (b) Step-level classes, strong, in every step; the same faults in full capture for (a).
    step_args = ['--faults', 'communication,sched_delay', '--intensities', 'strong',
                 '--abnormal-fraction', '0.2', '--seed', '2']
    t = generate(a, 'steplevel', step_args + tiers)
    f = generate(a, 'steplevel_full', step_args)
    show('step-level classes, two-tier (labelled units found):', found_by_class(t))
    show('step-level classes, full capture:', found_by_class(f))
    # A scheduling gap with every device of the group idle says so (issue 39's "while both GPUs
    # idled"), in full capture where the device timeline is known.
    gaps = [x.get('evidence', '') for u in f.units.values() if u['label'] == 'abnormal'
            for x in u['faulty'] if x['family'] == '(between steps)' and 'idle throughout' in x.get('evidence', '')]
    grouped = sum("idle throughout, as on the group's other rank" in e for e in gaps)
    check(gaps and grouped >= 0.9 * len(gaps),
          f'between-steps blame with the device idle names the idle group: {grouped}/{len(gaps)} (>= 90%)')
    by = found_by_class(t)
    for tier in ('in', 'out'):
        n_found, n = by[('sched_delay', tier)]
        check(n > 0 and n_found >= 0.85 * n, f'sched_delay {tier} windows: {n_found}/{n} found (>= 85%)')
    c5 = costly_step_level(t, 'communication', 0.05)
    print(f'  slow collectives outside windows costing >= 5% of the step: {c5[0]}/{c5[1]} found')
    c_found, c_n = costly_step_level(t, 'communication', 0.10)
    check(c_n > 0 and c_found >= 0.75 * c_n,
          f'slow collectives outside windows costing >= 10% of the step: {c_found}/{c_n} found (>= 75%)')
    fa = false_alarms(t)
    print(f'  false alarms (no fault in the step\'s group): {dict(fa)}')
    check(fa['out'] == 0, 'step-level faults: 0 false alarms outside windows')
    check(not missing_detail_blame(t), 'no unit outside a window blamed on what it did not record')
    check('judged on step-level evidence only' in t.report and "fill='#777'" in t.report,
          'report.html: cards of step-level units say so, window steps marked on the plot')

    # (a) Operator-level faults: inside windows found as full capture found them.
    op_args = ['--faults', 'software,cuda_kernel,memcpy,engine,host_gap,direct_copy', '--intensities', 'strong',
               '--abnormal-fraction', '0.2', '--seed', '5']
    t = generate(a, 'operators', op_args + tiers)
    f = generate(a, 'operators_full', op_args)
    same = found_by_class(t, full=f)
    show('operator classes inside windows, units full capture found (two-tier found):', same)
    found = sum(v[0] for k, v in same.items() if k[1] == 'in')
    total = sum(v[1] for k, v in same.items() if k[1] == 'in')
    check(total > 0 and found >= 0.8 * total, f'inside windows: {found}/{total} of full capture\'s finds (>= 80%)')
    blame_same = blame_total = 0
    for key, lab in t.labels.items():
        if lab['abnormal'] and t.detail.get(key[:2], True) and t.abnormal(key) and f.abnormal(key):
            blame_total += 1
            blame_same += {x['family'] for x in t.units[key]['faulty']} == {x['family'] for x in f.units[key]['faulty']}
    check(blame_total > 0 and blame_same >= 0.8 * blame_total,
          f'inside windows: blame as in full capture in {blame_same}/{blame_total} units (>= 80%)')
    fa = false_alarms(t)
    print(f'  false alarms (no fault in the step\'s group): {dict(fa)}')
    check(fa['out'] == 0, 'operator faults: 0 false alarms outside windows')
    # (d) Stragglers outside windows, from the hosts' entries into the collectives.
    s_found, s_n = host_stragglers_outside(t, 0.10)
    check(s_n > 0 and s_found >= 0.75 * s_n,
          f'outside windows, host-side faults costing >= 10% of the step: straggler named {s_found}/{s_n} (>= 75%)')
    check(not missing_detail_blame(t), 'no unit outside a window blamed on what it did not record')
    if fails:
        print('FAILED: ' + '; '.join(fails))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
