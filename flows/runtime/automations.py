"""`dojoflow server setup`: install deployments/automations.yaml (and the webhook block it
notifies through) on a Prefect server, all or nothing (docs/operations.md).

The file is Prefect's automation schema with names where Prefect wants ids: a
`send-notification` action's block (`notify:` or the action's `block:`, as
`<block type slug>/<name>`) and a `run-deployment` action's `deployment: <flow>/<deployment>`.
Everything is checked before anything is written: the YAML, every name on the server, every
template (Prefect's own `AutomationCore` validation), and that the webhook answers a TCP
connection. Then the block is saved, the automations are created, and only then are older
automations of the same names deleted; a failure on the way deletes what this call created.

Plain REST for the reads (Prefect 3.8.8's client sends null filters some fastapi releases
reject); Prefect's models for validation, Prefect's block API to save the block.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

from storage.errors import DojoflowError, InputError

CONNECT_TIMEOUT_S = 5.0
DEFAULT_FILE = Path(__file__).resolve().parents[2] / "deployments" / "automations.yaml"
WEBHOOK_SLUG = "custom-webhook"


@dataclass
class Plan:
    """What setup will write: the block to save (if a webhook URL was given) and the automations."""

    api: str
    block: tuple[str, str]  # (block type slug, name) every notification without its own block goes to
    webhook: str | None  # the URL to save in the block; None: the block exists and is kept as is
    automations: list[dict] = field(default_factory=list)  # checked by AutomationCore; block ids filled in after saving
    notify_actions: list = field(default_factory=list)  # (automation index, action index, block) to fill in


def load(path: Path) -> dict:
    """The automation file: a mapping with `automations` (a list) and optionally `notify`."""
    import yaml

    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as e:
        raise InputError(
            path, f"cannot be read ({e.strerror})", "give an automation file such as deployments/automations.yaml"
        ) from None
    except yaml.YAMLError as e:
        raise InputError(path, f"is not valid YAML ({str(e).splitlines()[0]})", "fix the YAML") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("automations"), list) or not doc["automations"]:
        raise InputError(path, "has no `automations:` list", "see deployments/automations.yaml for the shape")
    return doc


def _block_ref(text, path: Path, where: str) -> tuple[str, str]:
    if not isinstance(text, str) or text.count("/") != 1 or not all(text.split("/")):
        raise InputError(
            path,
            f"names the block {text!r}",
            "write `<block type slug>/<block name>`, e.g. custom-webhook/dojoflow-alerts",
            where,
        )
    slug, name = text.split("/")
    return slug, name


def plan(path: Path, api: str, webhook: str | None) -> Plan:
    """Check the file against the server at `api`; raise InputError naming the first problem.
    The YAML and every name on the server are checked first, then every automation by Prefect's
    own validation, then the webhook's TCP connection: a missing deployment or block is said
    without importing Prefect (~1.5 s of CPU per call)."""
    import httpx

    doc = load(path)
    block = _block_ref(doc.get("notify", f"{WEBHOOK_SLUG}/dojoflow-alerts"), path, "notify")
    out = Plan(api=api, block=block, webhook=webhook)
    wheres = []
    with httpx.Client(base_url=api, timeout=30) as http:
        for i, raw in enumerate(doc["automations"]):
            where = f"automations[{i}]" + (f" ({raw.get('name')})" if isinstance(raw, dict) else "")
            if not isinstance(raw, dict):
                raise InputError(path, "is not a mapping", "give name, trigger and actions", where)
            raw = {**raw, "actions": [dict(a) for a in raw.get("actions") or []]}
            for j, action in enumerate(raw["actions"]):
                if "deployment" in action:
                    action["deployment_id"] = _deployment_id(
                        http, action.pop("deployment"), path, f"{where}.actions[{j}]"
                    )
                if action.get("type") == "send-notification" and "block_document_id" not in action:
                    ref = _block_ref(action.pop("block", "/".join(block)), path, f"{where}.actions[{j}].block")
                    out.notify_actions.append((i, j, ref))
                    action["block_document_id"] = "00000000-0000-0000-0000-000000000000"  # filled in after saving
            out.automations.append(raw)
            wheres.append(where)
        for _, _, ref in out.notify_actions:
            if ref != block or webhook is None:
                _check_block(http, ref, path)
    _validate(out.automations, wheres, path)
    if webhook is not None:
        check_reachable(webhook, "--webhook")
    else:
        for ref in {ref for _, _, ref in out.notify_actions}:
            url = _block_url(api, ref)
            if url:
                check_reachable(url, f"block {'/'.join(ref)}")
    return out


def _validate(automations: list[dict], wheres: list[str], path: Path) -> None:
    """Every field and template of every automation, as the server checks them (Prefect's AutomationCore)."""
    from prefect.events.schemas.automations import AutomationCore
    from pydantic import ValidationError

    for raw, where in zip(automations, wheres):
        try:
            AutomationCore.model_validate(raw)
        except ValidationError as e:
            first = e.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            raise InputError(
                path, f"{loc}: {first['msg']}", "fix it (Prefect's automation schema, docs/operations.md)", where
            ) from None


def _deployment_id(http, name, path: Path, where: str) -> str:
    if not isinstance(name, str) or name.count("/") != 1:
        raise InputError(path, f"names the deployment {name!r}", "write `<flow>/<deployment>`, e.g. prove/sorry", where)
    flow, dep = name.split("/")
    r = _existing(
        http,
        f"/deployments/name/{quote(flow, safe='')}/{quote(dep, safe='')}",
        path,
        f"runs the deployment {name!r}",
        "deploy it first (`prefect --no-prompt deploy --all` from the project root) or fix the name",
        where,
    )
    return r.json()["id"]


def _check_block(http, ref: tuple[str, str], path: Path) -> None:
    _existing(
        http,
        f"/block_types/slug/{quote(ref[0], safe='')}/block_documents/name/{quote(ref[1], safe='')}",
        path,
        f"notifies through the block {'/'.join(ref)}",
        "create it in the UI (Blocks) or pass --webhook URL to create custom-webhook/<name>",
    )


def _existing(http, route: str, path: Path, problem: str, fix: str, where: str | None = None):
    """The server's answer at `route`; an InputError (`problem`, "which does not exist", `fix`)
    where it answers 404, and httpx's error for any other failure."""
    r = http.get(route)
    if r.status_code == 404:
        raise InputError(path, f"{problem}, which does not exist on {http.base_url}", fix, where)
    r.raise_for_status()
    return r


def _block_url(api: str, ref: tuple[str, str]) -> str | None:
    """The URL a webhook block posts to (None for other notification blocks: nothing to check)."""
    import httpx

    r = httpx.get(f"{api}/block_types/slug/{ref[0]}/block_documents/name/{ref[1]}", timeout=30)
    url = r.json().get("data", {}).get("url") if r.status_code == 200 else None
    return url if isinstance(url, str) and url.startswith(("http://", "https://")) else None


def check_reachable(url: str, what: str) -> None:
    """A TCP connection to the webhook's host and port (no request: nothing is posted)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(
            what, f"{url!r} is not an http(s) URL", "give the webhook's URL, e.g. https://hooks.example.org/x"
        )
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as e:
        raise InputError(
            what, f"the webhook {parts.hostname}:{port} is unreachable ({e.strerror or e})", "start it or fix the URL"
        ) from None


def install(p: Plan) -> list[str]:
    """Save the block, create the automations, then delete older ones of the same names; the
    names installed. A failure deletes what this call created and leaves the rest as it was."""
    import httpx
    from prefect.blocks.notifications import CustomWebhookNotificationBlock
    from prefect.events.schemas.automations import AutomationCore
    from prefect.settings import PREFECT_API_URL, temporary_settings

    created: list[str] = []
    with httpx.Client(base_url=p.api, timeout=30) as http:
        old = {a["name"]: _automation_ids(http, a["name"]) for a in p.automations}
        block_ids: dict[tuple[str, str], str] = {}
        try:
            if p.webhook is not None:
                with temporary_settings({PREFECT_API_URL: p.api}):
                    block = CustomWebhookNotificationBlock(
                        name=p.block[1],
                        url=p.webhook,
                        json_data={"subject": "{{subject}}", "body": "{{body}}", "name": "{{name}}"},
                    )
                    block_ids[p.block] = str(block.save(p.block[1], overwrite=True))
            for i, j, ref in p.notify_actions:
                if ref not in block_ids:
                    r = http.get(f"/block_types/slug/{ref[0]}/block_documents/name/{ref[1]}").raise_for_status()
                    block_ids[ref] = r.json()["id"]
                p.automations[i]["actions"][j]["block_document_id"] = block_ids[ref]
            for a in p.automations:
                body = AutomationCore.model_validate(a).model_dump(mode="json")
                r = _retrying(http, "POST", "/automations/", json=body).raise_for_status()
                created.append(r.json()["id"])
        except Exception as e:
            for ident in created:
                _delete(http, ident)
            raise DojoflowError(
                f"installing the automations on {p.api} failed ({type(e).__name__}: {e}); nothing was installed"
            ) from e
        try:
            for ids in old.values():
                for ident in ids:
                    _delete(http, ident)
        except Exception as e:
            raise DojoflowError(
                f"the new automations are installed on {p.api}, but deleting the older ones failed "
                f"({type(e).__name__}: {e}); run `dojoflow server setup` again to remove them"
            ) from e
    return [a["name"] for a in p.automations]


RETRYABLE = {429, 503}  # Prefect's server answers 503 while SQLite is locked (SQLITE_LOCKED_MSG in its api/server.py)
RETRIES = 8


def _retrying(http, method: str, url: str, **kwargs):
    """One request, repeated while the server says to try again (a busy SQLite database): an
    automation delete dropped on a 503 left a doubled automation behind."""
    import time

    for attempt in range(RETRIES):
        r = http.request(method, url, **kwargs)
        if r.status_code not in RETRYABLE or attempt == RETRIES - 1:
            return r
        time.sleep(min(0.25 * 2**attempt, 4.0))
    return r


def _delete(http, ident: str) -> None:
    r = _retrying(http, "DELETE", f"/automations/{ident}")
    if r.status_code != 404:  # already gone is what we wanted
        r.raise_for_status()


def _automation_ids(http, name: str) -> list[str]:
    r = _retrying(http, "POST", "/automations/filter", json={"automations": {"name": {"any_": [name]}}})
    r.raise_for_status()
    return [a["id"] for a in r.json()]
