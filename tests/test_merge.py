"""The ledger merge: properties over generated ledgers (hypothesis), then real `git merge`s."""

from __future__ import annotations

import copy
import json
from typing import Any

from conftest import Repo
from hypothesis import given, settings
from hypothesis import strategies as st

from shiftgit.ledger.merge import merge_ledgers
from shiftgit.ledger.model import Contract, Ledger
from shiftgit.ledger.schema import schema_errors

Doc = dict[str, Any]
OID = "a" * 40
EFFECT_KEYS = ("deploy-1", "migrate-2", "notify-3")
EFFECT_STATES = ("planned", "attempted", "completed", "failed", "unknown", "compensated")
APPROVAL_STATES = ("requested", "granted", "denied", "expired")


# -- a small simulator of what shiftgit's commands do to a ledger -------------------------------

class Side:
    """Applies shiftgit-like edits to a ledger document, with ids unique to this side."""

    def __init__(self, doc: Doc, name: str, clock: int) -> None:
        self.doc = copy.deepcopy(doc)
        self.name = name
        self.clock = clock
        self.count = 0
        self.consumed: set[str] = set()

    def stamp(self) -> str:
        self.clock += 1
        return f"2024-05-01T{self.clock // 3600 % 24:02d}:{self.clock // 60 % 60:02d}:{self.clock % 60:02d}Z"

    def new_id(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}-{self.name}{self.count}"

    def apply(self, op: tuple[Any, ...]) -> None:
        getattr(self, op[0])(*op[1:])
        self.doc["updated_at"] = self.stamp()

    def constraint(self, text: str) -> None:
        self.doc["constraints"].append({"id": self.new_id("c"), "text": text, "status": "active",
                                        "added_at": self.stamp(), "lifted_at": None, "reason": None})

    def lift(self, index: int) -> None:
        active = [c for c in self.doc["constraints"] if c["status"] == "active"]
        if active:
            target = active[index % len(active)]
            target.update(status="lifted", lifted_at=self.stamp(), reason=f"lifted on {self.name}")

    def check(self, code: int) -> None:
        self.doc["pending_checks"].append({"id": self.new_id("k"), "name": "unit", "argv": ["pytest"],
                                           "started_at": self.stamp(), "exit_code": code, "failing": []})

    def checkpoint(self, step: str) -> None:
        previous = self.doc["checkpoint"]
        seq = previous["seq"] + 1 if previous else 1
        if previous:
            self.doc["history"].append({k: previous[k] for k in ("id", "seq", "at", "step", "base")})
        checks = self.doc["pending_checks"] or (previous["checks"] if previous else [])
        self.consumed |= {c["id"] for c in self.doc["pending_checks"]}
        self.doc["checkpoint"] = {"id": self.new_id(f"p{seq}"), "seq": seq, "at": self.stamp(), "step": step,
                                  "base": OID, "checks": checks}
        self.doc["pending_checks"] = []

    def effect(self, key: str, state: str) -> None:
        found = [e for e in self.doc["effects"] if e["key"] == key]
        at = self.stamp()
        if not found:
            self.doc["effects"].append({"key": key, "kind": "deploy", "reversibility": "reversible", "state": state,
                                        "created_at": at, "updated_at": at, "attempts": 1, "history": []})
        else:
            found[0]["history"].append({"at": at, "state": state, "by": self.name})
            found[0].update(state=state, updated_at=at)

    def approval(self, key: str, state: str) -> None:
        found = [a for a in self.doc["approvals"] if a["key"] == key]
        if not found:
            self.doc["approvals"].append({"key": key, "state": "requested", "requested_at": self.stamp()})
        else:
            found[0].update(state=state, decided_at=self.stamp(), by=self.name)

    def spend(self, tokens: int, cost: float) -> None:
        spend = self.doc["spend"]
        spend.update(tokens=spend["tokens"] + tokens, cost=round(spend["cost"] + cost, 6))

    def amend(self, value: str) -> None:  # each side owns one contract field: never a conflict
        field = "goal" if self.name == "o" else "stop_when"
        old = self.doc["contract"][field]
        self.doc["contract"][field] = value
        self.doc["amendments"].append({"id": self.new_id("a"), "at": self.stamp(), "field": field, "old": old,
                                       "new": value, "reason": "scope changed"})


