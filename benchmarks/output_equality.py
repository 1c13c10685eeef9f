"""Prove that two builds of eqrewrite write the same bytes: a manifest of every output.

For each tree given (e.g. the transformers 4.57.6 and 5.24.0 copies), in a fresh copy at a
fixed scratch path (so that the paths in the reports are the same from build to build):

* ``eqrewrite COPY --rules graphbreaks --out OUT --no-cache``: the sha256 of every file
  under ``OUT``, by relative path;
* ``eqrewrite audit COPY --format json`` (and with ``--scope traced``): the sha256 of the
  JSON document with its timing fields (``seconds``) removed, the only thing allowed to
  differ from run to run;
* the same rewrite again with the cache on, run twice (cold, then warm), and the warm
  run's ``--check`` report (files and edits): what a cached run answers must be what an
  uncached one writes.

Usage::

    python benchmarks/output_equality.py manifest --eqrewrite PATH/TO/eqrewrite \\
        --tree PATH/TO/transformers -o before.json
    python benchmarks/output_equality.py compare before.json after.json

``compare`` exits 1 and names the first differing entries when the manifests differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SCRATCH = Path(tempfile.gettempdir()) / "eqrewrite-equality"


def sha256(data: bytes) -> str:
    """The hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def tree_digests(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, by relative path (symlinks by their text)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(root))] = "link:" + str(path.readlink())
        elif path.is_file():
            found[str(path.relative_to(root))] = sha256(path.read_bytes())
    return found


def without_timings(value: Any) -> Any:
    """``value`` (a JSON document) without its ``seconds`` fields."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def fresh_copy(tree: Path, name: str) -> Path:
    """A pristine copy of ``tree`` at a fixed scratch path."""
    copy = SCRATCH / name / tree.name
    shutil.rmtree(SCRATCH / name, ignore_errors=True)
    shutil.copytree(tree, copy, symlinks=True)
    return copy


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run ``command`` and fail loudly on a crash (exit 0 and 1 are results)."""
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1, 123):
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done


def check_report(eqrewrite: str, copy: Path, cache: Path) -> str:
    """A digest of what a ``--check`` run reports: each file's status, edits and notes."""
    done = run([eqrewrite, str(copy), "--rules", "graphbreaks", "--check", "--format", "json",
                "--cache-dir", str(cache), "-q"])
    report = json.loads(done.stdout)
    files = sorted((f["path"], f["status"]) for f in report["files"])
    edits = sorted(json.dumps(e, sort_keys=True) for e in report["edits"])
    notes = sorted(json.dumps(n, sort_keys=True) for n in report.get("notes", []))
    return sha256(json.dumps([files, edits, notes]).encode())


def manifest_for(eqrewrite: str, tree: Path, index: int) -> dict[str, Any]:
    """Every digest for one tree."""
    copy = fresh_copy(tree, f"tree{index}")
    out = SCRATCH / f"tree{index}-out"
    shutil.rmtree(out, ignore_errors=True)
    run([eqrewrite, str(copy), "--rules", "graphbreaks", "--out", str(out), "--no-cache",
         "-q"])
    entry: dict[str, Any] = {"out": tree_digests(out)}
    for label, extra in (("audit", []), ("audit-traced", ["--scope", "traced"])):
        done = run([eqrewrite, "audit", str(copy), "--format", "json", "-q", *extra])
        document = without_timings(json.loads(done.stdout))
        entry[label] = sha256(json.dumps(document, sort_keys=True).encode())
    cache = SCRATCH / f"tree{index}-cache"
    shutil.rmtree(cache, ignore_errors=True)
    entry["check-cold"] = check_report(eqrewrite, copy, cache)
    entry["check-warm"] = check_report(eqrewrite, copy, cache)
    return entry


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The differences between two manifests, as lines (none: equal)."""
    problems = []
    for tree in sorted(set(before) | set(after)):
        old, new = before.get(tree, {}), after.get(tree, {})
        for key in sorted(set(old) | set(new)):
            if key == "out":
                paths = set(old.get("out", {})) | set(new.get("out", {}))
                differ = sorted(p for p in paths if old["out"].get(p) != new["out"].get(p))
                problems += [f"{tree}: out/{p} differs" for p in differ[:20]]
                if len(differ) > 20:
                    problems.append(f"{tree}: ... {len(differ) - 20} more output files")
            elif old.get(key) != new.get(key):
                problems.append(f"{tree}: {key} differs")
    return problems


def main() -> None:
    """Command line: ``manifest`` or ``compare``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("manifest")
    make.add_argument("--eqrewrite", default=shutil.which("eqrewrite"))
    make.add_argument("--tree", action="append", type=Path, required=True)
    make.add_argument("-o", "--output", type=Path, required=True)
    check = commands.add_parser("compare")
    check.add_argument("before", type=Path)
    check.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "manifest":
        manifest = {str(tree): manifest_for(args.eqrewrite, tree, index)
                    for index, tree in enumerate(args.tree)}
        args.output.write_text(json.dumps(manifest, indent=1, sort_keys=True))
        files = sum(len(entry["out"]) for entry in manifest.values())
        print(f"{files} output files over {len(manifest)} trees -> {args.output}")
        return
    problems = compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
    for line in problems:
        print(line)
    print("equal" if not problems else f"{len(problems)} differences")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
