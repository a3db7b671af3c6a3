#!/usr/bin/env python3
"""Writes the gradient rules' finite-difference cases (Debian's python3-onnx).

  /usr/bin/python3 tests/training/make_rule_cases.py OUT_DIR [NAME_FILTER]

Each case is a small model whose float operands are initializers (the
trained weights) and whose output `loss` is sum(Y * R), R a fixed random
Constant of Y's shape, so every element of every gradient matters. A case
folder holds model.onnx, weights/<name>.pb (the initial values, to feed
when perturbing) and case.json (dtype and tolerance). The cases themselves
are listed by operator family in rule_cases_*.py beside this file: each
module has CASES, a list of (name, build) where build(rng) returns
rule_case.Case. gradient_rules.test.mjs checks them in ONNX Runtime.
"""
import glob
import importlib
import json
import os
import sys

import numpy as np
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rule_case  # noqa: E402


def main():
    out_dir = sys.argv[1]
    name_filter = sys.argv[2] if len(sys.argv) > 2 else ""
    os.makedirs(out_dir, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    count = 0
    for path in sorted(glob.glob(os.path.join(here, "rule_cases_*.py"))):
        module = importlib.import_module(os.path.basename(path)[:-3])
        for name, build in module.CASES:
            if name_filter not in name:
                continue
            rng = np.random.default_rng(rule_case.seed_of(name))
            case = build(rng)
            folder = os.path.join(out_dir, name)
            os.makedirs(os.path.join(folder, "weights"), exist_ok=True)
            model = case.model(name)
            with open(os.path.join(folder, "model.onnx"), "wb") as f:
                f.write(model.SerializeToString())
            for wname, value in case.weights.items():
                tensor = numpy_helper.from_array(value, wname)
                with open(os.path.join(folder, "weights", rule_case.file_name(wname) + ".pb"), "wb") as f:
                    f.write(tensor.SerializeToString())
            with open(os.path.join(folder, "case.json"), "w") as f:
                json.dump(case.meta(name), f, indent=1)
            count += 1
    print(f"wrote {count} cases to {out_dir}")


if __name__ == "__main__":
    main()