def base_document() -> Doc:
    ledger = Ledger(run="demo", created_at="2024-05-01T00:00:00Z", updated_at="2024-05-01T00:00:00Z",
                    contract=Contract(goal="make calc correct", stop_when="tests pass"))
    side = Side(ledger.to_dict(), "b", 0)
    for op in (("constraint", "never edit tests/"), ("constraint", "python 3.11"), ("check", 1),
               ("checkpoint", "found the bug"), ("check", 0), ("effect", "deploy-1", "planned"),
               ("approval", "deploy-1", "requested"), ("spend", 100, 0.5)):
        side.apply(op)
    return side.doc


BASE = base_document()
WORDS = st.text(alphabet="abcdefgh ", min_size=1, max_size=12).map(lambda s: s.strip() or "x")
OPS = st.one_of(
    st.tuples(st.just("constraint"), WORDS),
    st.tuples(st.just("lift"), st.integers(0, 5)),
    st.tuples(st.just("check"), st.integers(0, 2)),
    st.tuples(st.just("checkpoint"), WORDS),
    st.tuples(st.just("effect"), st.sampled_from(EFFECT_KEYS), st.sampled_from(EFFECT_STATES)),
    st.tuples(st.just("approval"), st.sampled_from(EFFECT_KEYS), st.sampled_from(APPROVAL_STATES)),
    st.tuples(st.just("spend"), st.integers(0, 1000), st.floats(0, 5).map(lambda f: round(f, 3))),
    st.tuples(st.just("amend"), WORDS),
)


def edited(name: str, ops: list[tuple[Any, ...]], clock: int) -> Side:
    side = Side(BASE, name, 100 + clock)
    for op in ops:
        side.apply(op)
    assert schema_errors(side.doc) == []
    return side


EDITS = st.tuples(st.lists(OPS, max_size=12), st.integers(0, 5000), st.lists(OPS, max_size=12), st.integers(0, 5000))
SIDE_PAIRS = EDITS.map(lambda a: (edited("o", a[0], a[1]), edited("t", a[2], a[3])))
SIDES = SIDE_PAIRS.map(lambda pair: (pair[0].doc, pair[1].doc))


def ids(doc: Doc) -> set[str]:
    """Every identity a ledger holds: records, keys, checkpoints (current and summarised)."""
    found = {f"c:{c['id']}" for c in doc["constraints"]} | {f"a:{a['id']}" for a in doc["amendments"]}
    found |= {f"e:{e['key']}" for e in doc["effects"]} | {f"r:{a['key']}" for a in doc["approvals"]}
    found |= {f"p:{h['id']}" for h in doc["history"]}
    if doc["checkpoint"]:
        found.add(f"p:{doc['checkpoint']['id']}")
    return found


@settings(max_examples=150, deadline=None)
@given(SIDES)
def test_merge_is_order_independent_and_valid(sides: tuple[Doc, Doc]) -> None:
    ours, theirs = sides
    one = merge_ledgers(BASE, ours, theirs)
    other = merge_ledgers(BASE, theirs, ours)
    assert one.conflicts == () and other.conflicts == ()
    assert json.dumps(one.document, sort_keys=True) == json.dumps(other.document, sort_keys=True)
    assert schema_errors(one.document) == []


@settings(max_examples=100, deadline=None)
@given(SIDES)
def test_merge_with_itself_or_an_unchanged_side_is_that_side(sides: tuple[Doc, Doc]) -> None:
    ours, _ = sides
    assert merge_ledgers(BASE, ours, ours).document == ours
    assert merge_ledgers(BASE, ours, BASE).document == ours
    assert merge_ledgers(BASE, BASE, ours).document == ours
    assert merge_ledgers(None, ours, ours).document == ours


