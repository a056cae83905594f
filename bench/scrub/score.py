#!/usr/bin/env python3
"""Scores scrubber findings against tests/scrub/gen_corpus.py labels and prints a side-by-side table.

Usage: score.py CORPUS_DIR RESULT_JSON [RESULT_JSON ...]   (outputs of scrub_eval / secretlint_eval)
A labelled secret counts as found when the union of the tool's finding ranges covers all of its
bytes. A hard negative counts as a false positive when any finding overlaps it. Findings that touch
no labelled secret are counted as spurious. Also printed: recall per secret kind for the kinds
named "<rule>:<context>" (families and contexts that gen_corpus.py reports one by one), and false
positives per hard-negative kind for the "code-*" kinds (identifiers and placeholders in code).
"""
import json
import sys
from collections import defaultdict


def covered(ranges, s, e):
    need = s
    for a, b in ranges:  # sorted by start
        if a > need:
            break
        if b > need:
            need = b
        if need >= e:
            return True
    return need >= e


def overlaps(ranges, s, e):
    return any(a < e and b > s for a, b in ranges)


def score(labels, result):
    total = found = negs = fp = findings = spurious = 0
    missed = defaultdict(int)
    per_rule = defaultdict(lambda: [0, 0])
    per_kind = defaultdict(lambda: [0, 0])
    per_neg = defaultdict(lambda: [0, 0])
    for f in labels["files"]:
        rs = sorted((a, b) for a, b, *_ in result["files"].get(f["path"], []))
        findings += len(rs)
        for sec in f["secrets"]:
            total += 1
            ok = covered(rs, sec["start"], sec["end"])
            found += ok
            per_rule[sec["rule"]][0] += 1
            per_rule[sec["rule"]][1] += ok
            per_kind[sec.get("kind", sec["rule"])][0] += 1
            per_kind[sec.get("kind", sec["rule"])][1] += ok
            if not ok:
                missed[sec["rule"]] += 1
        for n in f["negatives"]:
            negs += 1
            hit = overlaps(rs, n["start"], n["end"])
            fp += hit
            per_neg[n["kind"]][0] += 1
            per_neg[n["kind"]][1] += hit
        for a, b in rs:
            if not any(s["start"] < b and s["end"] > a for s in f["secrets"]):
                spurious += 1
    return {
        "secrets": total, "found": found, "recall": found / total if total else 0,
        "negatives": negs, "false_positives": fp, "fp_rate": fp / negs if negs else 0,
        "findings": findings, "spurious_findings": spurious,
        "missed_by_rule": dict(sorted(missed.items(), key=lambda kv: -kv[1])),
        "recall_by_rule": {k: v[1] / v[0] for k, v in sorted(per_rule.items())},
        "recall_by_kind": {k: v[1] / v[0] for k, v in sorted(per_kind.items())},
        "count_by_kind": {k: v[0] for k, v in sorted(per_kind.items())},
        "fp_by_negative_kind": {k: [v[1], v[0]] for k, v in sorted(per_neg.items())},
    }


def main():
    corpus = sys.argv[1]
    labels = json.load(open(f"{corpus}/labels.json"))
    stats = json.load(open(f"{corpus}/stats.json"))
    rows = []
    for path in sys.argv[2:]:
        res = json.load(open(path))
        rows.append((res.get("tool", path), score(labels, res), res.get("throughput", {})))
    print(f"corpus: {len(labels['files'])} files, {rows[0][1]['secrets']} labelled secrets, "
          f"{rows[0][1]['negatives']} hard negatives")
    hdr = f"{'tool':45} {'recall':>7} {'FP rate':>8} {'spurious':>8} " + " ".join(
        f"{k + ' MB/s':>16}" for k in ("clean", "dense", "very-dense"))
    print(hdr)
    for tool, s, tp in rows:
        print(f"{tool:45} {s['recall']:7.4f} {s['fp_rate']:8.4%} {s['spurious_findings']:8d} " +
              " ".join(f"{tp.get(k, {}).get('mb_per_s', float('nan')):16.2f}" for k in ("clean", "dense", "very-dense")))
    for tool, _, tp in rows:
        w = tp.get("workloads")
        if w:
            print(f"{tool}: recorded agent tool output ({w['tool_results']} tool results, "
                  f"{w['bytes'] / w['rounds'] / 1e6:.2f} MB): {w['mb_per_s']:.2f} MB/s, "
                  f"{len(w['findings'])} findings (false positives)")
            for rule, snippet in w["findings"][:20]:
                print(f"    {rule}: {snippet!r}")
    if len(rows) >= 2:
        a, b = rows[0], rows[1]
        for k in ("clean", "dense", "very-dense"):
            x, y = a[2].get(k, {}).get("mb_per_s"), b[2].get(k, {}).get("mb_per_s")
            if x and y:
                print(f"throughput ratio {k:10} {a[0]} / {b[0]}: {x / y:.1f}x")
        x, y = a[2].get("workloads", {}).get("mb_per_s"), b[2].get("workloads", {}).get("mb_per_s")
        if x and y:
            print(f"throughput ratio {'workloads':10} {a[0]} / {b[0]}: {x / y:.1f}x")
        if b[1]["recall"]:
            print(f"recall ratio: {a[1]['recall'] / b[1]['recall']:.2f}x")
    kinds = [k for k in rows[0][1]["recall_by_kind"] if ":" in k]
    if kinds:
        print(f"\nrecall by kind ({', '.join(t for t, _, _ in rows)}):")
        for k in kinds:
            print(f"  {k:48} n={rows[0][1]['count_by_kind'][k]:<4} " +
                  " ".join(f"{s['recall_by_kind'].get(k, float('nan')):7.3f}" for _, s, _ in rows))
    negs = [k for k in rows[0][1]["fp_by_negative_kind"] if k.startswith("code-")]
    if negs:
        print(f"false positives by hard-negative kind ({', '.join(t for t, _, _ in rows)}):")
        for k in negs:
            print(f"  {k:48} n={rows[0][1]['fp_by_negative_kind'][k][1]:<4} " +
                  " ".join(f"{s['fp_by_negative_kind'].get(k, [0, 0])[0]:7d}" for _, s, _ in rows))
    print("density (secrets per MB): " + ", ".join(f"{k} {v['secrets_per_mb']:.0f}" for k, v in stats.items()))
    for tool, s, _ in rows:
        print(f"\n{tool}: missed by rule: {s['missed_by_rule']}")
    json.dump({t: s for t, s, _ in rows}, open(sys.argv[2] + ".score.json", "w"), indent=1)


if __name__ == "__main__":
    main()
