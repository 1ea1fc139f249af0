"""Prints the capsule regression results of a sweep as a Markdown table.

Usage: python -m examples.results_table runs/results.jsonl
"""

import json
import sys

# Saul (Figure 5 and section 3.2): test error (%), multiclass d = 2.
PAPER_MULTICLASS_D2 = {"mnist": 6.21, "fashion_mnist": 15.14}


def read_results(path):
    """Reads concatenated JSON objects (one per run)."""
    text, decoder, results = open(path).read(), json.JSONDecoder(), []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            return results
        result, position = decoder.raw_decode(text, position)
        results.append(result)


def table(results):
    rows = {}
    for r in results:
        key = (r["dataset"], r["capsule_dim"])
        rows.setdefault(key, {})[r["architecture"]] = r
    lines = [
        "| dataset | d | multiclass | one-vs-all | all-vs-all | paper "
        "(multiclass) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (dataset, d), runs in sorted(rows.items()):
        cells = []
        for architecture in ("multiclass", "one_vs_all", "all_vs_all"):
            run = runs.get(architecture)
            cells.append(f"{100 * run['test_error']:.2f}" if run else "")
        paper = PAPER_MULTICLASS_D2.get(dataset) if d == 2 else None
        lines.append(
            f"| {dataset} | {d} | "
            + " | ".join(cells)
            + f" | {paper if paper else 'Fig. 5'} |"
        )
    return "\n".join(lines)


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    print(table(read_results(argv[1])))


if __name__ == "__main__":
    main(sys.argv)
