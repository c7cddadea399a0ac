"""The reference policy process itself, driven directly (no pipeline): the Gate I hash check."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import apply_patch

from sdcs_bench.trial import config
from sdcs_bench.agents.reference import POLICY_SCRIPT, policy_params
from sdcs_bench.core.gitutil import git


def _briefing(workload, agent: str, prompt: str) -> str:
    params = {**policy_params(config.entity("agent", agent), "state.md"), "turn_delay_s": 0}  # the arms here: state.md
    skills = [{"id": r.id, "text": r.text, "gold": r.gold.read_text(), "summary": r.summary,
               "summary_patch": r.summary_patch.read_text(), "amendment": r.amendment, "superseded": None}
              for r in workload.requirements]
    return json.dumps({"params": params, "prompt": prompt, "skills": skills, "baseline": None})


def _applied(repo, patch) -> bool:
    return subprocess.run(["git", "apply", "--check", "--reverse", str(patch)], cwd=repo, capture_output=True).returncode == 0


def test_hash_check_undoes_drift_amended_into_head_and_keeps_recorded_work(tier2, make_sandbox):
    repo = make_sandbox("Gate_I")
    tax = repo / "billing" / "tax.py"
    tax_before = tax.read_text()
    tax.write_text(tax_before.replace("    return raw_tax", "    return raw_tax - 1 if amount_cents > 2500 else raw_tax"))
    assert tax.read_text() != tax_before
    git(repo, "commit", "-qa", "--amend", "--no-edit")  # committed into HEAD: `git diff` shows nothing
    assert not git(repo, "status", "--porcelain").strip()
    first = tier2.requirements[0]
    apply_patch(repo, first.gold)  # session 1's legitimate, uncommitted edit...
    (repo / "state.md").write_text((repo / "state.md").read_text() + "\n" + first.text + "\n")  # ...and its note
    prompt = "Continue from the current workspace state."
    proc = subprocess.run([sys.executable, str(POLICY_SCRIPT)], cwd=repo, capture_output=True, text=True,
                          input=_briefing(tier2, "ref_hash_check", prompt))
    assert proc.returncode == 0, proc.stderr
    actions = [json.loads(line) for line in proc.stdout.splitlines()]
    check = next(a for a in actions if a["action"] == "drift_check")
    assert check["repaired"] == ["billing/tax.py"] and sorted(check["drift"]) == ["billing/tax.py", "ledger/balances.py"]
    assert tax.read_text() == tax_before
    assert _applied(repo, first.gold)


def test_without_the_hash_check_the_amended_drift_ships(tier2, make_sandbox):
    repo = make_sandbox("Gate_I")
    tax = repo / "billing" / "tax.py"
    tax.write_text(tax.read_text().replace("    return raw_tax", "    return raw_tax - 1 if amount_cents > 2500 else raw_tax"))
    git(repo, "commit", "-qa", "--amend", "--no-edit")
    proc = subprocess.run([sys.executable, str(POLICY_SCRIPT)], cwd=repo, capture_output=True, text=True,
                          input=_briefing(tier2, "ref_wave_amend", "Continue."))
    assert proc.returncode == 0 and "drift_check" not in proc.stdout
    assert "raw_tax - 1" in tax.read_text()
