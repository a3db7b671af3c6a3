#!/usr/bin/env python3
"""The gradient rules' coverage table: each operator of the rule table
(training/gradient_rules.cc, kRules), its formula and the finite-difference
cases of rule_cases_*.py whose model uses it (Debian's python3-onnx).

  /usr/bin/python3 tests/training/rule_coverage.py [--markdown]

Exits 1, naming them, when an operator of the table has no case: the table
and the cases are kept in step by the ctest `training_rule_coverage`.
--markdown prints the table (operator | formula | cases) for the docs.
"""
import glob
import importlib
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RULES = os.path.join(HERE, "..", "..", "training", "gradient_rules.cc")
sys.path.insert(0, HERE)
import rule_case  # noqa: E402

# {OpKind::kName, rules::Fn, slots, "formula"}, the formula possibly on the
# next line and split into adjacent string literals.
ENTRY = re.compile(r'\{OpKind::k(\w+),\s*rules::\w+,\s*[^"]*?((?:"[^"]*"\s*)+)\}', re.S)


def rule_table():
    text = open(RULES, encoding="utf-8").read()
    return [(op, "".join(re.findall(r'"([^"]*)"', formula))) for op, formula in ENTRY.findall(text)]


def cases_by_op():
    """op type -> names of the cases whose nodes use it (the harness's own
    loss nodes left out)."""
    by_op = {}
    for path in sorted(glob.glob(os.path.join(HERE, "rule_cases_*.py"))):
        module = importlib.import_module(os.path.basename(path)[:-3])
        for name, build in module.CASES:
            case = build(np.random.default_rng(rule_case.seed_of(name)))
            for op in sorted({n.op_type for n in case.nodes}):
                by_op.setdefault(op, []).append(name)
    return by_op


def main(argv):
    table = rule_table()
    by_op = cases_by_op()
    if "--markdown" in argv:
        print("| operator | formula | finite-difference cases |")
        print("|---|---|---|")
        for op, formula in table:
            print(f"| {op} | {formula} | {', '.join(by_op.get(op, [])) or '—'} |")
    uncovered = [op for op, _ in table if op not in by_op]
    print(f"{len(table)} operators with a gradient rule, {len(table) - len(uncovered)} with a finite-difference case",
          file=sys.stderr)
    if uncovered:
        print(f"rule_coverage: no finite-difference case uses {', '.join(uncovered)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