@settings(max_examples=150, deadline=None)
@given(SIDE_PAIRS)
def test_merge_loses_no_entry_and_resurrects_no_consumed_check(pair: tuple[Side, Side]) -> None:
    ours, theirs = sides = pair[0].doc, pair[1].doc
    merged = merge_ledgers(BASE, ours, theirs).document
    assert ids(ours) | ids(theirs) <= ids(merged)
    kept = {c["id"] for c in merged["pending_checks"]} | {c["id"] for c in merged["checkpoint"]["checks"]}
    for side, other in ((ours, theirs), (theirs, ours)):
        consumed_elsewhere = {c["id"] for c in BASE["pending_checks"]} - {c["id"] for c in other["pending_checks"]}
        assert {c["id"] for c in side["pending_checks"]} - consumed_elsewhere <= kept
    lifted = {c["id"] for d in sides for c in d["constraints"] if c["status"] == "lifted"}
    assert lifted <= {c["id"] for c in merged["constraints"] if c["status"] == "lifted"}
    assert not {c["id"] for c in merged["pending_checks"]} & (pair[0].consumed | pair[1].consumed)


@settings(max_examples=100, deadline=None)
@given(SIDES)
def test_spend_adds_both_sides_and_the_higher_checkpoint_wins(sides: tuple[Doc, Doc]) -> None:
    ours, theirs = sides
    merged = merge_ledgers(BASE, ours, theirs).document
    if ours["spend"] != theirs["spend"]:
        tokens = ours["spend"]["tokens"] + theirs["spend"]["tokens"] - BASE["spend"]["tokens"]
        assert merged["spend"]["tokens"] == tokens
    assert merged["checkpoint"]["seq"] == max(ours["checkpoint"]["seq"], theirs["checkpoint"]["seq"])
    assert [h["seq"] for h in merged["history"]] == sorted(h["seq"] for h in merged["history"])


def test_both_sides_changing_the_goal_is_a_conflict_that_keeps_ours() -> None:
    ours, theirs = Side(BASE, "o", 10), Side(BASE, "t", 10)
    ours.doc["contract"]["goal"] = "ship the API"
    theirs.doc["contract"]["goal"] = "ship the CLI"
    result = merge_ledgers(BASE, ours.doc, theirs.doc)
    assert [c.field for c in result.conflicts] == ["contract.goal"]
    assert result.document["contract"]["goal"] == "ship the API"
    line = result.conflicts[0].line(".shift/runs/demo/ledger.json")
    assert "ship the CLI" in line and "shiftgit amend --run demo --goal" in line and "--reason" in line


def test_effects_and_approvals_follow_the_documented_order() -> None:
    ours, theirs = Side(BASE, "o", 10), Side(BASE, "t", 10)
    ours.apply(("effect", "deploy-1", "unknown"))
    theirs.apply(("effect", "deploy-1", "completed"))
    ours.apply(("approval", "deploy-1", "granted"))
    theirs.apply(("approval", "deploy-1", "denied"))
    merged = merge_ledgers(BASE, ours.doc, theirs.doc).document
    effect = merged["effects"][0]
    assert effect["state"] == "completed"
    assert {h["by"] for h in effect["history"]} == {"o", "t"}
    assert merged["approvals"][0]["state"] == "denied"


def test_a_lift_is_final_and_a_text_change_is_a_conflict() -> None:
    ours, theirs = Side(BASE, "o", 10), Side(BASE, "t", 10)
    ours.apply(("lift", 0))
    theirs.doc["constraints"][1]["text"] = "python 3.12"
    result = merge_ledgers(BASE, ours.doc, theirs.doc)
    first, second = result.document["constraints"]
    assert first["status"] == "lifted" and first["reason"] == "lifted on o"
    assert second["text"] == "python 3.11"
    assert [c.field for c in result.conflicts] == [f"constraints[{second['id']}].text"]
    assert "shiftgit constraint lift" in result.conflicts[0].fix


# -- real git merges through the installed driver -------------------------------------------------

