"""Where one judge name holds the verdicts of several configurations, and how to say so.

A judge's configuration (its judge_key: model, server, template version, request parameters) is
its identity: a run with another server or another --max-tokens asks every item again, and each
answer it stores becomes the judge's verdict in force on its item. Until that run has answered
every item, the figures of the judge name mix two configurations' verdicts, item by item. The
report, the scores and trust put `MixedConfigurations.words()` beside such a judge, read from
the counts migration 0025 keeps (`Store.configuration_counts`).

Only the configurations of one task and language are compared: each task's template is part of
the configuration, so a row pooling several tasks holds several configurations by construction.

A run says so before the figures do: at its start, how many verdicts in force of its judge name
another configuration gave on the items it asks (`other_configurations`; `earlier_configuration`
says which: imported, another server, template, model or parameters), and at its end how many it
replaced (`replaced_words`); so does the import of a batch's results. A run of the judge name with
another configuration running at the same time (`runs_beside`) is warned about at the start, and
at the end the run says how many of its items hold that one's judgments instead (`beside_words`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from calibrate.model import ASKED_AGAIN, counted, judge_key
from calibrate.names import listing
from calibrate.store import Store

if TYPE_CHECKING:
    from calibrate.judge_runner import Job, JudgeConfig

KEEP_APART = ("a run with another server, model, template or request parameters (--max-tokens, --temperature, "
              "--param) is another configuration of the judge, whose verdicts replace the earlier ones item by "
              "item; give each its own --judge-name to report them apart")
"""What mixes configurations, and how to keep them apart."""

KEEP_BOTH = "To keep both as two judges, give the new configuration a name of its own (--judge-name NAME)."
"""What a run replacing another configuration's verdicts says to keep them apart."""


@dataclass(frozen=True)
class MixedConfigurations:
    """One judge's verdicts in force, in one row or cell, that come from several configurations:
    per task and language, the items each configuration gave (most first)."""

    judge: str
    items: dict[tuple[str, str], list[int]]

    def words(self) -> str:
        """The note: how many configurations, with how many items each, and what to do."""
        parts = [f"{len(n)} configurations ({' + '.join(map(str, n))} items)" for n in self.items.values()]
        if len(self.items) == 1:
            where = parts[0]
        else:
            where = "; ".join(f"{task} {lang}: {part}" for (task, lang), part in zip(self.items, parts, strict=True))
        return f"{self.judge}'s verdicts here come from {where}: {KEEP_APART}"

    def as_dict(self) -> list[dict]:
        return [{"task": task, "lang": lang, "items_per_configuration": n} for (task, lang), n in self.items.items()]


def mixed_configurations(judge: str, counts: Iterable[tuple[str, str, str, int]]) -> MixedConfigurations | None:
    """The configurations of `judge`'s verdicts, from `counts` (task, lang, configuration, n),
    where a task and language holds more than one; None where none does."""
    per: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for task, lang, configuration, n in counts:
        per[(task, lang)][configuration] += n
    mixed = {where: sorted((n for n in found.values() if n), reverse=True) for where, found in sorted(per.items())}
    mixed = {where: n for where, n in mixed.items() if len(n) > 1}
    return MixedConfigurations(judge, mixed) if mixed else None


def mixed_by_cell(counts: Iterable[tuple[str, str, str, str, str, int]], key_of: Callable[[str, str], Hashable], *,
                  by_system: bool) -> dict[tuple, MixedConfigurations]:
    """(cell key, judge, system or None) -> its mixed configurations, from the store's counts
    (task, lang, system, judge, configuration, n): `key_of` gives a task and language's cell;
    `by_system` keeps systems apart (else None stands for them all)."""
    grouped: dict[tuple, list[tuple[str, str, str, int]]] = defaultdict(list)
    for task, lang, system, judge, configuration, n in counts:
        grouped[(key_of(task, lang), judge, system if by_system else None)].append((task, lang, configuration, n))
    return {cell: found for cell, rows in grouped.items() if (found := mixed_configurations(cell[1], rows))}


def earlier_configuration(judge: str, earlier: tuple, *, model: str, template: tuple[str, str], params: dict,
                          server: str, servers: Iterable[str]) -> str:
    """What set apart the configuration `earlier` (judge_key, model, template id, template
    version, params) of a verdict in force of `judge` from the one asking now (`model`,
    `template` id and version, `params`, `server`), in words: "imported" (a configuration with
    no server: judgments run elsewhere), else "from" the server, model, template and parameters
    that differ. Judgments keep no server but in their key, so it is found among `servers`, those
    the judge's recorded runs asked."""
    key, old_model, template_id, template_version, old_params = earlier
    found = next((s for s in ("", *servers) if judge_key(judge, old_model, template_version, old_params, s) == key), None)
    if found == "":
        return "imported"
    parts = [f"model {old_model}"] if old_model != model else []
    if template_id != template[0]:
        parts.append(f"template {template_id}")
    elif template_version != template[1]:
        parts.append(f"an earlier version of template {template_id}")
    for name in sorted(set(old_params) | set(params)):
        value = old_params.get(name)
        if value != params.get(name):
            parts.append("another system prompt" if name == "system_prompt" else
                         f"{name} {'unset' if value is None else value}")
    if found is not None and found != server:
        parts.insert(0, f"server {found}")
    elif found is None and not parts:  # nothing else differs: the server does
        parts.append("another server")
    return "from " + ", ".join(parts)


