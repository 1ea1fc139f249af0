"""Prints the capsule regression results of a sweep as a Markdown table.

Usage: python -m examples.results_table runs/results.jsonl
"""

import json
import sys

# Saul (Figure 5 and section 3.2): test error (%), multiclass d = 2.
PAPER_MULTICLASS_D2 = {"mnist": 6.21, "fashion_mnist": 15.14}


def read_results(path):
    """Reads concatenated JSON objects (one per run)."""
    with open(path) as file:
        text = file.read()
    decoder, results = json.JSONDecoder(), []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            return results
        result, position = decoder.raw_decode(text, position)
        results.append(result)


def cell(result):
    """`(capsule_dim, architecture, test error)` of one run's results:
    `examples/runs.py`'s schema, or the one the stored sweep was written
    in (`capsule_dim`, `architecture` and `test_error` at the top)."""
    if "evaluation" in result:
        settings = result["flags"]
        error = 1.0 - result["evaluation"]["test"]["accuracy"]
    else:
        settings, error = result, result["test_error"]
    return settings["capsule_dim"], settings["architecture"], error


def table(results):
    rows = {}
    for r in results:
        capsule_dim, architecture, error = cell(r)
        rows.setdefault((r["dataset"], capsule_dim), {})[architecture] = error
    lines = [
        "| dataset | d | multiclass | one-vs-all | all-vs-all | paper "
        "(multiclass) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (dataset, d), runs in sorted(rows.items()):
        cells = []
        for architecture in ("multiclass", "one_vs_all", "all_vs_all"):
            error = runs.get(architecture)
            cells.append("" if error is None else f"{100 * error:.2f}")
        paper = PAPER_MULTICLASS_D2.get(dataset) if d == 2 else None
        lines.append(
            f"| {dataset} | {d} | "
            + " | ".join(cells)
            + f" | {paper if paper else 'Fig. 5'} |"
        )
    return "\n".join(lines)


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        raise SystemExit(0 if argv[1:] in (["-h"], ["--help"]) else 2)
    print(table(read_results(argv[1])))


if __name__ == "__main__":
    main(sys.argv)