def test_init_registers_the_driver_idempotently(run_repo: Repo) -> None:
    driver = run_repo.git("config", "--local", "merge.shiftgit-ledger.driver").strip()
    assert driver.endswith("-m shiftgit merge-driver %O %A %B %P")
    run_repo.ok("init", "--hooks", "none")
    assert run_repo.git("config", "--local", "--get-all", "merge.shiftgit-ledger.driver").count("\n") == 1
    assert run_repo.git("check-attr", "merge", ".shift/runs/demo/ledger.json").strip().endswith("shiftgit-ledger")
    assert (run_repo.path / ".shift" / ".gitattributes").read_text().count("merge=shiftgit-ledger") == 1


def test_git_merge_of_two_branches_that_each_add_a_constraint(run_repo: Repo) -> None:
    run_repo.git("checkout", "-q", "-b", "left")
    run_repo.ok("constraint", "add", "left: keep the public API")
    run_repo.ok("checkpoint", "--step", "left step", "--tokens", "10")
    assert run_repo.commit("left").returncode == 0
    run_repo.git("checkout", "-q", "main")
    run_repo.ok("constraint", "add", "right: python 3.11 only")
    run_repo.ok("checkpoint", "--step", "right step", "--tokens", "5")
    assert run_repo.commit("right").returncode == 0
    proc = run_repo.run(["git", "merge", "-q", "--no-edit", "left"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = run_repo.git("show", "HEAD:.shift/runs/demo/ledger.json")
    assert "<<<<<<<" not in text and text == run_repo.ledger_path("demo").read_text()
    ledger = json.loads(text)
    assert schema_errors(ledger) == []
    texts = [c["text"] for c in ledger["constraints"]]
    assert sorted(texts) == sorted(["never edit tests/", "left: keep the public API", "right: python 3.11 only"])
    assert ledger["spend"]["tokens"] == 15
    steps = {ledger["checkpoint"]["step"], *(h["step"] for h in ledger["history"])}
    assert {"left step", "right step"} <= steps
    assert run_repo.json("show", "demo")["run"] == "demo"


def test_git_merge_conflict_names_the_field_and_leaves_valid_json(run_repo: Repo) -> None:
    run_repo.git("checkout", "-q", "-b", "left")
    run_repo.ok("amend", "--goal", "ship the CLI", "--reason", "left wants the CLI")
    assert run_repo.commit("left goal").returncode == 0
    run_repo.git("checkout", "-q", "main")
    run_repo.ok("amend", "--goal", "ship the API", "--reason", "main wants the API")
    assert run_repo.commit("main goal").returncode == 0
    proc = run_repo.run(["git", "merge", "--no-edit", "left"])
    assert proc.returncode != 0
    assert "contract.goal changed on both sides" in proc.stderr and "ship the CLI" in proc.stderr
    assert "shiftgit amend --run demo --goal" in proc.stderr
    ledger = run_repo.ledger("demo")  # valid JSON, our value, both amendments kept
    assert ledger["contract"]["goal"] == "ship the API" and len(ledger["amendments"]) == 2
    assert "ledger.json" in run_repo.git("diff", "--name-only", "--diff-filter=U")
    run_repo.ok("amend", "--goal", "ship both", "--reason", "settled the merge")
    run_repo.git("add", ".shift/runs/demo/ledger.json")
    assert run_repo.run(["git", "commit", "-q", "--no-edit"]).returncode == 0
    assert json.loads(run_repo.git("show", "HEAD:.shift/runs/demo/ledger.json"))["contract"]["goal"] == "ship both"


def test_driver_refuses_a_corrupt_side_and_leaves_ours_alone(run_repo: Repo) -> None:
    ours = run_repo.path / "ours.json"
    theirs = run_repo.path / "theirs.json"
    original = run_repo.ledger_path("demo").read_bytes()
    ours.write_bytes(original)
    theirs.write_text("{not json")
    proc = run_repo.sg("merge-driver", "/nonexistent", str(ours), str(theirs), ".shift/runs/demo/ledger.json")
    assert proc.returncode == 2 and "corrupt JSON" in proc.stderr and "Traceback" not in proc.stderr
    assert ours.read_bytes() == original
    theirs.write_bytes(original)
    proc = run_repo.sg("merge-driver", "/nonexistent", str(ours), str(theirs))
    assert proc.returncode == 0 and ours.read_bytes() == original
