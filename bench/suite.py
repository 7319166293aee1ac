"""The benchmark suite: run stages, re-measure missed floors, save and compare JSON.

A stage module exposes ``run(quick: bool, seed: int, data: BenchData) -> Report``.
"""
from __future__ import annotations

import importlib
import json
import time
from pathlib import Path
from typing import Iterable

from bench.floors import apply_floors, load_floors
from bench.machine import machine_info
from bench.timing import Ratio, Report

__all__ = ["STAGES", "run_suite", "report_to_json", "compare"]

#: stage group -> module under bench (each may report several stages)
STAGES = {
    "kernels": "kernels",
    "readers": "readers",
    "csv_shapes": "csv_shapes",
    "batches": "batches",
    "scale": "scale",
    "consumers": "consumers",
    "many_files": "many_files",
    "orders": "orders",
    "root_epoch": "root_epoch",
    "weaver_epoch": "weaver_epoch",
    "scoring": "scoring",
}

#: a stage whose ratio misses its floor is measured this many times in all (median reported)
ATTEMPTS = 3


def _run_group(name: str, quick: bool, seed: int, data) -> Report:
    module = importlib.import_module(f"bench.{STAGES[name]}")
    return module.run(quick=quick, seed=seed, data=data)


def _median_report(reports: list[Report]) -> Report:
    """One report of several runs of a group: each ratio and each time is the median run's.

    For a ratio, the :class:`Ratio` of the median value is kept (with its floor, waiver
    and advisory flag); with an even count, the lower middle (the worse one for a floor,
    ``kind="min"``; for a ceiling, the higher middle).
    """
    merged = Report()
    ratios: dict[tuple[str, str], list[Ratio]] = {}
    for report in reports:
        for r in report.ratios:
            ratios.setdefault((r.stage, r.name), []).append(r)
    for runs in ratios.values():
        runs.sort(key=lambda r: r.value if r.kind == "min" else -r.value)
        merged.ratios.append(runs[(len(runs) - 1) // 2])
    timings: dict[tuple[str, str], list[dict]] = {}
    for report in reports:
        for t in report.timings:
            timings.setdefault((t["stage"], t["name"]), []).append(t)
    for runs in timings.values():
        runs.sort(key=lambda t: t["seconds"])
        merged.timings.append(runs[(len(runs) - 1) // 2])
    return merged


def run_suite(groups: Iterable[str] | None = None, *, quick: bool = False, seed: int = 0,
              floors_path: str | Path | None = None, data=None, log=print) -> tuple[Report, dict]:
    """Run stage groups; return the merged report and run metadata.

    A group with a ratio below its floor is run again, ``ATTEMPTS`` times in all,
    and each ratio (and time) reports the median of those runs, never the best: on
    a shared noisy machine one bad median must not fail CI, while a real
    regression misses in most runs.
    """
    from bench.data import BenchData

    chosen = list(groups) if groups else list(STAGES)
    unknown = [g for g in chosen if g not in STAGES]
    if unknown:
        raise ValueError(f"unknown bench stage(s) {unknown}; choose from {sorted(STAGES)}")
    floors = load_floors(floors_path)
    data = data if data is not None else BenchData(quick=quick, seed=seed)
    merged = Report()
    meta = {"quick": quick, "seed": seed, "attempts": {}, "seconds": {}}
    for group in chosen:
        t0 = time.perf_counter()
        report = _run_group(group, quick, seed, data)
        apply_floors(report, floors)
        runs = [report]
        if report.failures():
            missed = ", ".join(r.describe() for r in report.failures())
            log(f"[{group}] below floor, measuring {ATTEMPTS} times in all (median): {missed}")
            while len(runs) < ATTEMPTS:
                again = _run_group(group, quick, seed, data)
                apply_floors(again, floors)
                runs.append(again)
            report = _median_report(runs)
        attempt = len(runs)
        meta["attempts"][group] = attempt
        meta["seconds"][group] = round(time.perf_counter() - t0, 1)
        merged.merge(report)
    return merged, meta


def report_to_json(report: Report, meta: dict) -> dict:
    """A JSON-ready dict: machine info, run metadata, timings and ratios."""
    return {
        "machine": machine_info(),
        "run": meta,
        "timings": report.timings,
        "ratios": [{"stage": r.stage, "name": r.name, "value": r.value, "floor": r.floor,
                    "kind": r.kind, "ok": r.ok, "meets": r.meets, "waived": r.waived,
                    "advisory": r.advisory} for r in report.ratios],
    }


def save_json(report: Report, meta: dict, path: str | Path) -> None:
    Path(path).write_text(json.dumps(report_to_json(report, meta), indent=2))


def compare(a_path: str | Path, b_path: str | Path) -> str:
    """A table of every ratio and median time in two ``--json`` results (B relative to A)."""
    a = json.loads(Path(a_path).read_text())
    b = json.loads(Path(b_path).read_text())
    lines = [f"A: {a_path} ({a['machine'].get('commit')}, {a['machine']['backend']}, "
             f"{a['machine']['cpu']})",
             f"B: {b_path} ({b['machine'].get('commit')}, {b['machine']['backend']}, "
             f"{b['machine']['cpu']})", "",
             f"{'stage':<10} {'ratio':<48} {'A':>9} {'B':>9} {'B/A':>7}"]
    b_ratios = {(r["stage"], r["name"]): r for r in b["ratios"]}
    for r in a["ratios"]:
        other = b_ratios.pop((r["stage"], r["name"]), None)
        bv = other["value"] if other else float("nan")
        lines.append(f"{r['stage']:<10} {r['name']:<48} {r['value']:>8.2f}x {bv:>8.2f}x "
                     f"{bv / r['value'] if r['value'] else float('nan'):>7.2f}")
    for (stage, name), r in b_ratios.items():
        lines.append(f"{stage:<10} {name:<48} {'-':>9} {r['value']:>8.2f}x {'':>7}")
    lines += ["", f"{'stage':<10} {'median time':<48} {'A':>9} {'B':>9} {'B/A':>7}"]
    b_times = {(t["stage"], t["name"]): t for t in b["timings"]}
    for t in a["timings"]:
        other = b_times.get((t["stage"], t["name"]))
        if other:
            lines.append(f"{t['stage']:<10} {t['name']:<48} {t['seconds'] * 1e3:>7.2f}ms "
                         f"{other['seconds'] * 1e3:>7.2f}ms {other['seconds'] / t['seconds']:>7.2f}")
    return "\n".join(lines)
