"""The judge ledger of a run: one request budget for every row and worker, and the judge's health.

A run builds a judge per row (:meth:`worldolympiad.track.EvalContext.judge`) and, with
``--workers N``, in N spawned processes, so a counter in memory would be a budget per row and
per process. The count therefore lives in the run directory::

    <run_dir>/judge_ledger.json    {"sent": 12, "ok": 11, "failed": 1, "refused": 0, ...}
    <run_dir>/judge_ledger.lock    held with an exclusive fcntl.flock around every read-modify-write

Why a counter file under ``flock`` (and not a ``multiprocessing`` counter): spawned workers
share no memory with the driver, a lock file needs nothing passed to them (they only know the
run directory), ``flock`` is released by the kernel when a worker is killed (a killed worker
never leaves the ledger locked), and the file survives the run, so ``summary.json`` and a
resumed run see the same numbers. A request is counted **before** it is sent
(:meth:`RunLedger.reserve`): ``budget=N`` never sends more than N requests in a run, whatever
the number of rows, workers and retries; a worker killed mid-request leaves that request
counted. A resumed run (same run directory) continues the same ledger; delete
``judge_ledger.json`` to start the count again. POSIX only (``fcntl``), like the evaluator's
run lock.

The ledger also records how requests ended (``ok``: the server answered; ``failed``: timeout,
connection error, HTTP error) and whether answers were usable (``usable`` / ``unusable`` after
JSON repair and schema checks). :func:`judge_run_summary` turns that into the ``judge`` entry
of ``summary.json`` and, when requests were sent and none was answered usably (the judge was
down, or answered nothing the schema accepts), into a run-level error (``run_errors``), which
the terminal prints and ``--strict`` turns into exit code 1.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from worldolympiad.judges import FAILURE_KINDS

LEDGER = "judge_ledger.json"
LOCK = "judge_ledger.lock"

# Flat integer counters (failures by kind as ``failed_<kind>``), so the ledgers of shards of one run
# merge by summing (worldolympiad.shards).
COUNTS = ("sent", "ok", "failed", "refused", "usable", "unusable", "prompt_tokens", "completion_tokens",
          "answered_samples", "independent_samples", *(f"failed_{k}" for k in FAILURE_KINDS))


class RunLedger:
    """The judge counters of one run directory, safe across threads and processes.

    Args:
        run_dir: the run directory (created if missing).
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LEDGER
        self.lock_path = self.run_dir / LOCK

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """The ledger's content under the lock; changes made to it are written back atomically."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = self._read_unlocked()
            before = dict(data)
            yield data
            if data != before:
                tmp = self.path.with_name(f"{LEDGER}.tmp{os.getpid()}")
                tmp.write_text(json.dumps(data, sort_keys=True))
                tmp.replace(self.path)
        finally:
            os.close(fd)  # releases the flock

    def _read_unlocked(self) -> dict[str, Any]:
        data: dict[str, Any] = dict.fromkeys(COUNTS, 0)
        try:
            stored = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return data  # missing, or torn by a crash between write and replace (never: replace is atomic)
        if isinstance(stored, dict):
            data.update({k: v for k, v in stored.items() if k not in COUNTS or isinstance(v, int)})
        return data

    def reserve(self, budget: int | None) -> bool:
        """Count one request about to be sent; ``False`` (and nothing sent) when ``budget`` is spent."""
        with self._locked() as d:
            d["budget"] = budget
            if budget is not None and d["sent"] >= budget:
                d["refused"] += 1
                return False
            d["sent"] += 1
            return True

    def record_request(self, ok: bool, error: str | None = None, *, kind: str | None = None,
                       tokens: tuple[int, int] = (0, 0)) -> None:
        """How a sent request ended: answered (``ok``, with its prompt and answer ``tokens``) or failed
        (``kind``: timeout, connection, http, context_length...; see :data:`~worldolympiad.judges.FAILURE_KINDS`)."""
        with self._locked() as d:
            d["ok" if ok else "failed"] += 1
            d["prompt_tokens"] += int(tokens[0])
            d["completion_tokens"] += int(tokens[1])
            if not ok:
                d[f"failed_{kind if kind in FAILURE_KINDS else 'error'}"] += 1
            if error:
                d["last_error"] = error[:300]

    def record_answer(self, usable: bool, problem: str | None = None) -> None:
        """Whether an answer survived JSON repair and the schema checks (and so may count as a vote)."""
        with self._locked() as d:
            d["usable" if usable else "unusable"] += 1
            if problem:
                d["last_problem"] = problem[:300]

    def record_votes(self, answered: int, independent: int) -> None:
        """One question's usable samples and how many of them were not copies of an earlier one."""
        with self._locked() as d:
            d["answered_samples"] += int(answered)
            d["independent_samples"] += int(independent)

    def read(self) -> dict[str, Any]:
        with self._locked() as d:
            return dict(d)


def failed_by_kind(ledger: dict[str, Any]) -> dict[str, int]:
    """``{"timeout": 3, "http": 1}`` from a ledger's ``failed_<kind>`` counters (kinds with none left out)."""
    return {k: int(ledger[f"failed_{k}"]) for k in FAILURE_KINDS if ledger.get(f"failed_{k}")}


def judge_run_summary(run_dir: str | Path) -> dict[str, Any]:
    """The ``judge`` entry of ``summary.json`` and, on an outage, a ``run_errors`` entry.

    Returns ``{}`` when the run made no judge request (no judge, or every answer cached).
    """
    if not (Path(run_dir) / LEDGER).is_file():
        return {}
    d = RunLedger(run_dir).read()
    outage = d["sent"] > 0 and d["usable"] == 0
    out: dict[str, Any] = {"judge": {**{k: d[k] for k in COUNTS}, "budget": d.get("budget"), "outage": outage,
                                     "failed_by_kind": failed_by_kind(d),
                                     "last_error": d.get("last_error"), "last_problem": d.get("last_problem")}}
    if outage:
        if d["ok"] == 0:
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(failed_by_kind(d).items()))
            why = (f"all {d['sent']} judge request(s) failed ({kinds or 'unknown'}; "
                   f"last error: {d.get('last_error') or 'unknown'})")
        else:
            why = (f"the judge answered {d['ok']} of {d['sent']} request(s) but gave no usable answer "
                   f"(last problem: {d.get('last_problem') or 'unknown'})")
        out["run_errors"] = [f"judge outage: {why}; every judge-based metric of this run is missing. "
                             "Fix the judge (--judge) and score again without reusing rows (--no-resume)"]
    copies = d["answered_samples"] - d["independent_samples"]
    if copies > 0:
        out["judge"]["identical_samples"] = copies
        out["judge_warnings"] = [
            f"{copies} of {d['answered_samples']} judge samples repeated an earlier sample of the same question word "
            "for word and counted as no vote: the server is not sampling. Votes are over "
            f"{d['independent_samples']} independent samples. Make it sample (docs/judges.md: transformers serve "
            "extra_body={\"generation_config\": \"{\\\"do_sample\\\": true}\"}; vLLM extra_body={\"top_k\": -1} "
            "or --generation-config vllm) or ask one sample (physics.judge_samples=1)"]
    return out
