"""Write the bundled VAKRA environment's agent inputs from its ground truth (run after editing the latter).

For each `bundled/data/<capability>/groundtruth/<domain>.json`, writes `.../input/<domain>.json` in VAKRA's
agent-input layout: every turn's query, the answers of the turns before the last, the tool-use policy.
"""

from __future__ import annotations

import json
from pathlib import Path

from runner.benchmarks.vakra.dialogues import answer_text

DATA = Path(__file__).resolve().parent.parent / "runner" / "benchmarks" / "vakra" / "bundled" / "data"


def agent_input(dialogue: dict) -> dict:
    turns = dialogue["output"]
    asked = [{"turn_id": t["turn_id"], "query": t["query"]} for t in turns]
    for out, turn in zip(asked[:-1], turns[:-1], strict=True):
        out["answer"] = answer_text(turn.get("answer"))
    return {"uuid": dialogue["uuid"], "domain": dialogue["domain"], "num_turns": len(turns),
            "dialogue": {"turns": asked}, "additional_instructions": dialogue.get("additional_instructions", "")}


def main() -> None:
    for gt in sorted(DATA.glob("*/groundtruth/*.json")):
        target = gt.parent.parent / "input" / gt.name
        target.parent.mkdir(exist_ok=True)
        items = [agent_input(d) for d in json.loads(gt.read_text(encoding="utf-8"))]
        target.write_text(json.dumps(items, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{target.relative_to(DATA)}: {len(items)} dialogues")


if __name__ == "__main__":
    main()