def replacing_words(judge: str, replacing: dict[int, tuple[str, bool]], *, done: bool, kept: int = 0) -> str:
    """The note of a run whose judge name has judgments in force from other configurations on
    its items: `replacing` gives each item's (`earlier_configuration`, whether it is an error);
    before the run (not `done`) they are what its answers replace (a failed call replaces only
    an error), after it what they replaced, and `kept` the items where its call failed and left
    the other configuration's verdict in force (asked again by the next run)."""
    if done and not replacing:
        return (f"{counted(kept, 'failed call')} of this run left the verdict in force of {judge} from another "
                f"configuration (a failed call never replaces a verdict); {ASKED_AGAIN}")
    sources = Counter(source for source, _ in replacing.values())
    errors = sum(error for _, error in replacing.values())
    verdicts = len(replacing) - errors
    what = " and ".join(([counted(verdicts, "verdict")] if verdicts else [])
                        + ([f"{counted(errors, 'error')} (failed calls)"] if errors else []))
    where = "; ".join(f"{count} {source}" for source, count in sources.most_common())
    said = f"{what} in force of {judge} from another configuration ({where})"
    head = f"this run replaced {said}" if done else f"this run replaces {said}, each as it answers its item"
    if kept:
        head += (f"; {counted(kept, 'failed call')} left the verdict in force of the other configuration (a failed call "
                 f"never replaces a verdict); {ASKED_AGAIN}")
    return f"{head}; the earlier judgments stay in the history but no longer count. {KEEP_BOTH}"


def other_configurations(store: Store, jobs: list[Job], config: JudgeConfig) -> dict[int, tuple[str, bool]]:
    """item id -> what set apart (`earlier_configuration`) the other configuration whose judgment
    in force of `config.name` is on that item of the jobs, and whether it is an error: what the
    run replaces on each item it answers, or, asked after it, what it left in force."""
    asked = {job.item.id: job for job in jobs}
    servers = store.judge_servers(config.name)
    earlier = {item_id: found for item_id, found in store.configurations_in_force(config.name, asked).items()
               if found[0] != asked[item_id].key}
    status = store.verdicts_in_force_of((item_id, config.name) for item_id in earlier)
    return {
        item_id: (earlier_configuration(config.name, found, model=config.model, params=config.params(),
                                        server=config.server, servers=servers,
                                        template=(asked[item_id].template.id, asked[item_id].template.version)),
                  status.get((item_id, config.name), ("",))[0] == "error")
        for item_id, found in earlier.items()
    }


def replaced_words(store: Store, jobs: list[Job], config: JudgeConfig, replacing: dict[int, tuple[str, bool]],
                   stored: Collection[int]) -> str | None:
    """After a run of `config` over `jobs` (or the import of its batch's results) that stored
    judgments of the items `stored`: what it replaced (`replacing_words`) of `replacing`, what
    `other_configurations` gave before it, and on how many of its items a failed call left a
    verdict of theirs in force; None where it replaced nothing and left nothing so."""
    now = other_configurations(store, jobs, config) if replacing else {}
    replaced = {item_id: found for item_id, found in replacing.items() if item_id in stored and item_id not in now}
    kept = sum(item_id in stored and not replacing[item_id][1] and not error
               for item_id, (_, error) in now.items() if item_id in replacing)
    if not replaced and not kept:
        return None
    return replacing_words(config.name, replaced, done=True, kept=kept)


def runs_beside(store: Store, config: JudgeConfig, since: str | None = None) -> list[dict]:
    """The recorded runs of `config.name` with another configuration (model, server or request
    parameters) running now, or, with `since` (an ISO time), running at any time after it."""
    mine = (config.model, config.server, config.params())
    return [run for run in store.judge_runs() if run["judge_name"] == config.name
            and (run["model"], run["server"], run["params"]) != mine
            and (run["outcome"] == "running" or since is not None and run["outcome"] not in (None, "died")
                 and (run["finished_at"] or "") >= since)]


def beside_words(store: Store, jobs: list[Job], config: JudgeConfig, runs: list[dict], stored: Collection[int]) -> str:
    """The note of a run that ran beside `runs` of its judge name with another configuration:
    how many of the items it `stored` now hold that configuration's judgment in force instead,
    whether one of them still runs (and goes on replacing); this run's answers replaced any it
    stored before them, which no count here holds."""
    ids = listing([str(run["id"]) for run in runs], 5)
    taken = len(other_configurations(store, [job for job in jobs if job.item.id in stored], config))
    running = any(run["outcome"] == "running" for run in runs)
    judged = counted(len(stored), "item")
    now = (f"{taken} of the {judged} this run judged now hold its judgment in force instead of this run's" if taken
           else f"none of the {judged} this run judged holds its judgment in force now")
    said = (f"{'run' if len(runs) == 1 else 'runs'} {ids} of {config.name}, another configuration, ran beside this one: "
            f"{now}, and this run's answers replaced any it had stored before them (not counted above)")
    if running:
        said += "; it is still running, and replaces this run's verdicts as it answers their items"
    if taken or running:
        said += f": {config.name}'s verdicts mix both"
    return f"{said}. {KEEP_BOTH}"
