"""Findings of cache misses: a compile whose graph missed a warm cache that held the same
graph, with the cache key components that differ; and, between two runs (`tcview diff`), the
misses of run B whose graph run A cached under another key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tcview.analysis.finding import Finding, compile_cost_s, frame_name, frame_subject, frame_where
from tcview.analysis.rules import DOCS, Kind, Severity
from tcview.model.objects import Compile, Model, Record

# A cache key component (``[hash] inductor_config[fallback_random]: True``); the value runs
# to the end of the item (a graph's code spans lines).
_COMPONENT = re.compile(r"^\[(?P<hash>[^\]]*)\] (?P<name>[^:]+):(?P<value>.*)$", re.S)
VALUE_LIMIT = 2_000  # characters of a component's value shown (its first line)


def key_entries(rec: Record) -> dict[str, tuple[str, str]]:
    """{component: (hash, value)} of a ``fx_graph_cache_*`` / ``aotautograd_cache_*``
    artifact's cache key (its ``components`` list: ``[hash] name: value``); empty when its key
    lists no components (AOTAutograd's, in torch 2.13)."""
    try:
        value = json.loads(rec.payload())
    except ValueError:
        return {}
    comps = value.get("components") if isinstance(value, dict) else None
    out: dict[str, tuple[str, str]] = {}
    for item in comps if isinstance(comps, list) else []:
        m = _COMPONENT.match(str(item))
        if m is not None:
            out[m.group("name").strip()] = (m.group("hash"), m.group("value").strip())
    return out


def shown_value(value: str) -> str:
    """A component's value as a report shows it: its first line, cut at `VALUE_LIMIT`."""
    return value.strip().split("\n", 1)[0][:VALUE_LIMIT]


def cache_components(rec: Record, memo: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
    """{component: hash} of a cache artifact's key (`key_entries`). `memo`: keys already
    parsed, by the payload's md5 (a warm cache's hits log the same key again and again)."""
    if memo is not None and rec.md5:
        known = memo.get(rec.md5)
        if known is not None:
            return known
    out = {name: entry[0] for name, entry in key_entries(rec).items()}
    if memo is not None and rec.md5:
        memo[rec.md5] = out
    return out


def changed_components(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The cache key components whose value differs between two keys (or that only one has)."""
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def _nearest(miss: dict[str, str], others: list[dict[str, str]]) -> dict[str, str] | None:
    """The key among `others` (distinct keys) that shares the most components with `miss`."""
    if not others:
        return None
    best, best_n = None, -1
    mine = set(miss.items())
    for other in others:
        same = len(mine.intersection(other.items()))
        if same > best_n:
            best, best_n = other, same
            if same == len(mine):
                break
    return best


def cache_miss_findings(model: Model) -> list[Finding]:
    """Compiles whose graph missed a cache that held the same graph (its ``gm`` component)
    from another compile of the same process, one finding each, with the key components that
    differ from that entry's key. A miss that differs only in its inputs (a new shape) needs
    an entry of its own and is none; so is a graph the cache never saw (a cold cache)."""
    results: dict[tuple[int, str], set[str]] = {}
    for event in model.cache_events:
        if event.compile is not None:
            results.setdefault((id(event.compile.file), event.cache), set()).add(event.result)
    warm = {k for k, seen in results.items() if {"hit", "miss"} <= seen}
    events = [  # only caches that both hit and missed in one process: their keys are read
        e
        for e in model.cache_events
        if e.compile is not None and (id(e.compile.file), e.cache) in warm
    ]
    memo: dict[str, dict[str, str]] = {}
    hits: dict[tuple[int, str, str], list[dict[str, str]]] = {}
    hit_ids: dict[int, str] = {}  # id of a hit's key -> its (first) compile
    for event in events:
        if event.result == "hit" and event.compile is not None:
            key = cache_components(event.record, memo)
            if GRAPH_COMPONENT in key and id(key) not in hit_ids:  # each distinct key once
                where = (id(event.compile.file), event.cache, key[GRAPH_COMPONENT])
                hits.setdefault(where, []).append(key)
                hit_ids[id(key)] = event.compile.id_label
    missed: dict[int, tuple[Compile, list[str], list[str]]] = {}
    against: dict[int, str] = {}  # a missed compile -> the compile whose entry it missed
    # A key and its hits -> the nearest hit and what differs (a key read again is the same
    # object: `memo`).
    compared: dict[tuple[int, int], tuple[dict[str, str] | None, list[str]]] = {}
    for event in events:
        comp = event.compile
        if event.result != "miss" or comp is None:
            continue
        entry = missed.setdefault(id(comp), (comp, [], []))
        if event.cache not in entry[1]:
            entry[1].append(event.cache)
        key = cache_components(event.record, memo)
        same = hits.get((id(comp.file), event.cache, key.get(GRAPH_COMPONENT, "")), [])
        known = compared.get((id(key), id(same)))
        if known is None:
            near = _nearest(key, same)
            known = compared[id(key), id(same)] = (
                near,
                changed_components(near, key) if near is not None else [],
            )
        near, changed = known
        if near is not None:
            entry[2].extend(c for c in changed if c not in entry[2])
            against.setdefault(id(comp), hit_ids[id(near)])
    return [
        _cache_miss(comp, sorted(caches), changed, against[id(comp)])
        for comp, caches, changed in missed.values()
        if any(_avoidable(c) for c in changed)  # else another graph or other inputs: by design
    ]


def _cache_miss(comp: Compile, caches: list[str], changed: list[str], hit: str) -> Finding:
    what = ", ".join(changed[:6]) + (" …" if len(changed) > 6 else "")
    return Finding(
        Kind.CACHE_MISS,
        Severity.WARNING,
        f"Cache miss on a warm cache at {comp.id_label} ({', '.join(caches)}): {what} changed",
        f"The cache held this graph: {hit} hit it, yet {comp.id_label} missed "
        f"({' and '.join(caches)}) and compiled from scratch; its cache key differs "
        f"from {hit}'s in {what}.",
        {"caches": caches, "compile": comp.id_label, "hit": hit, "changed_components": changed},
        frame_where(comp.frame),
        compile_cost_s(comp),
        cache_fix(changed),
        DOCS["cache"],
        [comp],
        subject=f"{frame_subject(comp.frame)}:{'+'.join(sorted(changed))}",
    )


def _avoidable(component: str) -> bool:
    """A key component that differs by a choice (config, versions), not by what is compiled
    (the graph, its inputs' shapes and dtypes)."""
    return component != GRAPH_COMPONENT and not component.startswith("example_inputs")


def cache_fix(changed: Sequence[str]) -> str:
    """What to do about a cache key whose `changed` components differ."""
    configs = [c for c in changed if c.startswith(("inductor_config[", "fx_kwargs["))]
    if configs:
        return (
            f"Set {', '.join(configs[:3])} the same way wherever this graph compiles (a config "
            "patched for one call gets its own cache entry)."
        )
    if any(c.startswith("example_inputs") for c in changed):
        return (
            "The inputs' shapes, strides or dtypes differ: feed the same ones to share the entry."
        )
    if any(
        c in ("torch_version", "system_info[hash]") or c.startswith("system_info") for c in changed
    ):
        return "Entries from another torch version or machine are not reused: warm the cache again."
    return (
        "Keep what changed the same between compiles (config, inputs, torch version) so the "
        "cached entry is reused."
    )


GRAPH_COMPONENT = "gm"  # the component that holds the graph's code


@dataclass
class CacheKeyChange:
    """A graph that run A had a cache entry for and run B missed: the key components that
    differ (`tcview diff`)."""

    cache: str
    a_compile: str
    b_compile: str
    frame: str
    changed: list[str]
    # Each changed component's hash in A and in B (None: that key has no such component).
    values: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    # ... and its value as the key lists it (its first line: `shown_value`).
    texts: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "cache": self.cache,
            "a_compile": self.a_compile,
            "b_compile": self.b_compile,
            "frame": self.frame,
            "changed_components": self.changed,
            "components": [
                {
                    "name": name,
                    "a": self.texts.get(name, (None, None))[0],
                    "b": self.texts.get(name, (None, None))[1],
                    "a_hash": self.values.get(name, (None, None))[0],
                    "b_hash": self.values.get(name, (None, None))[1],
                }
                for name in self.changed
            ],
        }


def _text(entries: dict[str, tuple[str, str]], name: str) -> str | None:
    entry = entries.get(name)
    return shown_value(entry[1]) if entry is not None else None


def cache_key_changes(a: Model, b: Model) -> list[CacheKeyChange]:
    """Each miss of run B whose graph (the ``gm`` component) run A also cached under another
    key, with the key components that differ: against A's compile of the same id when it has
    one, else against A's nearest key. A miss whose key A had as it is says nothing here (B's
    cache was cold)."""
    seen: dict[tuple[str, str], list[tuple[str, dict[str, str]]]] = {}
    texts: dict[int, dict[str, tuple[str, str]]] = {}  # by id of a key: its entries
    for event in a.cache_events:
        listed = key_entries(event.record)
        key = {name: entry[0] for name, entry in listed.items()}
        texts[id(key)] = listed
        if GRAPH_COMPONENT in key and event.compile is not None:
            seen.setdefault((event.cache, key[GRAPH_COMPONENT]), []).append(
                (event.compile.id_label, key)
            )
    out = []
    for event in b.cache_events:
        comp = event.compile
        if event.result != "miss" or comp is None:
            continue
        mine = key_entries(event.record)
        key = {name: entry[0] for name, entry in mine.items()}
        entries = seen.get((event.cache, key.get(GRAPH_COMPONENT, "")), [])
        if not entries or any(k == key for _id, k in entries):
            continue
        same_id = [e for e in entries if e[0] == comp.id_label]
        if same_id:
            a_id, a_key = same_id[0]
        else:
            a_key = _nearest(key, [k for _id, k in entries]) or entries[0][1]
            a_id = next(i for i, k in entries if k is a_key)
        changed = changed_components(a_key, key)
        out.append(
            CacheKeyChange(
                event.cache,
                a_id,
                comp.id_label,
                frame_name(comp.frame),
                changed,
                {name: (a_key.get(name), key.get(name)) for name in changed},
                {name: (_text(texts[id(a_key)], name), _text(mine, name)) for name in changed},
            )
        )
    return out
